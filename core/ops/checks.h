// The argument checks that the op families of core/ops/ share: each throws chainer::Error naming
// the op OP and the offending values, so that every op words one mistake the same way. Private to
// the library (not installed); the checks of a single family stay in its source.
#pragma once
#include <initializer_list>

#include "core/tensor/tensor.h"

namespace chainer::ops::detail {

// T is defined.
void require_defined(const char* op, const Tensor& t);
// Every tensor defined and on one device; returns it.
Device require_same_device(const char* op, std::initializer_list<const Tensor*> ts);
// A and B have one dtype.
void require_same_dtype(const char* op, const Tensor& a, const Tensor& b);
// float32 or float64: for the ops that do not compute in half precision (core/tensor/dtype.h).
void require_floating(const char* op, const Tensor& a);
// float32, float64, float16 or bfloat16: for the ops that also compute in half precision.
void require_floating_or_half(const char* op, const Tensor& a);

}  // namespace chainer::ops::detail
