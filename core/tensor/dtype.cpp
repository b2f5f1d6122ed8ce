#include "core/tensor/dtype.h"

#include "core/cpu/family.h"
#include "core/util/error.h"

namespace chainer {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::Float32: return 4;
    case DType::Float64: return 8;
    case DType::Int32: return 4;
    case DType::Int64: return 8;
    case DType::UInt8: return 1;
    case DType::Float16: return 2;
    case DType::BFloat16: return 2;
  }
  CHAINER_ASSERT(false, "unknown dtype");
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::UInt8: return "uint8";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";  // ml_dtypes' name (numpy has none)
  }
  return "unknown";
}

bool is_floating(DType dtype) { return dtype == DType::Float32 || dtype == DType::Float64 || is_half(dtype); }

bool is_half(DType dtype) { return dtype == DType::Float16 || dtype == DType::BFloat16; }

// float16's: the CPU kernel family's, with F16C where the CPU has it (core/cpu/convert.cpp).
void widen(const float16* src, float* dst, int64_t n) { cpu::kernel_family().widen_half(src, dst, n); }

void narrow(const float* src, float16* dst, int64_t n) { cpu::kernel_family().narrow_half(src, dst, n); }

// bfloat16's conversions are a shift and an add: the compiler vectorizes these loops itself.
void widen(const bfloat16* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = float(src[i]);
}

void narrow(const float* src, bfloat16* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = bfloat16(src[i]);
}

}  // namespace chainer
