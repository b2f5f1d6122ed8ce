// Element types. An enum (not a template parameter) so that tensors of any type share one
// class and kernels dispatch at run time; float16 can join later without touching callers.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace chainer {

enum class DType : uint8_t { Float32, Float64, Int32, Int64, UInt8 };

size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);  // numpy's names: "float32", "int32", ...
bool is_floating(DType dtype);

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::Float32; }
template <> constexpr DType dtype_of<double>() { return DType::Float64; }
template <> constexpr DType dtype_of<int32_t>() { return DType::Int32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::Int64; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::UInt8; }

}  // namespace chainer

// Runs BODY with `scalar_t` bound to the C++ type of DTYPE (floating types only).
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

// Runs BODY with `scalar_t` bound to the C++ type of DTYPE (every dtype).
#define CHAINER_DISPATCH_ALL(DTYPE, OPNAME, ...)                                             \
  [&] {                                                                                      \
    switch (DTYPE) {                                                                         \
      case ::chainer::DType::Float32: { using scalar_t [[maybe_unused]] = float; return __VA_ARGS__(); }      \
      case ::chainer::DType::Float64: { using scalar_t [[maybe_unused]] = double; return __VA_ARGS__(); }     \
      case ::chainer::DType::Int32: { using scalar_t [[maybe_unused]] = int32_t; return __VA_ARGS__(); }      \
      case ::chainer::DType::Int64: { using scalar_t [[maybe_unused]] = int64_t; return __VA_ARGS__(); }      \
      case ::chainer::DType::UInt8: { using scalar_t [[maybe_unused]] = uint8_t; return __VA_ARGS__(); }      \
    }                                                                                        \
    throw ::chainer::Error(::chainer::str(OPNAME, ": unknown dtype"));                      \
  }()
