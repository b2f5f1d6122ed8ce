// The half-precision types in the CUDA kernels (core/tensor/dtype.h): float16 and bfloat16 are
// CUDA's `__half` and `__nv_bfloat16` in device code. A kernel that computes on them loads each
// element as a float, computes in float and rounds the result once to the half type (CUDA's
// round-to-nearest-even intrinsics, the rounding of core/tensor/float16.h's host conversions), so
// a half result is the CPU's: core/cpu/ computes its half ops in float32 and rounds once too.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "core/tensor/dtype.h"
#include "core/tensor/tensor.h"
#include "core/util/error.h"

// Every floating dtype, with `scalar_t` bound to `__half` and `__nv_bfloat16` for the half types:
// the kernels that compute in half precision.
#define CHAINER_DISPATCH_FLOATING_AND_CUDA_HALF(DTYPE, OPNAME, ...) \
  CHAINER_DISPATCH_FLOATING_AND(DTYPE, OPNAME, __half, __nv_bfloat16, __VA_ARGS__)
// Every dtype, with `scalar_t` bound to `__half` and `__nv_bfloat16` for the half types: the
// kernels that only move, compare or select elements, and those that compute in every dtype.
#define CHAINER_DISPATCH_ALL_AND_CUDA_HALF(DTYPE, OPNAME, ...) \
  CHAINER_DISPATCH_ALL_AND(DTYPE, OPNAME, __half, __nv_bfloat16, __VA_ARGS__)

namespace chainer::cuda {

template <class T>
constexpr bool is_16bit = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

// The type a kernel on elements of T computes in: float for the half types, T itself otherwise
// (core/cpu/kernels.h's compute_t, for CUDA's types).
template <class T>
using compute_t = std::conditional_t<is_16bit<T>, float, T>;

__device__ inline float widen(__half x) { return __half2float(x); }
__device__ inline float widen(__nv_bfloat16 x) { return __bfloat162float(x); }

// X as compute_t<T>: widened (exactly) for the half types, itself otherwise.
template <class T>
__device__ compute_t<T> load(T x) {
  if constexpr (is_16bit<T>) return widen(x);
  else return x;
}

// X as a D. The 16-bit types go through float (exact) or come from float or double, rounded
// once; any other pair is the plain C++ conversion.
template <class D, class S>
__device__ D convert(S x) {
  if constexpr (std::is_same_v<D, S>) return x;
  else if constexpr (is_16bit<S>) return convert<D>(widen(x));
  else if constexpr (std::is_same_v<D, __half>) {
    if constexpr (std::is_same_v<S, float>) return __float2half_rn(x);
    else return __double2half(double(x));
  } else if constexpr (std::is_same_v<D, __nv_bfloat16>) {
    if constexpr (std::is_same_v<S, float>) return __float2bfloat16_rn(x);
    else return __double2bfloat16(double(x));
  } else {
    return D(x);
  }
}

// A double result (a sum accumulated in double) stored as T: rounded to float first for the half
// types, as the CPU computes them (a float32 result, then rounded to the half type).
template <class T>
__device__ T from_double(double x) {
  if constexpr (is_16bit<T>) return convert<T>(float(x));
  else return T(x);
}

// T's elements of a tensor of T's dtype: Tensor::data, which checks the dtype, for the host types;
// the same check and the raw pointer for CUDA's half types, which Tensor::data does not know.
template <class T>
void check_half_dtype(const Tensor& t) {
  constexpr DType expected = std::is_same_v<T, __half> ? DType::Float16 : DType::BFloat16;
  CHAINER_ASSERT(t.dtype() == expected, "a ", dtype_name(expected), " kernel got a ", dtype_name(t.dtype()), " tensor");
}
template <class T>
T* elements(Tensor& t) {
  if constexpr (is_16bit<T>) {
    check_half_dtype<T>(t);
    return static_cast<T*>(t.raw_data());
  } else {
    return t.data<T>();
  }
}
template <class T>
const T* elements(const Tensor& t) {
  if constexpr (is_16bit<T>) {
    check_half_dtype<T>(t);
    return static_cast<const T*>(t.raw_data());
  } else {
    return t.data<T>();
  }
}

}  // namespace chainer::cuda
