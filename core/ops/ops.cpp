// Argument checks and device dispatch for core/ops/ops.h: every op checks its operands, makes its
// outputs on their device and calls that device's kernel (core/ops/kernels.h).
#include "core/ops/ops.h"

#include <algorithm>
#include <limits>

#include "core/ops/kernels.h"

namespace chainer::ops {

namespace {
void require_defined(const char* op, const Tensor& t) {
  if (!t.defined()) throw Error(str(op, ": an input tensor is undefined"));
}
// Every tensor defined and on one device; returns it.
Device require_same_device(const char* op, std::initializer_list<const Tensor*> ts) {
  Device device;
  bool first = true;
  for (const Tensor* t : ts) {
    require_defined(op, *t);
    if (first) device = t->device(), first = false;
    else if (t->device() != device)
      throw Error(str(op, ": the arrays are on different devices (", device.str(), " and ", t->device().str(),
                      "); move them to one device first (Tensor::to, Link::to_gpu)"));
  }
  return device;
}
void require_same_dtype(const char* op, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    throw Error(str(op, ": dtypes differ (", dtype_name(a.dtype()), " and ", dtype_name(b.dtype()), ")"));
}
// float32 or float64: the storage types (float16, bfloat16) have no kernels (core/tensor/dtype.h).
void require_floating(const char* op, const Tensor& a) {
  if (!is_floating(a.dtype()) || is_storage_only(a.dtype()))
    throw Error(str(op, ": dtype ", dtype_name(a.dtype()), " is not supported (expected float32 or float64)"));
}

// Any dtype but the storage types (core/tensor/dtype.h).
void require_computing(const char* op, const Tensor& a) {
  if (is_storage_only(a.dtype()))
    throw Error(str(op, ": dtype ", dtype_name(a.dtype()), " is not supported (float16 and bfloat16 are storage types: "
                    "convert with astype(DType::Float32) first)"));
}

Tensor binary(BinaryOp kind, const char* op, const Tensor& a, const Tensor& b) {
  const Device device = require_same_device(op, {&a, &b});
  require_same_dtype(op, a, b);
  require_computing(op, a);
  Tensor out = Tensor::empty(broadcast_shapes(a.shape(), b.shape(), op), a.dtype(), device);
  kernels_for(device).binary(kind, a, b, out);
  return out;
}

Tensor unary(UnaryOp kind, const char* op, const Tensor& a) {
  const Device device = require_same_device(op, {&a});
  require_floating(op, a);
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

Tensor add(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Add, "add", a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Sub, "sub", a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Mul, "mul", a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(BinaryOp::Div, "div", a, b); }

namespace {
Tensor affine(const char* op, const Tensor& a, double mul, double add) {
  const Device device = require_same_device(op, {&a});
  require_floating(op, a);
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
  require_floating("clip", a);
  if (!(lo <= hi)) throw Error(str("clip: the lower bound ", lo, " is above the upper bound ", hi));
  Tensor out = Tensor::empty(a.shape(), a.dtype(), device);
  kernels_for(device).clip(a, lo, hi, out);
  return out;
}

namespace {
Tensor compare(CompareOp kind, const char* op, const Tensor& a, const Tensor& b) {
  const Device device = require_same_device(op, {&a, &b});
  require_same_dtype(op, a, b);
  require_computing(op, a);
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
  require_computing("where", a);
  const Shape shape = broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  Tensor out = Tensor::empty(shape, a.dtype(), device);
  kernels_for(device).where(cond, a, b, out);
  return out;
}
namespace {
Tensor parametric(ParametricOp kind, const char* op, const Tensor& x, double p) {
  const Device device = require_same_device(op, {&x});
  require_floating(op, x);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), device);
  if (out.numel() > 0) kernels_for(device).parametric_activation(kind, x, p, out);
  return out;
}

Tensor parametric_grad(ParametricOp kind, const char* op, const Tensor& x, const Tensor& gy, double p) {
  const Device device = require_same_device(op, {&x, &gy});
  require_floating(op, x);
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
  require_floating("axpy", y);
  if (y.shape() != x.shape())
    throw Error(str("axpy: shapes ", shape_str(y.shape()), " and ", shape_str(x.shape()), " differ"));
  if (!y.is_contiguous()) throw Error("axpy: the destination must be contiguous");
  kernels_for(device).axpy(y, alpha, x);
}

void scale_(Tensor& y, double alpha) {
  const Device device = require_same_device("scale", {&y});
  require_floating("scale", y);
  if (!y.is_contiguous()) throw Error("scale: the destination must be contiguous");
  kernels_for(device).affine(y, alpha, 0.0, y);
}

void scale_to_(Tensor& out, const Tensor& a, double alpha) {
  const Device device = require_same_device("scale_to", {&out, &a});
  require_same_dtype("scale_to", out, a);
  require_floating("scale_to", a);
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
  require_floating("accumulate", value);
  if (value.numel() != 1)
    throw Error(str("accumulate: the value must have one element, got shape ", shape_str(value.shape())));
  kernels_for(device).accumulate(acc, value);
}

Tensor take_rows(const Tensor& src, const std::vector<int64_t>& rows) {
  const Device device = require_same_device("take_rows", {&src});
  if (src.ndim() == 0) throw Error("take_rows: cannot take rows of a 0-dimensional array");
  for (int64_t r : rows)
    if (r < 0 || r >= src.size(0))
      throw Error(str("take_rows: row ", r, " is out of range for an array of ", src.size(0), " rows"));
  Shape shape = src.shape();
  shape[0] = int64_t(rows.size());
  Tensor out = Tensor::empty(shape, src.dtype(), device);
  if (out.numel() > 0) kernels_for(device).take_rows(src, rows, out);
  return out;
}

namespace {
// INDICES as contiguous int64 on DEVICE (the kernels' form); checked against EXTENT on the host
// when they live there. OP and AXIS name the call in errors.
Tensor index_tensor(const char* op, const Tensor& indices, int64_t axis, int64_t extent, Device device) {
  require_defined(op, indices);
  if (!indices.device().is_cpu() && indices.device() != device)
    throw Error(str(op, ": the indices are on ", indices.device().str(), " and the array on ", device.str(),
                    "; give indices on the CPU or on the array's device"));
  if (is_floating(indices.dtype()))
    throw Error(str(op, ": indices have dtype ", dtype_name(indices.dtype()), " (expected an integer dtype)"));
  Tensor idx = indices.dtype() == DType::Int64 ? indices.contiguous() : indices.astype(DType::Int64);
  if (idx.device().is_cpu()) {
    const int64_t* p = idx.data<int64_t>();
    for (int64_t j = 0; j < idx.numel(); ++j)
      if (p[j] < -extent || p[j] >= extent)
        throw Error(str(op, ": index ", p[j], " is out of bounds for axis ", axis, " with size ", extent));
  }
  return idx.to(device);
}
}  // namespace

Tensor take(const Tensor& a, const Tensor& indices, int64_t axis) {
  const Device device = require_same_device("take", {&a});
  if (a.ndim() == 0) throw Error("take: cannot take along an axis of a 0-dimensional array");
  const int64_t ax = normalize_axis(axis, a.ndim(), "take");
  const Tensor idx = index_tensor("take", indices, ax, a.size(ax), device);
  Shape shape(a.shape().begin(), a.shape().begin() + ax);
  shape.insert(shape.end(), idx.shape().begin(), idx.shape().end());
  shape.insert(shape.end(), a.shape().begin() + ax + 1, a.shape().end());
  Tensor out = Tensor::empty(shape, a.dtype(), device);
  if (out.numel() > 0) kernels_for(device).take(a, idx, ax, out);
  return out;
}

void scatter_add_(Tensor& a, const Tensor& indices, int64_t axis, const Tensor& values) {
  const Device device = require_same_device("scatter_add", {&a, &values});
  require_floating("scatter_add", a);
  require_same_dtype("scatter_add", a, values);
  if (!a.is_contiguous()) throw Error("scatter_add: the destination must be contiguous");
  if (a.ndim() == 0) throw Error("scatter_add: cannot scatter along an axis of a 0-dimensional array");
  const int64_t ax = normalize_axis(axis, a.ndim(), "scatter_add");
  const Tensor idx = index_tensor("scatter_add", indices, ax, a.size(ax), device);
  Shape expected(a.shape().begin(), a.shape().begin() + ax);
  expected.insert(expected.end(), idx.shape().begin(), idx.shape().end());
  expected.insert(expected.end(), a.shape().begin() + ax + 1, a.shape().end());
  if (values.shape() != expected)
    throw Error(str("scatter_add: values have shape ", shape_str(values.shape()), " (expected ", shape_str(expected),
                    " for indices of shape ", shape_str(idx.shape()), " into ", shape_str(a.shape()), " along axis ",
                    ax, ")"));
  if (values.numel() > 0) kernels_for(device).scatter_add(a, idx, ax, values);
}

Tensor sum(const Tensor& a, const std::vector<int64_t>& axes, bool keepdims) {
  const Device device = require_same_device("sum", {&a});
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
  Tensor out = Tensor::empty(kept, a.dtype(), device);
  kernels_for(device).sum_axes(a, reduce, out);
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
  const Device device = require_same_device("broadcast_to", {&a});
  if (a.shape() == shape) return a;
  if (broadcast_shapes(a.shape(), shape, "broadcast_to") != shape)
    throw Error(str("broadcast_to: cannot broadcast ", shape_str(a.shape()), " to ", shape_str(shape)));
  Tensor out = Tensor::empty(shape, a.dtype(), device);
  kernels_for(device).broadcast_copy(a, out);
  return out;
}

namespace {
// The max (IS_MAX) or min along one AXIS, or its index (INDEX: int32, the axis dropped).
Tensor extreme_along(const char* op, bool is_max, const Tensor& a, int64_t axis, bool keepdims, bool index) {
  const Device device = require_same_device(op, {&a});
  const int64_t ax = normalize_axis(axis, a.ndim(), op);
  if (a.shape()[size_t(ax)] == 0) throw Error(str(op, ": cannot reduce an axis of extent 0"));
  const Kernels& k = kernels_for(device);
  const auto kernel = is_max ? k.max_axis : k.min_axis;
  Shape dropped = a.shape();
  dropped.erase(dropped.begin() + ax);
  if (index) {
    Tensor idx = Tensor::empty(dropped, DType::Int32, device);
    Tensor none;
    kernel(a, ax, none, &idx);
    return idx;
  }
  Shape kept = a.shape();
  kept[size_t(ax)] = 1;
  Tensor out = Tensor::empty(kept, a.dtype(), device);
  kernel(a, ax, out, nullptr);
  return keepdims ? out : out.reshape(dropped);
}

// Over several AXES (all when empty): the reduced axes moved last and merged into one.
Tensor extreme_over(const char* op, bool is_max, const Tensor& a, const std::vector<int64_t>& axes, bool keepdims) {
  require_same_device(op, {&a});
  std::vector<bool> reduce(size_t(a.ndim()), axes.empty());
  for (int64_t ax : axes) {
    const int64_t d = normalize_axis(ax, a.ndim(), op);
    if (reduce[size_t(d)]) throw Error(str(op, ": axis ", ax, " appears twice"));
    reduce[size_t(d)] = true;
  }
  std::vector<int64_t> perm, moved;
  Shape kept, merged;
  int64_t count = 1;
  for (int64_t d = 0; d < a.ndim(); ++d) {
    const int64_t extent = a.shape()[size_t(d)];
    if (reduce[size_t(d)]) {
      if (extent == 0) throw Error(str(op, ": cannot reduce an axis of extent 0"));
      moved.push_back(d), count *= extent;
      kept.push_back(1);
    } else {
      perm.push_back(d), merged.push_back(extent);
      kept.push_back(extent);
    }
  }
  if (moved.empty()) return a.clone();  // a 0-d array: nothing to reduce
  if (moved.size() == 1) return extreme_along(op, is_max, a, moved[0], keepdims, false);
  perm.insert(perm.end(), moved.begin(), moved.end());
  merged.push_back(count);
  const Tensor rows = a.transpose(perm).contiguous().reshape(merged);
  Tensor out = extreme_along(op, is_max, rows, -1, false, false);
  return keepdims ? out.reshape(kept) : out;
}
}  // namespace

Tensor max(const Tensor& a, int64_t axis, bool keepdims) {
  return extreme_along("max", true, a, axis, keepdims, false);
}
Tensor argmax(const Tensor& a, int64_t axis) { return extreme_along("argmax", true, a, axis, false, true); }
Tensor min(const Tensor& a, int64_t axis, bool keepdims) {
  return extreme_along("min", false, a, axis, keepdims, false);
}
Tensor argmin(const Tensor& a, int64_t axis) { return extreme_along("argmin", false, a, axis, false, true); }
Tensor amax(const Tensor& a, const std::vector<int64_t>& axes, bool keepdims) {
  return extreme_over("amax", true, a, axes, keepdims);
}
Tensor amin(const Tensor& a, const std::vector<int64_t>& axes, bool keepdims) {
  return extreme_over("amin", false, a, axes, keepdims);
}

void gemm(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, double alpha, double beta, Tensor& c) {
  const Device device = require_same_device("matmul", {&a, &b, &c});
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
  kernels_for(device).gemm(a.contiguous(), trans_a, b.contiguous(), trans_b, alpha, beta, c);
}

Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  const Device device = require_same_device("matmul", {&a, &b});
  if (a.ndim() != 2 || b.ndim() != 2)
    throw Error(str("matmul: expected 2-D arrays, got shapes ", shape_str(a.shape()), " and ", shape_str(b.shape())));
  Tensor c = Tensor::empty({trans_a ? a.size(1) : a.size(0), trans_b ? b.size(0) : b.size(1)}, a.dtype(), device);
  gemm(a, trans_a, b, trans_b, 1.0, 0.0, c);
  return c;
}

namespace {
Tensor softmax_along(const char* op, const Tensor& x, int64_t axis, bool log) {
  const Device device = require_same_device(op, {&x});
  require_floating(op, x);
  const int64_t ax = normalize_axis(axis, x.ndim(), op);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), device);
  kernels_for(device).softmax(x, ax, log, out);
  return out;
}
}  // namespace

Tensor softmax(const Tensor& x, int64_t axis) { return softmax_along("softmax", x, axis, false); }
Tensor log_softmax(const Tensor& x, int64_t axis) { return softmax_along("log_softmax", x, axis, true); }

Tensor concat(const std::vector<Tensor>& xs, int64_t axis) {
  if (xs.empty()) throw Error("concat: no arrays given");
  const Tensor& first = xs[0];
  const Device device = require_same_device("concat", {&first});
  for (const Tensor& x : xs) require_same_device("concat", {&first, &x});
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
  Tensor out = Tensor::empty(shape, first.dtype(), device);
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
    require_same_device("stack", {&xs[0], &xs[i]});
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
  const Device device = require_same_device("add_bias", {&y});
  require_floating("add_bias", y);
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

namespace {
Tensor softmax_grad_impl(const char* op, const Tensor& y, const Tensor& gy, int64_t axis, bool log) {
  const Device device = require_same_device(op, {&y, &gy});
  require_floating(op, y);
  require_same_dtype(op, y, gy);
  if (y.shape() != gy.shape())
    throw Error(str(op, ": gradient shape ", shape_str(gy.shape()), " differs from output shape ", shape_str(y.shape())));
  const int64_t ax = normalize_axis(axis, y.ndim(), op);
  Tensor gx = Tensor::empty(y.shape(), y.dtype(), device);
  kernels_for(device).softmax_grad(y, gy, ax, log, gx);
  return gx;
}

Device check_cross_entropy_args(const char* op, const Tensor& x, const Tensor& t) {
  const Device device = require_same_device(op, {&x, &t});
  require_floating(op, x);
  if (t.dtype() != DType::Int32)
    throw Error(str(op, ": labels have dtype ", dtype_name(t.dtype()), " (expected int32)"));
  if (x.ndim() != 2) throw Error(str(op, ": x must be 2-D (batch, classes), got shape ", shape_str(x.shape())));
  if (t.shape() != Shape{x.size(0)})
    throw Error(str(op, ": labels have shape ", shape_str(t.shape()), " but x has shape ", shape_str(x.shape()),
                    " (expected ", shape_str({x.size(0)}), ")"));
  return device;
}
}  // namespace

Tensor softmax_grad(const Tensor& y, const Tensor& gy, int64_t axis) {
  return softmax_grad_impl("softmax_grad", y, gy, axis, false);
}
Tensor log_softmax_grad(const Tensor& y, const Tensor& gy, int64_t axis) {
  return softmax_grad_impl("log_softmax_grad", y, gy, axis, true);
}

CrossEntropyResult softmax_cross_entropy(const Tensor& x, const Tensor& t, int64_t ignore_label,
                                         LossReduction reduction) {
  const Device device = check_cross_entropy_args("softmax_cross_entropy", x, t);
  if (x.size(1) == 0) throw Error("softmax_cross_entropy: x has no classes (shape " + shape_str(x.shape()) + ")");
  const int64_t n = x.size(0);
  CrossEntropyResult r{Tensor::empty({n}, x.dtype(), device), Tensor::empty({n}, x.dtype(), device),
                       Tensor::empty({}, DType::Float64, device)};
  Tensor reduced = reduction == LossReduction::None ? Tensor() : Tensor::empty({}, x.dtype(), device);
  const int64_t bad =
      kernels_for(device).softmax_cross_entropy(x, t, ignore_label, reduction, r.loss, r.lse, reduced, r.scale);
  if (bad >= 0)
    throw Error(str("softmax_cross_entropy: label ", t[bad].item<int32_t>(), " at index ", bad,
                    " is out of range for ", x.size(1), " classes (expected 0 <= label < ", x.size(1),
                    " or ignore_label ", ignore_label, ")"));
  if (reduced.defined()) r.loss = reduced;
  return r;
}

Tensor softmax_cross_entropy_grad(const Tensor& x, const Tensor& t, const Tensor& lse, const Tensor& gloss,
                                  const Tensor& scale, int64_t ignore_label) {
  const char* op = "softmax_cross_entropy_grad";
  const Device device = check_cross_entropy_args(op, x, t);
  require_same_device(op, {&x, &lse, &gloss, &scale});
  require_same_dtype(op, x, lse);
  require_same_dtype(op, x, gloss);
  if (lse.shape() != Shape{x.size(0)})
    throw Error(str(op, ": lse has shape ", shape_str(lse.shape()), " (expected ", shape_str({x.size(0)}), ")"));
  if (gloss.numel() != 1 && gloss.shape() != Shape{x.size(0)})
    throw Error(str(op, ": gradient has shape ", shape_str(gloss.shape()), " (expected one element or (", x.size(0),
                    "))"));
  if (scale.dtype() != DType::Float64 || scale.numel() != 1)
    throw Error(str(op, ": scale must be one float64 element, got ", dtype_name(scale.dtype()), " ",
                    shape_str(scale.shape())));
  Tensor gx = Tensor::empty(x.shape(), x.dtype(), device);
  kernels_for(device).softmax_cross_entropy_grad(x, t, lse, gloss, scale, ignore_label, gx);
  return gx;
}

namespace {
Device check_sigmoid_cross_entropy_args(const char* op, const Tensor& x, const Tensor& t) {
  const Device device = require_same_device(op, {&x, &t});
  require_floating(op, x);
  if (t.dtype() != DType::Int32)
    throw Error(str(op, ": labels have dtype ", dtype_name(t.dtype()), " (expected int32)"));
  if (t.shape() != x.shape())
    throw Error(str(op, ": labels have shape ", shape_str(t.shape()), " but x has shape ", shape_str(x.shape()),
                    " (they must be equal)"));
  return device;
}
}  // namespace

Tensor sigmoid_cross_entropy(const Tensor& x, const Tensor& t) {
  const Device device = check_sigmoid_cross_entropy_args("sigmoid_cross_entropy", x, t);
  Tensor loss = Tensor::empty(x.shape(), x.dtype(), device);
  if (loss.numel() > 0) kernels_for(device).sigmoid_cross_entropy(x, t, loss);
  return loss;
}

Tensor sigmoid_cross_entropy_grad(const Tensor& x, const Tensor& t, const Tensor& gy) {
  const char* op = "sigmoid_cross_entropy_grad";
  const Device device = check_sigmoid_cross_entropy_args(op, x, t);
  require_same_device(op, {&x, &gy});
  require_same_dtype(op, x, gy);
  if (gy.numel() != 1 && gy.shape() != x.shape())
    throw Error(str(op, ": gradient has shape ", shape_str(gy.shape()), " (expected one element or ",
                    shape_str(x.shape()), ")"));
  Tensor gx = Tensor::empty(x.shape(), x.dtype(), device);
  if (gx.numel() > 0) kernels_for(device).sigmoid_cross_entropy_grad(x, t, gy, gx);
  return gx;
}

Tensor dropout_mask(const Shape& shape, double ratio, DType dtype, Device device, Generator& gen) {
  if (!(ratio >= 0.0 && ratio < 1.0)) throw Error(str("dropout: ratio ", ratio, " is outside [0, 1)"));
  if (!is_floating(dtype))
    throw Error(str("dropout: dtype ", dtype_name(dtype), " is not supported (expected float32 or float64)"));
  Tensor mask = Tensor::empty(shape, dtype, device);
  kernels_for(device).dropout_mask(ratio, gen, mask);
  return mask;
}

// Python's floor division: the numerator of an output size may be negative.
namespace {
int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
}  // namespace

int64_t conv_outsize(int64_t size, int64_t k, int64_t s, int64_t p, bool cover_all, int64_t d) {
  const int64_t dk = k + (k - 1) * (d - 1);
  return floor_div(size + 2 * p - dk + (cover_all ? s - 1 : 0), s) + 1;
}

int64_t deconv_outsize(int64_t size, int64_t k, int64_t s, int64_t p, bool cover_all, int64_t d) {
  const int64_t dk = (k - 1) * d + 1;
  return s * (size - 1) + dk - 2 * p - (cover_all ? s - 1 : 0);
}

namespace {
std::string pair_str(int64_t a, int64_t b) { return str("(", a, ", ", b, ")"); }

void check_conv_params(const char* op, const Conv2dParams& p) {
  if (p.sy < 1 || p.sx < 1) throw Error(str(op, ": stride ", pair_str(p.sy, p.sx), " must be positive"));
  if (p.ph < 0 || p.pw < 0) throw Error(str(op, ": pad ", pair_str(p.ph, p.pw), " must not be negative"));
  if (p.dy < 1 || p.dx < 1) throw Error(str(op, ": dilate ", pair_str(p.dy, p.dx), " must be positive"));
  if (p.groups < 1) throw Error(str(op, ": groups ", p.groups, " must be positive"));
}

// The checks every convolution entry point makes of its two arrays A and B (floating, one
// dtype, one device) and of PARAMS; returns the device.
Device check_conv_arrays(const char* op, const Tensor& a, const Tensor& b, const Conv2dParams& params) {
  const Device device = require_same_device(op, {&a, &b});
  require_floating(op, a);
  require_same_dtype(op, a, b);
  check_conv_params(op, params);
  return device;
}

void require_4d(const char* op, const char* name, const Shape& shape, const char* axes) {
  if (shape.size() != 4) throw Error(str(op, ": ", name, " must be 4-D ", axes, ", got shape ", shape_str(shape)));
}

// The filters W (C_out, C / groups, kh, kw) against C image channels: GROUPS divides both
// channel counts, and W's second axis is C / groups. X_NAME names the image in messages.
void check_filters(const char* op, const Tensor& W, const char* x_name, int64_t c, const Conv2dParams& p) {
  require_4d(op, "W", W.shape(), "(out_channels, in_channels / groups, kh, kw)");
  if (c % p.groups != 0)
    throw Error(str(op, ": groups ", p.groups, " does not divide the ", c, " channels of ", x_name));
  if (W.size(0) % p.groups != 0)
    throw Error(str(op, ": groups ", p.groups, " does not divide the ", W.size(0), " output channels of W (shape ",
                    shape_str(W.shape()), ")"));
  if (W.size(1) * p.groups != c)
    throw Error(str(op, ": ", x_name, " has ", c, " channels but W expects ", W.size(1) * p.groups, " (W has shape ",
                    shape_str(W.shape()), ", groups ", p.groups, ")"));
  if (W.size(2) < 1 || W.size(3) < 1) throw Error(str(op, ": W has an empty kernel (shape ", shape_str(W.shape()), ")"));
}

// Output extents (OH, OW) of WHAT against an image of HEIGHT x WIDTH: ones a convolution with
// these parameters makes, with cover_all or without.
void check_output_extents(const char* op, const char* what, int64_t oh, int64_t ow, int64_t height, int64_t width,
                          int64_t kh, int64_t kw, const Conv2dParams& p) {
  const int64_t lo_h = conv_outsize(height, kh, p.sy, p.ph, false, p.dy);
  const int64_t hi_h = conv_outsize(height, kh, p.sy, p.ph, true, p.dy);
  const int64_t lo_w = conv_outsize(width, kw, p.sx, p.pw, false, p.dx);
  const int64_t hi_w = conv_outsize(width, kw, p.sx, p.pw, true, p.dx);
  if (oh < 1 || ow < 1 || oh < lo_h || oh > hi_h || ow < lo_w || ow > hi_w) {
    const std::string made = lo_h == hi_h && lo_w == hi_w ? pair_str(lo_h, lo_w)
                                                          : str(pair_str(lo_h, lo_w), " to ", pair_str(hi_h, hi_w));
    throw Error(str(op, ": ", what, " ", pair_str(oh, ow), " but a convolution of ", pair_str(height, width),
                    " with kernel ", pair_str(kh, kw), ", stride ", pair_str(p.sy, p.sx), ", pad ", pair_str(p.ph, p.pw),
                    " and dilate ", pair_str(p.dy, p.dx), " makes ", made));
  }
}

Conv2dGeometry conv_geometry(const Conv2dParams& p, int64_t kh, int64_t kw, int64_t out_h, int64_t out_w) {
  return {.kh = kh, .kw = kw, .sy = p.sy, .sx = p.sx, .ph = p.ph, .pw = p.pw, .dy = p.dy, .dx = p.dx,
          .out_h = out_h, .out_w = out_w, .groups = p.groups};
}
}  // namespace

namespace {
// Checks X, W and PARAMS (out_h and out_w are -1 to be computed from params.cover_all, else the
// extents asked for) and returns y.
Tensor convolve(const Tensor& x, const Tensor& W, const Tensor& b, const Conv2dParams& params, int64_t out_h,
                int64_t out_w) {
  const char* op = "convolution_2d";
  const Device device = check_conv_arrays(op, x, W, params);
  require_4d(op, "x", x.shape(), "(batch, channels, height, width)");
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  check_filters(op, W, "x", c, params);
  const int64_t c_out = W.size(0), kh = W.size(2), kw = W.size(3);
  if (out_h < 0) {
    out_h = conv_outsize(h, kh, params.sy, params.ph, params.cover_all, params.dy);
    out_w = conv_outsize(w, kw, params.sx, params.pw, params.cover_all, params.dx);
    if (out_h < 1 || out_w < 1)
      throw Error(str(op, ": the kernel ", pair_str(kh, kw), " with dilate ", pair_str(params.dy, params.dx),
                      " is larger than the padded input ", pair_str(h + 2 * params.ph, w + 2 * params.pw),
                      " (x has shape ", shape_str(x.shape()), ", pad ", pair_str(params.ph, params.pw),
                      "): the output would be ", pair_str(out_h, out_w)));
  } else {
    check_output_extents(op, "the output extents", out_h, out_w, h, w, kh, kw, params);
  }
  if (b.defined()) {
    require_same_device(op, {&x, &b});
    require_same_dtype(op, x, b);
    if (b.shape() != Shape{c_out})
      throw Error(str(op, ": b has shape ", shape_str(b.shape()), " but W has ", c_out, " output channels (expected ",
                      shape_str({c_out}), ")"));
  }
  Tensor y = Tensor::empty({n, c_out, out_h, out_w}, x.dtype(), device);
  if (y.numel() == 0) return y;
  kernels_for(device).convolution_2d(x.contiguous(), W.contiguous(), b.defined() ? b.contiguous() : b,
                                     conv_geometry(params, kh, kw, out_h, out_w), y);
  return y;
}
}  // namespace

Tensor convolution_2d(const Tensor& x, const Tensor& W, const Tensor& b, const Conv2dParams& params) {
  return convolve(x, W, b, params, -1, -1);
}

Tensor convolution_2d(const Tensor& x, const Tensor& W, const Tensor& b, const Conv2dParams& params, int64_t out_h,
                      int64_t out_w) {
  if (out_h < 1 || out_w < 1)
    throw Error(str("convolution_2d: the output extents ", pair_str(out_h, out_w), " must be positive"));
  return convolve(x, W, b, params, out_h, out_w);
}

Tensor convolution_2d_grad_data(const Tensor& gy, const Tensor& W, int64_t height, int64_t width,
                                const Conv2dParams& params) {
  const char* op = "convolution_2d_grad_data";
  const Device device = check_conv_arrays(op, gy, W, params);
  require_4d(op, "gy", gy.shape(), "(batch, channels, height, width)");
  require_4d(op, "W", W.shape(), "(out_channels, in_channels / groups, kh, kw)");
  if (height < 1 || width < 1) throw Error(str(op, ": the image size ", pair_str(height, width), " must be positive"));
  const int64_t c = W.size(1) * params.groups;
  check_filters(op, W, "the image", c, params);
  const int64_t n = gy.size(0), c_out = W.size(0), kh = W.size(2), kw = W.size(3);
  if (gy.size(1) != c_out)
    throw Error(str(op, ": gy has ", gy.size(1), " channels but W has ", c_out, " output channels (W has shape ",
                    shape_str(W.shape()), ")"));
  check_output_extents(op, "gy has extents", gy.size(2), gy.size(3), height, width, kh, kw, params);
  Tensor gx = Tensor::empty({n, c, height, width}, gy.dtype(), device);
  if (gx.numel() == 0) return gx;
  kernels_for(device).convolution_2d_grad_data(gy.contiguous(), W.contiguous(),
                                               conv_geometry(params, kh, kw, gy.size(2), gy.size(3)), gx);
  return gx;
}

Tensor convolution_2d_grad_filter(const Tensor& x, const Tensor& gy, int64_t kh, int64_t kw,
                                  const Conv2dParams& params) {
  const char* op = "convolution_2d_grad_filter";
  const Device device = check_conv_arrays(op, x, gy, params);
  require_4d(op, "x", x.shape(), "(batch, channels, height, width)");
  require_4d(op, "gy", gy.shape(), "(batch, channels, height, width)");
  if (kh < 1 || kw < 1) throw Error(str(op, ": the kernel size ", pair_str(kh, kw), " must be positive"));
  const int64_t n = x.size(0), c = x.size(1), c_out = gy.size(1), groups = params.groups;
  if (gy.size(0) != n)
    throw Error(str(op, ": gy has shape ", shape_str(gy.shape()), " but x has shape ", shape_str(x.shape()),
                    " (batch sizes differ)"));
  if (c % groups != 0 || c_out % groups != 0)
    throw Error(str(op, ": groups ", groups, " does not divide the channels of x (", c, ") and gy (", c_out, ")"));
  check_output_extents(op, "gy has extents", gy.size(2), gy.size(3), x.size(2), x.size(3), kh, kw, params);
  const Shape w_shape{c_out, c / groups, kh, kw};
  if (n == 0 || shape_numel(w_shape) == 0) return Tensor::zeros(w_shape, x.dtype(), device);
  Tensor gW = Tensor::empty(w_shape, x.dtype(), device);
  kernels_for(device).convolution_2d_grad_filter(x.contiguous(), gy.contiguous(),
                                                 conv_geometry(params, kh, kw, gy.size(2), gy.size(3)), gW);
  return gW;
}

void check_window_2d(const char* op, const Window2D& w) {
  if (w.kh < 1 || w.kw < 1) throw Error(str(op, ": ksize (", w.kh, ", ", w.kw, ") must be at least 1"));
  if (w.sy < 1 || w.sx < 1) throw Error(str(op, ": stride (", w.sy, ", ", w.sx, ") must be at least 1"));
  if (w.ph < 0 || w.pw < 0) throw Error(str(op, ": pad (", w.ph, ", ", w.pw, ") must not be negative"));
}

Shape pooling_2d_output_shape(const char* op, const Shape& x_shape, const Window2D& w, bool cover_all) {
  if (x_shape.size() != 4)
    throw Error(str(op, ": x has shape ", shape_str(x_shape), "; expected 4 dimensions (N, C, H, W)"));
  if (shape_numel(x_shape) == 0) throw Error(str(op, ": x of shape ", shape_str(x_shape), " is empty"));
  check_window_2d(op, w);
  const int64_t oh = conv_outsize(x_shape[2], w.kh, w.sy, w.ph, cover_all);
  const int64_t ow = conv_outsize(x_shape[3], w.kw, w.sx, w.pw, cover_all);
  if (oh < 1 || ow < 1)
    throw Error(str(op, ": the output would be ", oh, "x", ow, " for x of shape ", shape_str(x_shape), " with ksize (",
                    w.kh, ", ", w.kw, "), stride (", w.sy, ", ", w.sx, "), pad (", w.ph, ", ", w.pw,
                    ") and cover_all ", cover_all ? "true" : "false", "; the height and width must be positive"));
  return {x_shape[0], x_shape[1], oh, ow};
}

MaxPooling2DResult max_pooling_2d(const Tensor& x, const Window2D& window, bool cover_all) {
  const char* op = "max_pooling_2d";
  const Device device = require_same_device(op, {&x});
  require_floating(op, x);
  const Shape out_shape = pooling_2d_output_shape(op, x.shape(), window, cover_all);
  if (x.size(2) * x.size(3) > std::numeric_limits<int32_t>::max())
    throw Error(str(op, ": planes of ", x.size(2), "x", x.size(3), " are too large (the indexes are int32)"));
  MaxPooling2DResult r{Tensor::empty(out_shape, x.dtype(), device), Tensor::empty(out_shape, DType::Int32, device)};
  kernels_for(device).max_pooling_2d(x, window, r.y, r.indexes);
  return r;
}

Tensor max_pooling_2d_grad(const Tensor& gy, const Tensor& indexes, const Window2D& window, const Shape& x_shape) {
  const char* op = "max_pooling_2d_grad";
  const Device device = require_same_device(op, {&gy, &indexes});
  require_floating(op, gy);
  if (indexes.dtype() != DType::Int32 || indexes.shape() != gy.shape() || !indexes.is_contiguous())
    throw Error(str(op, ": indexes must be contiguous int32 of the gradient's shape ", shape_str(gy.shape()), ", got ",
                    dtype_name(indexes.dtype()), " ", shape_str(indexes.shape())));
  if (x_shape.size() != 4 || gy.ndim() != 4 || gy.size(0) != x_shape[0] || gy.size(1) != x_shape[1])
    throw Error(str(op, ": gradient of shape ", shape_str(gy.shape()), " does not pool an input of shape ",
                    shape_str(x_shape)));
  Tensor gx = Tensor::empty(x_shape, gy.dtype(), device);
  if (gx.numel() > 0) kernels_for(device).max_pooling_2d_grad(gy, indexes, window, gx);
  return gx;
}

Tensor window_sum_2d(const Tensor& x, const Window2D& window, bool cover_all, double scale) {
  const char* op = "window_sum_2d";
  const Device device = require_same_device(op, {&x});
  require_floating(op, x);
  Tensor out = Tensor::empty(pooling_2d_output_shape(op, x.shape(), window, cover_all), x.dtype(), device);
  kernels_for(device).window_sum_2d(x, window, scale, out);
  return out;
}

Tensor window_spread_2d(const Tensor& y, const Window2D& window, int64_t h, int64_t w, bool cover_all, double scale) {
  const char* op = "window_spread_2d";
  const Device device = require_same_device(op, {&y});
  require_floating(op, y);
  if (y.ndim() != 4) throw Error(str(op, ": y has shape ", shape_str(y.shape()), "; expected (N, C, out_h, out_w)"));
  const Shape out_shape{y.size(0), y.size(1), h, w};
  const Shape pooled = pooling_2d_output_shape(op, out_shape, window, cover_all);
  if (pooled != y.shape())
    throw Error(str(op, ": y has shape ", shape_str(y.shape()), " but pooling ", shape_str(out_shape), " gives ",
                    shape_str(pooled)));
  Tensor out = Tensor::empty(out_shape, y.dtype(), device);
  kernels_for(device).window_spread_2d(y, window, scale, out);
  return out;
}

namespace {
void check_local_response_normalization(const char* op, const Tensor& x, int64_t n) {
  require_floating(op, x);
  if (x.ndim() < 2)
    throw Error(str(op, ": x has shape ", shape_str(x.shape()), "; expected (N, C, ...), the channels on axis 1"));
  if (n < 1) throw Error(str(op, ": n is ", n, "; the channel window must hold at least 1 channel"));
}
}  // namespace

LocalResponseNormalizationResult local_response_normalization(const Tensor& x, int64_t n, double k, double alpha,
                                                              double beta) {
  const char* op = "local_response_normalization";
  const Device device = require_same_device(op, {&x});
  check_local_response_normalization(op, x, n);
  LocalResponseNormalizationResult r{Tensor::empty(x.shape(), x.dtype(), device),
                                     Tensor::empty(x.shape(), x.dtype(), device)};
  if (x.numel() > 0) kernels_for(device).local_response_normalization(x, n, k, alpha, beta, r.y, r.unit_scale);
  return r;
}

Tensor local_response_normalization_grad(const Tensor& x, const Tensor& y, const Tensor& unit_scale, const Tensor& gy,
                                         int64_t n, double alpha, double beta) {
  const char* op = "local_response_normalization_grad";
  const Device device = require_same_device(op, {&x, &y, &unit_scale, &gy});
  check_local_response_normalization(op, x, n);
  for (const Tensor* t : {&y, &unit_scale, &gy}) {
    require_same_dtype(op, x, *t);
    if (t->shape() != x.shape())
      throw Error(str(op, ": an array has shape ", shape_str(t->shape()), " but x has shape ", shape_str(x.shape())));
  }
  Tensor gx = Tensor::empty(x.shape(), x.dtype(), device);
  if (x.numel() > 0) kernels_for(device).local_response_normalization_grad(x, y, unit_scale, gy, n, alpha, beta, gx);
  return gx;
}

namespace {
// T as the kernels take it: contiguous, NUMEL elements, LIKE's device and dtype (or undefined).
Tensor channel_operand(const char* op, const char* name, const Tensor& t, const Tensor& like, int64_t numel) {
  if (!t.defined()) return t;
  require_same_device(op, {&like, &t});
  require_same_dtype(op, like, t);
  if (t.numel() != numel)
    throw Error(str(op, ": ", name, " has shape ", shape_str(t.shape()), " (", t.numel(), " elements; expected ",
                    numel, ")"));
  return t.contiguous();
}
}  // namespace

Tensor channel_sums(const Tensor& a, const Tensor& b, const Tensor& center, const ChannelView& view) {
  const char* op = "channel_sums";
  const Device device = require_same_device(op, {&a});
  require_floating(op, a);
  const int64_t n = view.outer * view.channels * view.inner;
  const Tensor ac = channel_operand(op, "a", a, a, n);
  const Tensor bc = channel_operand(op, "b", b, a, n);
  const Tensor cc = channel_operand(op, "center", center, a, view.channels);
  Tensor sums = Tensor::zeros({2 * view.channels}, DType::Float64, device);
  if (n > 0) kernels_for(device).channel_sums(ac, bc, cc, view, sums);
  return sums;
}

Tensor channel_affine(const ChannelAffine& args, const ChannelView& view) {
  const char* op = "channel_affine";
  const Tensor& like = args.u.defined() ? args.u : args.v;
  if (!like.defined()) throw Error(str(op, ": u and v are both undefined"));
  const Device device = require_same_device(op, {&like});
  require_floating(op, like);
  const int64_t n = view.outer * view.channels * view.inner, c = view.channels;
  ChannelAffine k{channel_operand(op, "u", args.u, like, n), channel_operand(op, "s", args.s, like, c),
                  channel_operand(op, "v", args.v, like, n), channel_operand(op, "t", args.t, like, c),
                  channel_operand(op, "m", args.m, like, c), channel_operand(op, "d", args.d, like, c)};
  if (k.u.defined() != k.s.defined() || k.v.defined() != k.t.defined() || k.v.defined() != k.m.defined() ||
      !k.d.defined())
    throw Error(str(op, ": each array needs its coefficients (u: s; v: t and m) and d is required"));
  if (k.u.defined() && k.v.defined() && k.u.shape() != k.v.shape())
    throw Error(str(op, ": u and v have shapes ", shape_str(k.u.shape()), " and ", shape_str(k.v.shape())));
  Tensor out = Tensor::empty(like.shape(), like.dtype(), device);
  if (n > 0) kernels_for(device).channel_affine(k, view, out);
  return out;
}

Tensor accuracy(const Tensor& y, const Tensor& t, int64_t ignore_label) {
  const Device device = require_same_device("accuracy", {&y, &t});
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
  Tensor out = Tensor::empty({}, y.dtype(), device);
  kernels_for(device).accuracy(y, t, ignore_label, out);
  return out;
}

}  // namespace chainer::ops
