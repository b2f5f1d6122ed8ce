#include "nn/functions/mean_squared_error.h"

#include <algorithm>

#include "autograd/function_hook.h"
#include "autograd/function_node.h"
#include "core/ops/ops.h"
#include "nn/autocast.h"

namespace chainer::functions {

namespace {
class MeanSquaredErrorNode : public FunctionNode {
 public:
  explicit MeanSquaredErrorNode(Tensor diff) : diff_(std::move(diff)) {}
  std::string name() const override { return "MeanSquaredError"; }
  std::vector<Tensor> backward(const std::vector<Tensor>& gy) override {
    // d/dx0 = 2 (x0 - x1) gy / n, and the opposite for x1 (gy stays where it is: no host read).
    Tensor g0 = ops::mul(diff_, ops::mul_scalar(gy[0], 2.0 / double(std::max<int64_t>(diff_.numel(), 1))));
    Tensor g1 = input_requires_grad(1) ? ops::neg(g0) : Tensor();
    return {input_requires_grad(0) ? g0 : Tensor(), g1};
  }

 protected:
  void release_saved() override { diff_ = Tensor(); }

 private:
  Tensor diff_;
};
}  // namespace

Variable mean_squared_error(const Variable& x0_in, const Variable& x1_in) {
  // Mixed precision: a function of the full-precision list (nn/autocast.h).
  const Variable x0 = autocast::for_float32(x0_in), x1 = autocast::for_float32(x1_in);
  ForwardHooks hooks("MeanSquaredError", x0, x1);
  if (!x0.defined() || !x1.defined()) throw Error("mean_squared_error: x0 and x1 must be defined");
  if (x0.shape() != x1.shape())
    throw Error(str("mean_squared_error: x0 has shape ", shape_str(x0.shape()), " but x1 has shape ",
                    shape_str(x1.shape()), " (they must be equal)"));
  if (x0.dtype() != x1.dtype())
    throw Error(str("mean_squared_error: x0 has dtype ", dtype_name(x0.dtype()), " but x1 has dtype ",
                    dtype_name(x1.dtype())));
  Tensor diff = ops::sub(x0.data(), x1.data());
  Tensor y = ops::sum(ops::square(diff));
  ops::scale_(y, 1.0 / double(std::max<int64_t>(diff.numel(), 1)));
  if (!needs_recording({x0, x1})) return Variable(std::move(y));
  return record(std::make_shared<MeanSquaredErrorNode>(diff), {x0, x1}, {y})[0];
}

}  // namespace chainer::functions
