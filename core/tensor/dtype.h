/// @file
/// Element types. An enum (not a template parameter) so that tensors of any type share one
/// class and kernels dispatch at run time.
///
/// Float16 and BFloat16 are the half-precision types (core/tensor/float16.h). Besides being made,
/// converted, saved and summed by the communicators, they are computed in by the ops of mixed
/// precision: the elementwise ops and activations, matrix products, convolutions, pooling,
/// dropout and the sums, which read and write half and compute in float32 (PyTorch's autocast
/// policy: docs/mixed_precision.md lists the ops). The others (softmax, the losses, the
/// normalizations, the optimizer updates) take float32 or float64 only; the functions of
/// nn/functions widen half inputs for them. Their codes follow UInt8, so the codes that travel in
/// messages and files keep their meaning.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/tensor/float16.h"

namespace chainer {

/// The element type of a tensor (numpy's dtype); the codes are stable.
enum class DType : uint8_t { Float32, Float64, Int32, Int64, UInt8, Float16, BFloat16 };
/// One past the largest code: a code read from a message or file is valid below it.
constexpr int kDTypeCount = 7;

size_t dtype_size(DType dtype);       ///< bytes per element
const char* dtype_name(DType dtype);  ///< numpy's names: "float32", "int32", ..., "float16", "bfloat16"
bool is_floating(DType dtype);        ///< true for float16, bfloat16, float32, float64
bool is_half(DType dtype);            ///< true for float16 and bfloat16, the half-precision types

/// The DType of C++ element type T.
template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::Float32; }  ///< float32
template <> constexpr DType dtype_of<double>() { return DType::Float64; }  ///< float64
template <> constexpr DType dtype_of<int32_t>() { return DType::Int32; }  ///< int32
template <> constexpr DType dtype_of<int64_t>() { return DType::Int64; }  ///< int64
template <> constexpr DType dtype_of<uint8_t>() { return DType::UInt8; }  ///< uint8
template <> constexpr DType dtype_of<float16>() { return DType::Float16; }  ///< float16
template <> constexpr DType dtype_of<bfloat16>() { return DType::BFloat16; }  ///< bfloat16

}  // namespace chainer

/// Runs BODY with `scalar_t` bound to the C++ type of DTYPE (float32 and float64 only).
#define CHAINER_DISPATCH_FLOATING(DTYPE, OPNAME, ...)                                        \
  [&] {                                                                                      \
    switch (DTYPE) {                                                                         \
      case ::chainer::DType::Float32: { using scalar_t [[maybe_unused]] = float; return __VA_ARGS__(); }      \
      case ::chainer::DType::Float64: { using scalar_t [[maybe_unused]] = double; return __VA_ARGS__(); }     \
      default:                                                                               \
        throw ::chainer::Error(::chainer::str(OPNAME, ": dtype ", ::chainer::dtype_name(DTYPE), \
                                              " is not supported (expected float32 or float64)")); \
    }                                                                                        \
  }()

/// Every floating dtype, with `scalar_t` bound to HALF_T for float16 and BFLOAT16_T for bfloat16:
/// the kernels that compute in half precision.
#define CHAINER_DISPATCH_FLOATING_AND(DTYPE, OPNAME, HALF_T, BFLOAT16_T, ...)                \
  [&] {                                                                                      \
    switch (DTYPE) {                                                                         \
      case ::chainer::DType::Float16: { using scalar_t [[maybe_unused]] = HALF_T; return __VA_ARGS__(); }     \
      case ::chainer::DType::BFloat16: { using scalar_t [[maybe_unused]] = BFLOAT16_T; return __VA_ARGS__(); } \
      default: return CHAINER_DISPATCH_FLOATING(DTYPE, OPNAME, __VA_ARGS__);                 \
    }                                                                                        \
  }()
/// CHAINER_DISPATCH_FLOATING_AND with the host types chainer::float16 and chainer::bfloat16.
#define CHAINER_DISPATCH_FLOATING_AND_HALF(DTYPE, OPNAME, ...) \
  CHAINER_DISPATCH_FLOATING_AND(DTYPE, OPNAME, ::chainer::float16, ::chainer::bfloat16, __VA_ARGS__)

/// Runs BODY with `scalar_t` bound to the C++ type of DTYPE: every dtype but the half-precision
/// ones, which throw naming OPNAME; the kernels that take them too dispatch through
/// CHAINER_DISPATCH_ALL_AND_16BIT or CHAINER_DISPATCH_FLOATING_AND_HALF.
#define CHAINER_DISPATCH_ALL(DTYPE, OPNAME, ...)                                             \
  [&] {                                                                                      \
    switch (DTYPE) {                                                                         \
      case ::chainer::DType::Float32: { using scalar_t [[maybe_unused]] = float; return __VA_ARGS__(); }      \
      case ::chainer::DType::Float64: { using scalar_t [[maybe_unused]] = double; return __VA_ARGS__(); }     \
      case ::chainer::DType::Int32: { using scalar_t [[maybe_unused]] = int32_t; return __VA_ARGS__(); }      \
      case ::chainer::DType::Int64: { using scalar_t [[maybe_unused]] = int64_t; return __VA_ARGS__(); }      \
      case ::chainer::DType::UInt8: { using scalar_t [[maybe_unused]] = uint8_t; return __VA_ARGS__(); }      \
      case ::chainer::DType::Float16:                                                        \
      case ::chainer::DType::BFloat16: break;                                                \
    }                                                                                        \
    throw ::chainer::Error(::chainer::str(OPNAME, ": dtype ", ::chainer::dtype_name(DTYPE),  \
                                          " is not supported (this op computes in float32 or float64: " \
                                          "convert with astype(DType::Float32) first)"));    \
  }()

/// Every dtype, with `scalar_t` bound to HALF_T for float16 and BFLOAT16_T for bfloat16: the host
/// types of core/tensor/float16.h (CHAINER_DISPATCH_ALL_AND_16BIT), or CUDA's `__half` and `__nv_bfloat16`.
#define CHAINER_DISPATCH_ALL_AND(DTYPE, OPNAME, HALF_T, BFLOAT16_T, ...)                     \
  [&] {                                                                                      \
    switch (DTYPE) {                                                                         \
      case ::chainer::DType::Float16: { using scalar_t [[maybe_unused]] = HALF_T; return __VA_ARGS__(); }     \
      case ::chainer::DType::BFloat16: { using scalar_t [[maybe_unused]] = BFLOAT16_T; return __VA_ARGS__(); } \
      default: return CHAINER_DISPATCH_ALL(DTYPE, OPNAME, __VA_ARGS__);                      \
    }                                                                                        \
  }()
/// Every dtype, with `scalar_t` bound to chainer::float16 and chainer::bfloat16 for the half types.
#define CHAINER_DISPATCH_ALL_AND_16BIT(DTYPE, OPNAME, ...) \
  CHAINER_DISPATCH_ALL_AND(DTYPE, OPNAME, ::chainer::float16, ::chainer::bfloat16, __VA_ARGS__)
