#include "core/tensor/shape.h"

#include "core/util/error.h"

namespace chainer {

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n))
      throw Error(str("shape ", shape_str(shape), " has more elements than a 64-bit count can hold"));
  return n;
}

std::string shape_str(const Shape& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

int64_t normalize_axis(int64_t axis, int64_t ndim, const char* op) {
  if (axis < -ndim || axis >= ndim)
    throw Error(str(op, ": axis ", axis, " is out of range for an array of ", ndim, " dimensions"));
  return axis < 0 ? axis + ndim : axis;
}

AxisView axis_view(const Shape& shape, int64_t axis) {
  AxisView v;
  v.len = shape[size_t(axis)];
  for (int64_t d = 0; d < axis; ++d) v.outer *= shape[size_t(d)];
  for (int64_t d = axis + 1; d < int64_t(shape.size()); ++d) v.inner *= shape[size_t(d)];
  return v;
}

}  // namespace chainer
