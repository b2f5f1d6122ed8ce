#include "nn/functions/softmax.h"

#include "autograd/function_hook.h"
#include "autograd/function_node.h"
#include "core/ops/ops.h"
#include "nn/autocast.h"

namespace chainer::functions {

namespace {
class SoftmaxNode : public FunctionNode {
 public:
  SoftmaxNode(Tensor y, int64_t axis, bool log) : y_(std::move(y)), axis_(axis), log_(log) {}
  std::string name() const override { return log_ ? "LogSoftmax" : "Softmax"; }
  std::vector<Tensor> backward(const std::vector<Tensor>& gy) override {
    return {log_ ? ops::log_softmax_grad(y_, gy[0], axis_) : ops::softmax_grad(y_, gy[0], axis_)};
  }

 protected:
  void release_saved() override { y_ = Tensor(); }

 private:
  Tensor y_;
  int64_t axis_;
  bool log_;
};

Variable apply(const Variable& x_in, int64_t axis, bool log) {
  // Mixed precision: a function of the full-precision list (nn/autocast.h).
  const Variable x = autocast::for_float32(x_in);
  ForwardHooks hooks(log ? "LogSoftmax" : "Softmax", x);
  Tensor y = log ? ops::log_softmax(x.data(), axis) : ops::softmax(x.data(), axis);
  if (!needs_recording({x})) return Variable(std::move(y));
  return record(std::make_shared<SoftmaxNode>(y, axis, log), {x}, {y})[0];
}
}  // namespace

Variable softmax(const Variable& x, int64_t axis) { return apply(x, axis, false); }
Variable log_softmax(const Variable& x, int64_t axis) { return apply(x, axis, true); }

}  // namespace chainer::functions
