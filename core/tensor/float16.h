/// @file
/// float16 (IEEE 754 binary16) and bfloat16 as storage types: two bytes of bits with conversions
/// to and from the other element types, and no arithmetic. They exist to halve the bytes that
/// gradients take on the wire (CommunicatorOptions::allreduce_grad_dtype); kernels that compute
/// convert to float first and round back. Conversions round to nearest, ties to even: float16
/// overflows to infinity and has subnormals; bfloat16 has float32's range; NaN stays NaN (quiet).
/// A double is first rounded to float "to odd", which makes the second rounding exact (round to
/// odd with 2 or more extra bits then round to nearest is the correctly rounded result: Boldo and
/// Melquiond, "When double rounding is odd", 2005). These are the host conversions; CUDA kernels
/// use `__half` and `__nv_bfloat16` (core/cuda/elementwise.cu), which round the same way.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace chainer {

/// The bit-level host conversions behind float16 and bfloat16.
namespace half_bits {

/// The bits of F.
inline uint32_t bits_of(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return x;
}
/// The float with bits X.
inline float float_of(uint32_t x) {
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

/// F rounded to the nearest float16, as its bits. Integer arithmetic only, so the flush-to-zero
/// modes a library may set cannot change the result.
inline uint16_t from_float(float f) {
  uint32_t x = bits_of(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  if (x > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((x >> 13) & 0x3ffu));  // NaN: quiet, top of the payload
  if (x >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // 65520 (halfway above 65504) and up: infinity
  if (x >= 0x38800000u) {  // 2^-14 and up: normal; rebias the exponent, round away 13 bits
    const uint32_t r = x - (uint32_t(127 - 15) << 23);
    return uint16_t(sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13));  // a carry may reach the exponent: right
  }
  if (x < 0x33000000u) return uint16_t(sign);  // below 2^-25 (half the smallest subnormal): zero
  // A subnormal result: the 24-bit significand in units of 2^-24, rounded to an integer.
  const uint32_t exponent = x >> 23, significand = (x & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126 - exponent;  // 14 ... 24
  const uint32_t kept = significand >> shift, rest = significand & ((1u << shift) - 1), half = 1u << (shift - 1);
  return uint16_t(sign | (kept + (rest > half || (rest == half && (kept & 1u)))));  // 0x400 is the smallest normal
}

/// The float16 with bits H as a float (exact).
inline float to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16, exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return float_of(sign | 0x7f800000u | (mantissa << 13));  // infinity, NaN
  if (exponent != 0) return float_of(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
  return float_of(sign | bits_of(float(mantissa) * 0x1p-24f));  // zero, subnormal (exact: a normal float)
}

/// F rounded to the nearest bfloat16, as its bits.
inline uint16_t bfloat16_from_float(float f) {
  const uint32_t x = bits_of(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);  // NaN: quiet, sign and payload kept
  return uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);  // overflow rounds to infinity
}

/// The bfloat16 with bits B as a float (exact).
inline float bfloat16_to_float(uint16_t b) { return float_of(uint32_t(b) << 16); }

/// The bfloat16 with bits B as a double (exact): its subnormals, float subnormals too, are built
/// from their integer mantissa, since denormals-are-zero would read them as 0 in double(float).
inline double bfloat16_to_double(uint16_t b) {
  if ((b & 0x7f80u) != 0) return double(bfloat16_to_float(b));  // normal, infinity, NaN
  const double magnitude = double(b & 0x7fu) * 0x1p-133;
  return b & 0x8000u ? -magnitude : magnitude;
}

/// D rounded to float toward the odd neighbour when inexact (see the note at the top). Below
/// float's smallest normal the bits are counted as an integer: float(d) would be flushed to zero
/// there by the flush-to-zero mode the CPU kernels run with (core/util/parallel.h).
inline float round_to_odd(double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, 8);
  const uint64_t magnitude = bits & ~(uint64_t(1) << 63);
  if (magnitude < 0x3810000000000000ull) {  // |d| < 2^-126 (NaN and infinities are above)
    // |d| in units of the smallest float subnormal, 2^-149: exact for a normal double; a double
    // subnormal (which denormals-are-zero reads as 0) is far below one unit.
    const double units = magnitude < 0x0010000000000000ull ? 0.0 : std::fabs(d) * 0x1p149;
    uint32_t m = uint32_t(units);
    if (double(m) != units || (units == 0 && magnitude != 0)) m |= 1u;  // inexact: to odd
    return float_of(uint32_t(bits >> 32) & 0x80000000u ? 0x80000000u | m : m);
  }
  float f = float(d);
  if (double(f) != d && d == d) {
    uint32_t x = bits_of(f);
    if ((x & 1u) == 0) x = std::fabs(double(f)) < std::fabs(d) ? x + 1 : x - 1;
    f = float_of(x);
  }
  return f;
}

/// The float to round from for a value V of any element type.
template <class T>
float narrowing_source(T v) {
  if constexpr (std::is_same_v<T, float>) return v;
  else return round_to_odd(double(v));
}

}  // namespace half_bits

/// IEEE 754 binary16 as a storage type: conversions, no arithmetic.
struct float16 {
  uint16_t bits;  ///< sign, 5 exponent bits, 10 mantissa bits
  float16() = default;  ///< uninitialized bits
  /// V rounded to the nearest float16.
  template <class T>
  explicit float16(T v) : bits(half_bits::from_float(half_bits::narrowing_source(v))) {}
  /// The float16 with bits B.
  static float16 from_bits(uint16_t b) {
    float16 h;
    h.bits = b;
    return h;
  }
  /// The value converted to T (through float, which holds it exactly).
  template <class T>
  explicit operator T() const { return T(half_bits::to_float(bits)); }
};

/// bfloat16 (float32's top 16 bits) as a storage type: conversions, no arithmetic.
struct bfloat16 {
  uint16_t bits;  ///< sign, 8 exponent bits, 7 mantissa bits
  bfloat16() = default;  ///< uninitialized bits
  /// V rounded to the nearest bfloat16.
  template <class T>
  explicit bfloat16(T v) : bits(half_bits::bfloat16_from_float(half_bits::narrowing_source(v))) {}
  /// The bfloat16 with bits B.
  static bfloat16 from_bits(uint16_t b) {
    bfloat16 h;
    h.bits = b;
    return h;
  }
  /// The value converted to T (through float, which holds it exactly).
  template <class T>
  explicit operator T() const {
    if constexpr (std::is_same_v<T, double>) return half_bits::bfloat16_to_double(bits);
    else return T(half_bits::bfloat16_to_float(bits));
  }
};

// N contiguous elements at once, with the results of the conversions above: the loops of
// packing gradients and of the 16-bit MPI sum. On CPUs with F16C (every one with AVX2) float16
// converts 8 elements per instruction, about 20 times faster than element by element (the CPU
// kernels' conversions, core/cpu/convert.cpp).
void widen(const float16* src, float* dst, int64_t n);  ///< N float16 at SRC to floats at DST
void widen(const bfloat16* src, float* dst, int64_t n);  ///< N bfloat16 at SRC to floats at DST
void narrow(const float* src, float16* dst, int64_t n);  ///< N floats at SRC rounded to float16 at DST
void narrow(const float* src, bfloat16* dst, int64_t n);  ///< N floats at SRC rounded to bfloat16 at DST

}  // namespace chainer
