#include "nn/functions/where.h"

#include "autograd/function_hook.h"
#include "autograd/function_node.h"
#include "core/ops/ops.h"

namespace chainer::functions {

namespace {
// The gradient goes to x where the condition holds and to y elsewhere, summed back over the
// axes each was broadcast along.
class WhereNode : public FunctionNode {
 public:
  WhereNode(Tensor condition, Shape x_shape, Shape y_shape)
      : condition_(std::move(condition)), x_shape_(std::move(x_shape)), y_shape_(std::move(y_shape)) {}
  std::string name() const override { return "Where"; }
  std::vector<Tensor> backward(const std::vector<Tensor>& grads) override {
    const Tensor& g = grads[0];
    const Tensor zero = Tensor::zeros({}, g.dtype(), g.device());
    std::vector<Tensor> out(2);
    if (input_requires_grad(0)) out[0] = ops::sum_to(ops::where(condition_, g, zero), x_shape_);
    if (input_requires_grad(1)) out[1] = ops::sum_to(ops::where(condition_, zero, g), y_shape_);
    return out;
  }

 protected:
  void release_saved() override { condition_ = Tensor(); }

 private:
  Tensor condition_;
  Shape x_shape_, y_shape_;
};
}  // namespace

Variable where(const Variable& condition, const Variable& x, const Variable& y) {
  ForwardHooks hooks("Where", condition, x, y);
  if (!condition.defined() || !x.defined() || !y.defined())
    throw Error("where: condition, x and y must be defined");
  Tensor out = ops::where(condition.data(), x.data(), y.data());
  if (!needs_recording({x, y})) return Variable(std::move(out));
  return record(std::make_shared<WhereNode>(condition.data(), x.shape(), y.shape()), {x, y}, {out})[0];
}

}  // namespace chainer::functions
