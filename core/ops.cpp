// Argument checks and device dispatch for core/ops.h. Only the CPU exists in this build; the
// CUDA branch will be added here and nowhere else.
#include "core/ops.h"

#include <algorithm>

#include "core/cpu/kernels.h"

namespace chainer::ops {

namespace {
void require_defined_cpu(const char* op, const Tensor& t) {
  if (!t.defined()) throw Error(str(op, ": an input tensor is undefined"));
  if (!t.device().is_cpu()) throw Error(str(op, ": device ", t.device().str(), " is not supported in this build"));
}
void require_same_dtype(const char* op, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    throw Error(str(op, ": dtypes differ (", dtype_name(a.dtype()), " and ", dtype_name(b.dtype()), ")"));
}
void require_floating(const char* op, const Tensor& a) {
  if (!is_floating(a.dtype()))
    throw Error(str(op, ": dtype ", dtype_name(a.dtype()), " is not supported (expected float32 or float64)"));
}

Tensor binary(cpu::BinaryOp kind, const char* op, const Tensor& a, const Tensor& b) {
  require_defined_cpu(op, a);
  require_defined_cpu(op, b);
  require_same_dtype(op, a, b);
  Tensor out = Tensor::empty(broadcast_shapes(a.shape(), b.shape(), op), a.dtype());
  cpu::binary(kind, a, b, out);
  return out;
}

Tensor unary(cpu::UnaryOp kind, const char* op, const Tensor& a) {
  require_defined_cpu(op, a);
  require_floating(op, a);
  Tensor out = Tensor::empty(a.shape(), a.dtype());
  cpu::unary(kind, a, out);
  return out;
}

Tensor activation_grad(cpu::GradOp kind, const char* op, const Tensor& y, const Tensor& gy) {
  require_defined_cpu(op, y);
  require_defined_cpu(op, gy);
  require_same_dtype(op, y, gy);
  if (y.shape() != gy.shape())
    throw Error(str(op, ": gradient shape ", shape_str(gy.shape()), " differs from output shape ", shape_str(y.shape())));
  Tensor out = Tensor::empty(y.shape(), y.dtype());
  cpu::activation_grad(kind, y, gy, out);
  return out;
}
}  // namespace

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const size_t nd = std::max(a.size(), b.size());
  Shape out(nd);
  for (size_t i = 0; i < nd; ++i) {
    int64_t da = i < nd - a.size() ? 1 : a[i - (nd - a.size())];
    int64_t db = i < nd - b.size() ? 1 : b[i - (nd - b.size())];
    if (da != db && da != 1 && db != 1)
      throw Error(str(op, ": shapes ", shape_str(a), " and ", shape_str(b), " cannot be broadcast together"));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Tensor add(const Tensor& a, const Tensor& b) { return binary(cpu::BinaryOp::Add, "add", a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary(cpu::BinaryOp::Sub, "sub", a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(cpu::BinaryOp::Mul, "mul", a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(cpu::BinaryOp::Div, "div", a, b); }

Tensor add_scalar(const Tensor& a, double s) {
  require_defined_cpu("add_scalar", a);
  require_floating("add_scalar", a);
  Tensor out = Tensor::empty(a.shape(), a.dtype());
  cpu::affine(a, 1.0, s, out);
  return out;
}
Tensor mul_scalar(const Tensor& a, double s) {
  require_defined_cpu("mul_scalar", a);
  require_floating("mul_scalar", a);
  Tensor out = Tensor::empty(a.shape(), a.dtype());
  cpu::affine(a, s, 0.0, out);
  return out;
}
Tensor neg(const Tensor& a) { return unary(cpu::UnaryOp::Neg, "neg", a); }
Tensor exp(const Tensor& a) { return unary(cpu::UnaryOp::Exp, "exp", a); }
Tensor log(const Tensor& a) { return unary(cpu::UnaryOp::Log, "log", a); }
Tensor sqrt(const Tensor& a) { return unary(cpu::UnaryOp::Sqrt, "sqrt", a); }
Tensor square(const Tensor& a) { return unary(cpu::UnaryOp::Square, "square", a); }
Tensor relu(const Tensor& a) { return unary(cpu::UnaryOp::Relu, "relu", a); }
Tensor sigmoid(const Tensor& a) { return unary(cpu::UnaryOp::Sigmoid, "sigmoid", a); }
Tensor tanh(const Tensor& a) { return unary(cpu::UnaryOp::Tanh, "tanh", a); }
Tensor relu_grad(const Tensor& y, const Tensor& gy) { return activation_grad(cpu::GradOp::Relu, "relu_grad", y, gy); }
Tensor sigmoid_grad(const Tensor& y, const Tensor& gy) {
  return activation_grad(cpu::GradOp::Sigmoid, "sigmoid_grad", y, gy);
}
Tensor tanh_grad(const Tensor& y, const Tensor& gy) { return activation_grad(cpu::GradOp::Tanh, "tanh_grad", y, gy); }

void axpy_(Tensor& y, double alpha, const Tensor& x) {
  require_defined_cpu("axpy", y);
  require_defined_cpu("axpy", x);
  require_same_dtype("axpy", y, x);
  if (y.shape() != x.shape())
    throw Error(str("axpy: shapes ", shape_str(y.shape()), " and ", shape_str(x.shape()), " differ"));
  if (!y.is_contiguous()) throw Error("axpy: the destination must be contiguous");
  cpu::axpy(y, alpha, x);
}

void scale_(Tensor& y, double alpha) {
  require_defined_cpu("scale", y);
  if (!y.is_contiguous()) throw Error("scale: the destination must be contiguous");
  cpu::affine(y, alpha, 0.0, y);
}

Tensor sum(const Tensor& a, const std::vector<int64_t>& axes, bool keepdims) {
  require_defined_cpu("sum", a);
  std::vector<bool> reduce(size_t(a.ndim()), axes.empty());
  for (int64_t ax : axes) {
    int64_t d = normalize_axis(ax, a.ndim(), "sum");
    if (reduce[size_t(d)]) throw Error(str("sum: axis ", ax, " appears twice"));
    reduce[size_t(d)] = true;
  }
  Shape kept = a.shape(), dropped;
  for (int64_t d = 0; d < a.ndim(); ++d) {
    if (reduce[size_t(d)]) kept[size_t(d)] = 1;
    else dropped.push_back(a.shape()[size_t(d)]);
  }
  Tensor out = Tensor::empty(kept, a.dtype());
  cpu::sum_axes(a, reduce, out);
  return keepdims ? out : out.reshape(dropped);
}

Tensor sum_to(const Tensor& a, const Shape& shape) {
  if (a.shape() == shape) return a;
  const int64_t lead = a.ndim() - int64_t(shape.size());
  if (lead < 0) throw Error(str("sum_to: cannot sum ", shape_str(a.shape()), " to the larger shape ", shape_str(shape)));
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < a.ndim(); ++d) {
    if (d < lead) axes.push_back(d);
    else if (shape[size_t(d - lead)] == 1 && a.shape()[size_t(d)] != 1) axes.push_back(d);
    else if (shape[size_t(d - lead)] != a.shape()[size_t(d)])
      throw Error(str("sum_to: shape ", shape_str(a.shape()), " does not broadcast from ", shape_str(shape)));
  }
  return sum(a, axes, true).reshape(shape);
}

Tensor broadcast_to(const Tensor& a, const Shape& shape) {
  require_defined_cpu("broadcast_to", a);
  if (a.shape() == shape) return a;
  if (broadcast_shapes(a.shape(), shape, "broadcast_to") != shape)
    throw Error(str("broadcast_to: cannot broadcast ", shape_str(a.shape()), " to ", shape_str(shape)));
  Tensor out = Tensor::empty(shape, a.dtype());
  cpu::broadcast_copy(a, out);
  return out;
}

Tensor max(const Tensor& a, int64_t axis, bool keepdims) {
  require_defined_cpu("max", a);
  int64_t ax = normalize_axis(axis, a.ndim(), "max");
  if (a.shape()[size_t(ax)] == 0) throw Error("max: cannot reduce an axis of extent 0");
  Shape kept = a.shape();
  kept[size_t(ax)] = 1;
  Tensor out = Tensor::empty(kept, a.dtype());
  cpu::max_axis(a, ax, out, nullptr);
  if (keepdims) return out;
  Shape dropped = a.shape();
  dropped.erase(dropped.begin() + ax);
  return out.reshape(dropped);
}

Tensor argmax(const Tensor& a, int64_t axis) {
  require_defined_cpu("argmax", a);
  int64_t ax = normalize_axis(axis, a.ndim(), "argmax");
  if (a.shape()[size_t(ax)] == 0) throw Error("argmax: cannot reduce an axis of extent 0");
  Shape dropped = a.shape();
  dropped.erase(dropped.begin() + ax);
  Tensor idx = Tensor::empty(dropped, DType::Int32);
  Tensor none;
  cpu::max_axis(a, ax, none, &idx);
  return idx;
}

void gemm(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, double alpha, double beta, Tensor& c) {
  require_defined_cpu("matmul", a);
  require_defined_cpu("matmul", b);
  require_defined_cpu("matmul", c);
  require_floating("matmul", a);
  require_same_dtype("matmul", a, b);
  require_same_dtype("matmul", a, c);
  if (a.ndim() != 2 || b.ndim() != 2)
    throw Error(str("matmul: expected 2-D arrays, got shapes ", shape_str(a.shape()), " and ", shape_str(b.shape())));
  const int64_t m = trans_a ? a.size(1) : a.size(0), k = trans_a ? a.size(0) : a.size(1);
  const int64_t k2 = trans_b ? b.size(1) : b.size(0), n = trans_b ? b.size(0) : b.size(1);
  if (k != k2)
    throw Error(str("matmul: shapes ", shape_str(a.shape()), trans_a ? "^T" : "", " and ", shape_str(b.shape()),
                    trans_b ? "^T" : "", " are not aligned (", k, " != ", k2, ")"));
  if (c.shape() != Shape{m, n} || !c.is_contiguous())
    throw Error(str("matmul: output has shape ", shape_str(c.shape()), " but the product has shape ", shape_str({m, n})));
  cpu::gemm(a.contiguous(), trans_a, b.contiguous(), trans_b, alpha, beta, c);
}

Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  require_defined_cpu("matmul", a);
  require_defined_cpu("matmul", b);
  if (a.ndim() != 2 || b.ndim() != 2)
    throw Error(str("matmul: expected 2-D arrays, got shapes ", shape_str(a.shape()), " and ", shape_str(b.shape())));
  Tensor c = Tensor::empty({trans_a ? a.size(1) : a.size(0), trans_b ? b.size(0) : b.size(1)}, a.dtype());
  gemm(a, trans_a, b, trans_b, 1.0, 0.0, c);
  return c;
}

namespace {
Tensor softmax_along(const char* op, const Tensor& x, int64_t axis, bool log) {
  require_defined_cpu(op, x);
  require_floating(op, x);
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  cpu::softmax(x, normalize_axis(axis, x.ndim(), op), log, out);
  return out;
}
}  // namespace

Tensor softmax(const Tensor& x, int64_t axis) { return softmax_along("softmax", x, axis, false); }
Tensor log_softmax(const Tensor& x, int64_t axis) { return softmax_along("log_softmax", x, axis, true); }

Tensor concat(const std::vector<Tensor>& xs, int64_t axis) {
  if (xs.empty()) throw Error("concat: no arrays given");
  for (const Tensor& x : xs) require_defined_cpu("concat", x);
  const Tensor& first = xs[0];
  const int64_t ax = normalize_axis(axis, first.ndim(), "concat");
  Shape shape = first.shape();
  int64_t total = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const Tensor& x = xs[i];
    require_same_dtype("concat", first, x);
    bool ok = x.ndim() == first.ndim();
    for (int64_t d = 0; ok && d < x.ndim(); ++d) ok = d == ax || x.shape()[size_t(d)] == shape[size_t(d)];
    if (!ok)
      throw Error(str("concat: array ", i, " has shape ", shape_str(x.shape()), " which does not match ",
                      shape_str(first.shape()), " outside axis ", ax));
    total += x.shape()[size_t(ax)];
  }
  shape[size_t(ax)] = total;
  Tensor out = Tensor::empty(shape, first.dtype());
  int64_t at = 0;
  for (const Tensor& x : xs) {
    const int64_t len = x.shape()[size_t(ax)];
    out.narrow(ax, at, len).copy_(x);
    at += len;
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& xs, int64_t axis) {
  if (xs.empty()) throw Error("stack: no arrays given");
  const int64_t ax = normalize_axis(axis, xs[0].ndim() + 1, "stack");
  std::vector<Tensor> expanded;
  for (size_t i = 0; i < xs.size(); ++i) {
    require_defined_cpu("stack", xs[i]);
    if (xs[i].shape() != xs[0].shape())
      throw Error(str("stack: array ", i, " has shape ", shape_str(xs[i].shape()), " but array 0 has ",
                      shape_str(xs[0].shape())));
    Shape s = xs[i].shape();
    s.insert(s.begin() + ax, 1);
    expanded.push_back(xs[i].contiguous().reshape(s));
  }
  return concat(expanded, ax);
}


void add_bias_(Tensor& y, const Tensor& b, bool relu) {
  require_defined_cpu("add_bias", y);
  require_floating("add_bias", y);
  if (y.ndim() != 2 || !y.is_contiguous())
    throw Error(str("add_bias: expected a contiguous 2-D output, got shape ", shape_str(y.shape())));
  if (b.defined()) {
    require_defined_cpu("add_bias", b);
    require_same_dtype("add_bias", y, b);
    if (b.shape() != Shape{y.size(1)})
      throw Error(str("add_bias: bias has shape ", shape_str(b.shape()), " but the output has shape ",
                      shape_str(y.shape()), " (expected ", shape_str({y.size(1)}), ")"));
  }
  cpu::add_bias(y, b, relu);
}

namespace {
Tensor softmax_grad_impl(const char* op, const Tensor& y, const Tensor& gy, int64_t axis, bool log) {
  require_defined_cpu(op, y);
  require_defined_cpu(op, gy);
  require_floating(op, y);
  require_same_dtype(op, y, gy);
  if (y.shape() != gy.shape())
    throw Error(str(op, ": gradient shape ", shape_str(gy.shape()), " differs from output shape ", shape_str(y.shape())));
  Tensor gx = Tensor::empty(y.shape(), y.dtype());
  cpu::softmax_grad(y, gy, normalize_axis(axis, y.ndim(), op), log, gx);
  return gx;
}

void check_cross_entropy_args(const char* op, const Tensor& x, const Tensor& t) {
  require_defined_cpu(op, x);
  require_defined_cpu(op, t);
  require_floating(op, x);
  if (t.dtype() != DType::Int32)
    throw Error(str(op, ": labels have dtype ", dtype_name(t.dtype()), " (expected int32)"));
  if (x.ndim() != 2) throw Error(str(op, ": x must be 2-D (batch, classes), got shape ", shape_str(x.shape())));
  if (t.shape() != Shape{x.size(0)})
    throw Error(str(op, ": labels have shape ", shape_str(t.shape()), " but x has shape ", shape_str(x.shape()),
                    " (expected ", shape_str({x.size(0)}), ")"));
}
}  // namespace

Tensor softmax_grad(const Tensor& y, const Tensor& gy, int64_t axis) {
  return softmax_grad_impl("softmax_grad", y, gy, axis, false);
}
Tensor log_softmax_grad(const Tensor& y, const Tensor& gy, int64_t axis) {
  return softmax_grad_impl("log_softmax_grad", y, gy, axis, true);
}

CrossEntropyResult softmax_cross_entropy(const Tensor& x, const Tensor& t, int64_t ignore_label) {
  check_cross_entropy_args("softmax_cross_entropy", x, t);
  if (x.size(1) == 0) throw Error("softmax_cross_entropy: x has no classes (shape " + shape_str(x.shape()) + ")");
  CrossEntropyResult r{Tensor::empty({x.size(0)}, x.dtype()), Tensor::empty({x.size(0)}, x.dtype()), 0};
  const int64_t bad = cpu::softmax_cross_entropy(x, t, ignore_label, r.loss, r.lse, r.count);
  if (bad >= 0)
    throw Error(str("softmax_cross_entropy: label ", t[bad].item<int32_t>(), " at index ", bad,
                    " is out of range for ", x.size(1), " classes (expected 0 <= label < ", x.size(1),
                    " or ignore_label ", ignore_label, ")"));
  return r;
}

Tensor softmax_cross_entropy_grad(const Tensor& x, const Tensor& t, const Tensor& lse, const Tensor& gloss,
                                  double scale, int64_t ignore_label) {
  const char* op = "softmax_cross_entropy_grad";
  check_cross_entropy_args(op, x, t);
  require_defined_cpu(op, lse);
  require_defined_cpu(op, gloss);
  require_same_dtype(op, x, lse);
  require_same_dtype(op, x, gloss);
  if (lse.shape() != Shape{x.size(0)})
    throw Error(str(op, ": lse has shape ", shape_str(lse.shape()), " (expected ", shape_str({x.size(0)}), ")"));
  if (gloss.numel() != 1 && gloss.shape() != Shape{x.size(0)})
    throw Error(str(op, ": gradient has shape ", shape_str(gloss.shape()), " (expected one element or (", x.size(0),
                    "))"));
  Tensor gx = Tensor::empty(x.shape(), x.dtype());
  cpu::softmax_cross_entropy_grad(x, t, lse, gloss, scale, ignore_label, gx);
  return gx;
}

Tensor dropout_mask(const Shape& shape, double ratio, DType dtype, Generator& gen) {
  if (!(ratio >= 0.0 && ratio < 1.0)) throw Error(str("dropout: ratio ", ratio, " is outside [0, 1)"));
  if (!is_floating(dtype))
    throw Error(str("dropout: dtype ", dtype_name(dtype), " is not supported (expected float32 or float64)"));
  Tensor mask = Tensor::empty(shape, dtype);
  cpu::dropout_mask(ratio, gen, mask);
  return mask;
}

Tensor accuracy(const Tensor& y, const Tensor& t, int64_t ignore_label) {
  require_defined_cpu("accuracy", y);
  require_defined_cpu("accuracy", t);
  require_floating("accuracy", y);
  if (t.dtype() != DType::Int32)
    throw Error(str("accuracy: labels have dtype ", dtype_name(t.dtype()), " (expected int32)"));
  if (y.ndim() < 2) throw Error(str("accuracy: y must have a class axis 1, got shape ", shape_str(y.shape())));
  Shape expected = y.shape();
  expected.erase(expected.begin() + 1);
  if (t.shape() != expected)
    throw Error(str("accuracy: labels have shape ", shape_str(t.shape()), " but y has shape ", shape_str(y.shape()),
                    " (expected ", shape_str(expected), ")"));
  if (y.size(1) == 0) throw Error(str("accuracy: y has no classes (shape ", shape_str(y.shape()), ")"));
  int64_t correct = 0, total = 0;
  cpu::accuracy(y, t, ignore_label, correct, total);
  return Tensor::scalar(total == 0 ? 0.0 : double(correct) / double(total), y.dtype());
}

}  // namespace chainer::ops
