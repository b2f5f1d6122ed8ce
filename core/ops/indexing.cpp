// Selecting and joining along an axis: take_rows (rows of a batch, whose kernel is a copy in the
// elementwise files), take and its gradient scatter_add_, and concat and stack, which are copies
// into views and call no kernel of their own. The kernels of take and scatter_add are in
// core/cpu/indexing.cpp and core/cuda/indexing.cu.
#include "core/ops/ops.h"

#include "core/ops/checks.h"
#include "core/ops/kernels.h"

namespace chainer::ops {

using detail::require_defined;
using detail::require_same_device;
using detail::require_same_dtype;
using detail::require_floating;

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

}  // namespace chainer::ops
