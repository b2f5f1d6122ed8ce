// The argument checks several op families share (core/ops/checks.h), and broadcast_shapes
// (core/ops/ops.h), the shape rule of both the elementwise ops and broadcast_to.
#include "core/ops/checks.h"

#include <algorithm>

#include "core/ops/ops.h"

namespace chainer::ops {

namespace detail {
void require_defined(const char* op, const Tensor& t) {
  if (!t.defined()) throw Error(str(op, ": an input tensor is undefined"));
}

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

void require_floating(const char* op, const Tensor& a) {
  if (is_half(a.dtype()))
    throw Error(str(op, ": dtype ", dtype_name(a.dtype()), " is not supported (expected float32 or float64: ", op,
                    " computes in full precision; convert with astype(DType::Float32))"));
  if (!is_floating(a.dtype()))
    throw Error(str(op, ": dtype ", dtype_name(a.dtype()), " is not supported (expected float32 or float64)"));
}

void require_floating_or_half(const char* op, const Tensor& a) {
  if (!is_floating(a.dtype()))
    throw Error(str(op, ": dtype ", dtype_name(a.dtype()),
                    " is not supported (expected a floating dtype: float32, float64, float16 or bfloat16)"));
}
}  // namespace detail

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

}  // namespace chainer::ops
