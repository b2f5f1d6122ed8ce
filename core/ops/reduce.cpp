// The reductions: sum, and the max, min and their indices along one axis or over several; with
// sum_to, the sum that undoes a broadcast, and broadcast_to, its adjoint (whose kernel is a copy,
// broadcast_copy, in the elementwise files). The kernels are in core/cpu/reduce.cpp and
// core/cuda/reduce.cu.
#include "core/ops/ops.h"

#include "core/ops/checks.h"
#include "core/ops/kernels.h"

namespace chainer::ops {

using detail::require_same_device;

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

}  // namespace chainer::ops
