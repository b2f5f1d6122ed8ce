#include "nn/functions/softmax_cross_entropy.h"

#include "autograd/function_hook.h"
#include "autograd/function_node.h"
#include "core/ops/ops.h"
#include "nn/autocast.h"

namespace chainer::functions {

namespace {
class SoftmaxCrossEntropyNode : public FunctionNode {
 public:
  // SCALE (one float64, on x's device) is 1/count or 1/N for a mean and 1 for per-example losses.
  SoftmaxCrossEntropyNode(Tensor x, Tensor t, Tensor lse, Tensor scale, int64_t ignore_label)
      : x_(std::move(x)), t_(std::move(t)), lse_(std::move(lse)), scale_(scale), ignore_label_(ignore_label) {}
  std::string name() const override { return "SoftmaxCrossEntropy"; }
  std::vector<Tensor> backward(const std::vector<Tensor>& gy) override {
    return {ops::softmax_cross_entropy_grad(x_, t_, lse_, gy[0], scale_, ignore_label_), Tensor()};
  }

 protected:
  void release_saved() override { x_ = t_ = lse_ = scale_ = Tensor(); }

 private:
  Tensor x_, t_, lse_, scale_;
  int64_t ignore_label_;
};
}  // namespace

Variable softmax_cross_entropy(const Variable& x_in, const Variable& t, bool normalize, int64_t ignore_label,
                               const std::string& reduce) {
  // Mixed precision: a function of the full-precision list (nn/autocast.h).
  const Variable x = autocast::for_float32(x_in);
  ForwardHooks hooks("SoftmaxCrossEntropy", x, t);
  if (reduce != "mean" && reduce != "no")
    throw Error(str("softmax_cross_entropy: reduce must be \"mean\" or \"no\", got \"", reduce, "\""));
  if (!x.defined() || !t.defined()) throw Error("softmax_cross_entropy: x and t must be defined");
  // Chainer divides by the non-ignored count (at least 1) when normalizing, else by N; the
  // kernel counts on the device, so the mean needs no host read.
  const LossReduction reduction = reduce == "no" ? LossReduction::None
                                  : normalize    ? LossReduction::MeanOverValid
                                                 : LossReduction::MeanOverBatch;
  ops::CrossEntropyResult r = ops::softmax_cross_entropy(x.data(), t.data(), ignore_label, reduction);
  if (!needs_recording({x})) return Variable(std::move(r.loss));
  auto node = std::make_shared<SoftmaxCrossEntropyNode>(x.data(), t.data(), r.lse, r.scale, ignore_label);
  return record(node, {x, t}, {r.loss})[0];
}

}  // namespace chainer::functions
