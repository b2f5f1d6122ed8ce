#include "nn/functions/linear.h"

#include "autograd/function_hook.h"
#include "autograd/function_node.h"
#include "core/ops/ops.h"
#include "nn/autocast.h"

namespace chainer::functions {

namespace {
class LinearNode : public FunctionNode {
 public:
  // Y is kept only for the fused ReLU (its mask); X is the flattened 2-D input.
  LinearNode(Tensor x, Shape x_shape, Tensor W, bool has_bias, Tensor y)
      : x_(std::move(x)), x_shape_(std::move(x_shape)), W_(std::move(W)), has_bias_(has_bias), y_(std::move(y)) {}
  std::string name() const override { return y_.defined() ? "LinearReLU" : "Linear"; }

  std::vector<Tensor> backward(const std::vector<Tensor>& grads) override {
    const Tensor gy = y_.defined() ? ops::relu_grad(y_, grads[0]) : grads[0];
    std::vector<Tensor> g(has_bias_ ? 3 : 2);
    // The first layer's input is data: skipping its gradient saves the largest GEMM of backward.
    if (input_requires_grad(0)) g[0] = ops::matmul(gy, W_).reshape(x_shape_);
    if (input_requires_grad(1)) g[1] = ops::matmul(gy, x_, true, false);
    if (has_bias_ && input_requires_grad(2)) g[2] = ops::sum(gy, {0});
    return g;
  }

 protected:
  void release_saved() override { x_ = W_ = y_ = Tensor(); }

 private:
  Tensor x_;
  Shape x_shape_;
  Tensor W_;
  bool has_bias_;
  Tensor y_;
};

Variable apply(const Variable& x_in, const Variable& W_in, const Variable& b_in, bool relu) {
  // Mixed precision: a function of the half list (nn/autocast.h).
  const Variable x = autocast::for_half(x_in), W = autocast::for_half(W_in), b = autocast::for_half(b_in);
  ForwardHooks hooks(relu ? "LinearReLU" : "Linear", x, W, b);
  const char* op = relu ? "linear_relu" : "linear";
  if (!x.defined() || !W.defined()) throw Error(str(op, ": x and W must be defined"));
  const Tensor& xd = x.data();
  const Tensor& Wd = W.data();
  if (Wd.ndim() != 2) throw Error(str(op, ": W must be 2-D (out, in), got shape ", shape_str(Wd.shape())));
  if (xd.ndim() < 2)
    throw Error(str(op, ": x must have a batch axis and features, got shape ", shape_str(xd.shape())));
  if (xd.dtype() != Wd.dtype())
    throw Error(str(op, ": x has dtype ", dtype_name(xd.dtype()), " but W has dtype ", dtype_name(Wd.dtype())));
  const int64_t n = xd.size(0);
  int64_t in = 1;
  for (int64_t d = 1; d < xd.ndim(); ++d) in *= xd.size(d);
  if (in != Wd.size(1))
    throw Error(str(op, ": x has shape ", shape_str(xd.shape()), " but W expects ", Wd.size(1), " inputs (W has shape ",
                    shape_str(Wd.shape()), ")"));
  if (b.defined()) {
    if (b.dtype() != Wd.dtype())
      throw Error(str(op, ": b has dtype ", dtype_name(b.dtype()), " but W has dtype ", dtype_name(Wd.dtype())));
    if (b.shape() != Shape{Wd.size(0)})
      throw Error(str(op, ": b has shape ", shape_str(b.shape()), " but W has shape ", shape_str(Wd.shape()),
                      " (expected ", shape_str({Wd.size(0)}), ")"));
  }
  const Tensor x2 = xd.ndim() == 2 ? xd : xd.reshape({n, in});
  Tensor y = Tensor::empty({n, Wd.size(0)}, xd.dtype(), xd.device());
  ops::gemm(x2, false, Wd, true, 1.0, 0.0, y);
  ops::add_bias_(y, b.defined() ? b.data() : Tensor(), relu);

  std::vector<Variable> inputs{x, W};
  if (b.defined()) inputs.push_back(b);
  if (!needs_recording(inputs)) return Variable(std::move(y));
  auto node = std::make_shared<LinearNode>(x2, xd.shape(), Wd, b.defined(), relu ? y : Tensor());
  return record(node, inputs, {y})[0];
}
}  // namespace

Variable linear(const Variable& x, const Variable& W, const Variable& b) { return apply(x, W, b, false); }
Variable linear_relu(const Variable& x, const Variable& W, const Variable& b) { return apply(x, W, b, true); }

}  // namespace chainer::functions
