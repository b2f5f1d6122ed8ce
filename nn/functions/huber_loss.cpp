#include "nn/functions/huber_loss.h"

#include <cmath>

#include "autograd/function_hook.h"
#include "autograd/function_node.h"
#include "core/ops/ops.h"
#include "nn/autocast.h"

namespace chainer::functions {

namespace {
// Saves the difference x - t; the output gradient is spread back over axis 1 when summed.
class HuberLossNode : public FunctionNode {
 public:
  HuberLossNode(Tensor diff, double delta, bool summed) : diff_(std::move(diff)), delta_(delta), summed_(summed) {}
  std::string name() const override { return "HuberLoss"; }
  std::vector<Tensor> backward(const std::vector<Tensor>& grads) override {
    Tensor gy = grads[0];
    if (summed_) {
      Shape kept = diff_.shape();
      kept[1] = 1;
      gy = gy.reshape(kept);  // broadcast along axis 1 by the product
    }
    Tensor gx = ops::mul(ops::clip(diff_, -delta_, delta_), gy);
    Tensor gt = input_requires_grad(1) ? ops::neg(gx) : Tensor();
    return {input_requires_grad(0) ? gx : Tensor(), gt};
  }

 protected:
  void release_saved() override { diff_ = Tensor(); }

 private:
  Tensor diff_;
  double delta_;
  bool summed_;
};
}  // namespace

Variable huber_loss(const Variable& x_in, const Variable& t_in, double delta, const std::string& reduce) {
  // Mixed precision: a function of the full-precision list (nn/autocast.h).
  const Variable x = autocast::for_float32(x_in), t = autocast::for_float32(t_in);
  ForwardHooks hooks("HuberLoss", x, t);
  const bool summed = reduce == "sum_along_second_axis";
  if (!summed && reduce != "no")
    throw Error(str("huber_loss: reduce must be \"sum_along_second_axis\" or \"no\", got \"", reduce, "\""));
  if (!x.defined() || !t.defined()) throw Error("huber_loss: x and t must be defined");
  if (!(delta > 0) || std::isinf(delta)) throw Error(str("huber_loss: delta must be positive and finite, got ", delta));
  if (!is_floating(x.dtype()))
    throw Error(str("huber_loss: dtype ", dtype_name(x.dtype()), " is not supported (expected float32 or float64)"));
  if (x.dtype() != t.dtype())
    throw Error(str("huber_loss: x has dtype ", dtype_name(x.dtype()), " but t has dtype ", dtype_name(t.dtype())));
  if (x.shape() != t.shape())
    throw Error(str("huber_loss: x has shape ", shape_str(x.shape()), " but t has shape ", shape_str(t.shape()),
                    " (they must be equal)"));
  if (summed && x.ndim() < 2)
    throw Error(str("huber_loss: reduce \"sum_along_second_axis\" needs x with at least 2 dimensions, got shape ",
                    shape_str(x.shape())));
  // Chainer's formula: 0.5 * min(d^2, max(2 delta |d| - delta^2, delta^2)), which is 0.5 d^2
  // for |d| <= delta and delta (|d| - delta / 2) beyond.
  Tensor diff = ops::sub(x.data(), t.data());
  const Tensor ad = ops::abs(diff);
  const Tensor linear = ops::maximum(ops::add_scalar(ops::mul_scalar(ad, 2 * delta), -delta * delta),
                                     Tensor::full({}, delta * delta, x.dtype(), x.data().device()));
  Tensor y = ops::mul_scalar(ops::minimum(ops::square(ad), linear), 0.5);
  if (summed) y = ops::sum(y, {1});
  if (!needs_recording({x, t})) return Variable(std::move(y));
  return record(std::make_shared<HuberLossNode>(diff, delta, summed), {x, t}, {y})[0];
}

}  // namespace chainer::functions
