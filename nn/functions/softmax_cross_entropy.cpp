#include "nn/functions/softmax_cross_entropy.h"

#include <algorithm>

#include "autograd/function_node.h"
#include "core/ops.h"

namespace chainer::functions {

namespace {
class SoftmaxCrossEntropyNode : public FunctionNode {
 public:
  // SCALE is 1/count for a mean and 1 for per-example losses.
  SoftmaxCrossEntropyNode(Tensor x, Tensor t, Tensor lse, double scale, int64_t ignore_label)
      : x_(std::move(x)), t_(std::move(t)), lse_(std::move(lse)), scale_(scale), ignore_label_(ignore_label) {}
  std::string name() const override { return "SoftmaxCrossEntropy"; }
  std::vector<Tensor> backward(const std::vector<Tensor>& gy) override {
    return {ops::softmax_cross_entropy_grad(x_, t_, lse_, gy[0], scale_, ignore_label_), Tensor()};
  }

 protected:
  void release_saved() override { x_ = t_ = lse_ = Tensor(); }

 private:
  Tensor x_, t_, lse_;
  double scale_;
  int64_t ignore_label_;
};
}  // namespace

Variable softmax_cross_entropy(const Variable& x, const Variable& t, bool normalize, int64_t ignore_label,
                               const std::string& reduce) {
  if (reduce != "mean" && reduce != "no")
    throw Error(str("softmax_cross_entropy: reduce must be \"mean\" or \"no\", got \"", reduce, "\""));
  if (!x.defined() || !t.defined()) throw Error("softmax_cross_entropy: x and t must be defined");
  ops::CrossEntropyResult r = ops::softmax_cross_entropy(x.data(), t.data(), ignore_label);
  Tensor y;
  double scale = 1.0;
  if (reduce == "mean") {
    // Chainer divides by the non-ignored count (at least 1) when normalizing, else by N.
    scale = 1.0 / double(std::max<int64_t>(normalize ? r.count : x.data().size(0), 1));
    y = ops::sum(r.loss);
    ops::scale_(y, scale);
  } else {
    y = r.loss;
  }
  if (!needs_recording({x})) return Variable(std::move(y));
  auto node = std::make_shared<SoftmaxCrossEntropyNode>(x.data(), t.data(), r.lse, scale, ignore_label);
  return record(node, {x, t}, {y})[0];
}

}  // namespace chainer::functions
