#include "nn/functions/activation.h"

#include "autograd/function_hook.h"
#include "autograd/function_node.h"
#include "core/ops/ops.h"

namespace chainer::functions {

namespace {
// One node class for the three activations: they differ only in the name and the gradient op.
class ActivationNode : public FunctionNode {
 public:
  using GradFn = Tensor (*)(const Tensor&, const Tensor&);
  ActivationNode(const char* name, GradFn grad, Tensor y) : name_(name), grad_(grad), y_(std::move(y)) {}
  std::string name() const override { return name_; }
  std::vector<Tensor> backward(const std::vector<Tensor>& gy) override { return {grad_(y_, gy[0])}; }

 protected:
  void release_saved() override { y_ = Tensor(); }

 private:
  const char* name_;
  GradFn grad_;
  Tensor y_;
};

// One node class for the three activations with a parameter, whose gradients need the input.
class ParametricActivationNode : public FunctionNode {
 public:
  using GradFn = Tensor (*)(const Tensor&, const Tensor&, double);
  ParametricActivationNode(const char* name, GradFn grad, Tensor x, double p)
      : name_(name), grad_(grad), x_(std::move(x)), p_(p) {}
  std::string name() const override { return name_; }
  std::vector<Tensor> backward(const std::vector<Tensor>& gy) override { return {grad_(x_, gy[0], p_)}; }

 protected:
  void release_saved() override { x_ = Tensor(); }

 private:
  const char* name_;
  GradFn grad_;
  Tensor x_;
  double p_;
};

Variable apply(const Variable& x, const char* name, Tensor (*forward)(const Tensor&, double), double p,
               ParametricActivationNode::GradFn grad) {
  ForwardHooks hooks(name, x);
  if (!x.defined()) throw Error(str(name, ": x must be defined"));
  Tensor y = forward(x.data(), p);
  if (!needs_recording({x})) return Variable(std::move(y));
  return record(std::make_shared<ParametricActivationNode>(name, grad, x.data(), p), {x}, {y})[0];
}

Variable apply(const Variable& x, const char* name, Tensor (*forward)(const Tensor&), ActivationNode::GradFn grad) {
  ForwardHooks hooks(name, x);
  Tensor y = forward(x.data());
  if (!needs_recording({x})) return Variable(std::move(y));
  return record(std::make_shared<ActivationNode>(name, grad, y), {x}, {y})[0];
}
}  // namespace

Variable relu(const Variable& x) { return apply(x, "ReLU", ops::relu, ops::relu_grad); }
Variable sigmoid(const Variable& x) { return apply(x, "Sigmoid", ops::sigmoid, ops::sigmoid_grad); }
Variable tanh(const Variable& x) { return apply(x, "Tanh", ops::tanh, ops::tanh_grad); }
Variable leaky_relu(const Variable& x, double slope) {
  return apply(x, "LeakyReLU", ops::leaky_relu, slope, ops::leaky_relu_grad);
}
Variable elu(const Variable& x, double alpha) { return apply(x, "ELU", ops::elu, alpha, ops::elu_grad); }
Variable softplus(const Variable& x, double beta) {
  return apply(x, "Softplus", ops::softplus, beta, ops::softplus_grad);
}

}  // namespace chainer::functions
