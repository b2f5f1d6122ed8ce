// The elementwise ops: arithmetic and comparisons with numpy broadcasting, where, clip, the
// activations and their gradients, the in-place axpy_, scale_, scale_to_ and accumulate_, and the
// linear layer's add_bias_. Their kernels are in core/cpu/elementwise.cpp and
// core/cuda/elementwise.cu.
#include "core/ops/ops.h"

#include "core/ops/checks.h"
#include "core/ops/kernels.h"

namespace chainer::ops {

using detail::require_same_device;
using detail::require_same_dtype;
using detail::require_floating_or_half;

namespace {
Tensor binary(BinaryOp kind, const char* op, const Tensor& a, const Tensor& b) {
  const Device device = require_same_device(op, {&a, &b});
  require_same_dtype(op, a, b);
  Tensor out = Tensor::empty(broadcast_shapes(a.shape(), b.shape(), op), a.dtype(), device);
  kernels_for(device).binary(kind, a, b, out);
  return out;
}

Tensor unary(UnaryOp kind, const char* op, const Tensor& a) {
  const Device device = require_same_device(op, {&a});
  require_floating_or_half(op, a);
  Tensor out = Tensor::empty(a.shape(), a.dtype(), device);
  kernels_for(device).unary(kind, a, out);
  return out;
}

Tensor activation_grad(GradOp kind, const char* op, const Tensor& y, const Tensor& gy) {
  const Device device = require_same_device(op, {&y, &gy});
  require_same_dtype(op, y, gy);
  if (y.shape() != gy.shape())
    throw Error(str(op, ": gradient shape ", shape_str(gy.shape()), " differs from output shape ", shape_str(y.shape())));
  Tensor out = Tensor::empty(y.shape(), y.dtype(), device);
  kernels_for(device).activation_grad(kind, y, gy, out);
  return out;
}
}  // namespace

Tensor add(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Add, "add", a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Sub, "sub", a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Mul, "mul", a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Div, "div", a, b); }

namespace {
Tensor affine(const char* op, const Tensor& a, double mul, double add) {
  const Device device = require_same_device(op, {&a});
  require_floating_or_half(op, a);
  Tensor out = Tensor::empty(a.shape(), a.dtype(), device);
  kernels_for(device).affine(a, mul, add, out);
  return out;
}
}  // namespace
Tensor add_scalar(const Tensor& a, double s) { return affine("add_scalar", a, 1.0, s); }
Tensor mul_scalar(const Tensor& a, double s) { return affine("mul_scalar", a, s, 0.0); }
Tensor neg(const Tensor& a) { return unary(UnaryOp::Neg, "neg", a); }
Tensor exp(const Tensor& a) { return unary(UnaryOp::Exp, "exp", a); }
Tensor log(const Tensor& a) { return unary(UnaryOp::Log, "log", a); }
Tensor sqrt(const Tensor& a) { return unary(UnaryOp::Sqrt, "sqrt", a); }
Tensor square(const Tensor& a) { return unary(UnaryOp::Square, "square", a); }
Tensor relu(const Tensor& a) { return unary(UnaryOp::Relu, "relu", a); }
Tensor sigmoid(const Tensor& a) { return unary(UnaryOp::Sigmoid, "sigmoid", a); }
Tensor tanh(const Tensor& a) { return unary(UnaryOp::Tanh, "tanh", a); }
Tensor abs(const Tensor& a) { return unary(UnaryOp::Abs, "abs", a); }
Tensor sign(const Tensor& a) { return unary(UnaryOp::Sign, "sign", a); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Maximum, "maximum", a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Minimum, "minimum", a, b); }

Tensor clip(const Tensor& a, double lo, double hi) {
  const Device device = require_same_device("clip", {&a});
  require_floating_or_half("clip", a);
  if (!(lo <= hi)) throw Error(str("clip: the lower bound ", lo, " is above the upper bound ", hi));
  Tensor out = Tensor::empty(a.shape(), a.dtype(), device);
  kernels_for(device).clip(a, lo, hi, out);
  return out;
}

namespace {
Tensor compare(CompareOp kind, const char* op, const Tensor& a, const Tensor& b) {
  const Device device = require_same_device(op, {&a, &b});
  require_same_dtype(op, a, b);
  Tensor out = Tensor::empty(broadcast_shapes(a.shape(), b.shape(), op), DType::UInt8, device);
  kernels_for(device).compare(kind, a, b, out);
  return out;
}
}  // namespace
Tensor equal(const Tensor& a, const Tensor& b) { return compare(CompareOp::Equal, "equal", a, b); }
Tensor not_equal(const Tensor& a, const Tensor& b) { return compare(CompareOp::NotEqual, "not_equal", a, b); }
Tensor less(const Tensor& a, const Tensor& b) { return compare(CompareOp::Less, "less", a, b); }
Tensor less_equal(const Tensor& a, const Tensor& b) { return compare(CompareOp::LessEqual, "less_equal", a, b); }
Tensor greater(const Tensor& a, const Tensor& b) { return compare(CompareOp::Greater, "greater", a, b); }
Tensor greater_equal(const Tensor& a, const Tensor& b) {
  return compare(CompareOp::GreaterEqual, "greater_equal", a, b);
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  const Device device = require_same_device("where", {&cond, &a, &b});
  if (cond.dtype() != DType::UInt8)
    throw Error(str("where: the condition has dtype ", dtype_name(cond.dtype()),
                    " (expected uint8, the boolean dtype of the comparison ops)"));
  require_same_dtype("where", a, b);
  const Shape shape = broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  Tensor out = Tensor::empty(shape, a.dtype(), device);
  kernels_for(device).where(cond, a, b, out);
  return out;
}
namespace {
Tensor parametric(ParametricOp kind, const char* op, const Tensor& x, double p) {
  const Device device = require_same_device(op, {&x});
  require_floating_or_half(op, x);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), device);
  if (out.numel() > 0) kernels_for(device).parametric_activation(kind, x, p, out);
  return out;
}

Tensor parametric_grad(ParametricOp kind, const char* op, const Tensor& x, const Tensor& gy, double p) {
  const Device device = require_same_device(op, {&x, &gy});
  require_floating_or_half(op, x);
  require_same_dtype(op, x, gy);
  if (x.shape() != gy.shape())
    throw Error(
        str(op, ": gradient shape ", shape_str(gy.shape()), " differs from input shape ", shape_str(x.shape())));
  Tensor out = Tensor::empty(x.shape(), x.dtype(), device);
  if (out.numel() > 0) kernels_for(device).parametric_activation_grad(kind, x, gy, p, out);
  return out;
}

void require_nonzero_beta(const char* op, double beta) {
  if (beta == 0) throw Error(str(op, ": beta must not be 0 (the output is log(1 + exp(beta x)) / beta)"));
}
}  // namespace

Tensor leaky_relu(const Tensor& x, double slope) { return parametric(ParametricOp::LeakyRelu, "leaky_relu", x, slope); }
Tensor elu(const Tensor& x, double alpha) { return parametric(ParametricOp::Elu, "elu", x, alpha); }
Tensor softplus(const Tensor& x, double beta) {
  require_nonzero_beta("softplus", beta);
  return parametric(ParametricOp::Softplus, "softplus", x, beta);
}
Tensor leaky_relu_grad(const Tensor& x, const Tensor& gy, double slope) {
  return parametric_grad(ParametricOp::LeakyRelu, "leaky_relu_grad", x, gy, slope);
}
Tensor elu_grad(const Tensor& x, const Tensor& gy, double alpha) {
  return parametric_grad(ParametricOp::Elu, "elu_grad", x, gy, alpha);
}
Tensor softplus_grad(const Tensor& x, const Tensor& gy, double beta) {
  require_nonzero_beta("softplus_grad", beta);
  return parametric_grad(ParametricOp::Softplus, "softplus_grad", x, gy, beta);
}

Tensor relu_grad(const Tensor& y, const Tensor& gy) { return activation_grad(GradOp::Relu, "relu_grad", y, gy); }
Tensor sigmoid_grad(const Tensor& y, const Tensor& gy) {
  return activation_grad(GradOp::Sigmoid, "sigmoid_grad", y, gy);
}
Tensor tanh_grad(const Tensor& y, const Tensor& gy) { return activation_grad(GradOp::Tanh, "tanh_grad", y, gy); }

void axpy_(Tensor& y, double alpha, const Tensor& x) {
  const Device device = require_same_device("axpy", {&y, &x});
  require_same_dtype("axpy", y, x);
  require_floating_or_half("axpy", y);
  if (y.shape() != x.shape())
    throw Error(str("axpy: shapes ", shape_str(y.shape()), " and ", shape_str(x.shape()), " differ"));
  if (!y.is_contiguous()) throw Error("axpy: the destination must be contiguous");
  kernels_for(device).axpy(y, alpha, x);
}

void scale_(Tensor& y, double alpha) {
  const Device device = require_same_device("scale", {&y});
  require_floating_or_half("scale", y);
  if (!y.is_contiguous()) throw Error("scale: the destination must be contiguous");
  kernels_for(device).affine(y, alpha, 0.0, y);
}

void scale_to_(Tensor& out, const Tensor& a, double alpha) {
  const Device device = require_same_device("scale_to", {&out, &a});
  require_same_dtype("scale_to", out, a);
  require_floating_or_half("scale_to", a);
  if (out.shape() != a.shape())
    throw Error(str("scale_to: shapes ", shape_str(out.shape()), " and ", shape_str(a.shape()), " differ"));
  if (!out.is_contiguous()) throw Error("scale_to: the destination must be contiguous");
  kernels_for(device).affine(a, alpha, 0.0, out);
}

void accumulate_(Tensor& acc, const Tensor& value) {
  const Device device = require_same_device("accumulate", {&acc, &value});
  if (acc.dtype() != DType::Float64 || acc.numel() != 1)
    throw Error(str("accumulate: the accumulator must be one float64 element, got ", dtype_name(acc.dtype()), " ",
                    shape_str(acc.shape())));
  require_floating_or_half("accumulate", value);
  if (value.numel() != 1)
    throw Error(str("accumulate: the value must have one element, got shape ", shape_str(value.shape())));
  kernels_for(device).accumulate(acc, value);
}

void add_bias_(Tensor& y, const Tensor& b, bool relu) {
  const Device device = require_same_device("add_bias", {&y});
  require_floating_or_half("add_bias", y);
  if (y.ndim() != 2 || !y.is_contiguous())
    throw Error(str("add_bias: expected a contiguous 2-D output, got shape ", shape_str(y.shape())));
  if (b.defined()) {
    require_same_device("add_bias", {&y, &b});
    require_same_dtype("add_bias", y, b);
    if (b.shape() != Shape{y.size(1)})
      throw Error(str("add_bias: bias has shape ", shape_str(b.shape()), " but the output has shape ",
                      shape_str(y.shape()), " (expected ", shape_str({y.size(1)}), ")"));
  }
  kernels_for(device).add_bias(y, b, relu);
}

}  // namespace chainer::ops
