#include "nn/functions/local_response_normalization.h"

#include "autograd/function_hook.h"
#include "autograd/function_node.h"
#include "core/ops/ops.h"
#include "nn/autocast.h"
#include "nn/functions/cast.h"

namespace chainer::functions {

namespace {
class LocalResponseNormalizationNode : public FunctionNode {
 public:
  LocalResponseNormalizationNode(Tensor x, Tensor y, Tensor unit_scale, int64_t n, double alpha, double beta)
      : x_(std::move(x)), y_(std::move(y)), unit_scale_(std::move(unit_scale)), n_(n), alpha_(alpha), beta_(beta) {}
  std::string name() const override { return "LocalResponseNormalization"; }
  std::vector<Tensor> backward(const std::vector<Tensor>& gy) override {
    return {ops::local_response_normalization_grad(x_, y_, unit_scale_, gy[0], n_, alpha_, beta_)};
  }

 protected:
  void release_saved() override { x_ = y_ = unit_scale_ = Tensor(); }

 private:
  Tensor x_, y_, unit_scale_;
  int64_t n_;
  double alpha_, beta_;
};
}  // namespace

namespace {
Variable local_response_normalization_full(const Variable& x, int64_t n, double k, double alpha, double beta) {
  ForwardHooks hooks("LocalResponseNormalization", x);
  if (!x.defined()) throw Error("local_response_normalization: x must be defined");
  ops::LocalResponseNormalizationResult r = ops::local_response_normalization(x.data(), n, k, alpha, beta);
  if (!needs_recording({x})) return Variable(std::move(r.y));
  auto node = std::make_shared<LocalResponseNormalizationNode>(x.data(), r.y, std::move(r.unit_scale), n, alpha, beta);
  return record(node, {x}, {r.y})[0];
}

}  // namespace

// Mixed precision: a function of the full-precision list (nn/autocast.h) that returns x's dtype.
Variable local_response_normalization(const Variable& x, int64_t n, double k, double alpha, double beta) {
  if (!x.defined() || !is_half(x.dtype())) return local_response_normalization_full(x, n, k, alpha, beta);
  return cast(local_response_normalization_full(autocast::for_float32(x), n, k, alpha, beta), x.dtype());
}

}  // namespace chainer::functions
