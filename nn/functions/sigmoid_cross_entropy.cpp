#include "nn/functions/sigmoid_cross_entropy.h"

#include <algorithm>

#include "autograd/function_hook.h"
#include "autograd/function_node.h"
#include "core/ops/ops.h"
#include "nn/autocast.h"

namespace chainer::functions {

namespace {
// COUNT (one element of x's dtype, on x's device) divides the mean; undefined for "no".
class SigmoidCrossEntropyNode : public FunctionNode {
 public:
  SigmoidCrossEntropyNode(Tensor x, Tensor t, Tensor count)
      : x_(std::move(x)), t_(std::move(t)), count_(std::move(count)) {}
  std::string name() const override { return "SigmoidCrossEntropy"; }
  std::vector<Tensor> backward(const std::vector<Tensor>& gy) override {
    const Tensor g = count_.defined() ? ops::div(gy[0], count_) : gy[0];  // one element: no host read
    return {ops::sigmoid_cross_entropy_grad(x_, t_, g), Tensor()};
  }

 protected:
  void release_saved() override { x_ = t_ = count_ = Tensor(); }

 private:
  Tensor x_, t_, count_;
};
}  // namespace

Variable sigmoid_cross_entropy(const Variable& x_in, const Variable& t, bool normalize, const std::string& reduce) {
  // Mixed precision: a function of the full-precision list (nn/autocast.h).
  const Variable x = autocast::for_float32(x_in);
  ForwardHooks hooks("SigmoidCrossEntropy", x, t);
  if (reduce != "mean" && reduce != "no")
    throw Error(str("sigmoid_cross_entropy: reduce must be \"mean\" or \"no\", got \"", reduce, "\""));
  if (!x.defined() || !t.defined()) throw Error("sigmoid_cross_entropy: x and t must be defined");
  const Tensor& xd = x.data();
  Tensor loss = ops::sigmoid_cross_entropy(xd, t.data());  // checks dtypes and shapes
  Tensor count;
  if (reduce == "mean") {
    if (normalize) {
      // The labels other than -1, counted on the device (at least 1).
      const Tensor valid = ops::not_equal(t.data(), Tensor::full({}, -1, DType::Int32, xd.device()));
      count = ops::maximum(ops::sum(valid.astype(xd.dtype())), Tensor::ones({}, xd.dtype(), xd.device()));
    } else {
      count = Tensor::full({}, double(std::max<int64_t>(1, xd.ndim() == 0 ? 1 : xd.size(0))), xd.dtype(), xd.device());
    }
    loss = ops::div(ops::sum(loss), count);
  }
  if (!needs_recording({x})) return Variable(std::move(loss));
  return record(std::make_shared<SigmoidCrossEntropyNode>(xd, t.data(), count), {x, t}, {loss})[0];
}

}  // namespace chainer::functions
