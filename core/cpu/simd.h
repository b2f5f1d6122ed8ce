// The vectors of the AVX2 and AVX-512 kernel families as one small interface: the packed GEMM
// (gemm.cpp) and the implicit convolutions (conv_implicit.cpp) are written once over it, and
// each family compiles them with its own vectors: 16 floats in a zmm register with opmask
// registers for masks, or 8 floats in a ymm register with masks held as vectors.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "core/cpu/kernels.h"

#if !defined(CHAINER_ISA_PACKED)
#error "core/cpu/simd.h belongs to the vector families (AVX2, AVX-512)"
#endif

namespace chainer::cpu::CHAINER_ISA::simd {

#if defined(CHAINER_ISA_AVX512)
inline constexpr int kLanes = 16;
// Whether masked loads and stores cost what plain ones do (AVX-512's opmasks), or more
// (AVX2's vmaskmovps; its stores take several times a plain store's time on AMD's cores).
inline constexpr bool kCheapMasks = true;
using Vec = __m512;
using IVec = __m512i;
using Mask = __mmask16;

// The lanes whose bits are set in BITS (lane l: bit l; bits past the last lane ignored).
inline Mask mask(uint32_t bits) { return Mask(bits); }
inline Mask mask_and(Mask a, Mask b) { return Mask(a & b); }
inline Vec zero() { return _mm512_setzero_ps(); }
inline Vec set1(float v) { return _mm512_set1_ps(v); }
inline Vec load(const float* p) { return _mm512_loadu_ps(p); }
inline void store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
// The lanes of M from P, zeros elsewhere; the other lanes read no memory (they may lie outside
// any object, so P is only an address).
inline Vec load_masked(Mask m, uintptr_t p) { return _mm512_maskz_loadu_ps(m, reinterpret_cast<const void*>(p)); }
// The lanes of M stored at P; the others write nothing.
inline void store_masked(float* p, Mask m, Vec v) { _mm512_mask_storeu_ps(p, m, v); }
inline Vec add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
inline Vec mul(Vec a, Vec b) { return _mm512_mul_ps(a, b); }
inline Vec fmadd(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
inline Vec bit_or(Vec a, Vec b) {
  return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(a), _mm512_castps_si512(b)));
}

// The sum of the lanes of V, in a fixed order. (maskz forms: the plain ones, and
// _mm512_reduce_add_ps, trip a false "uninitialized" warning in GCC 12's headers.)
inline float lane_sum(Vec v) {
  constexpr __mmask16 all = 0xffff;
  v = _mm512_add_ps(v, _mm512_maskz_shuffle_f32x4(all, v, v, 0x4E));  // 256-bit halves
  v = _mm512_add_ps(v, _mm512_maskz_shuffle_f32x4(all, v, v, 0xB1));  // 128-bit lanes
  v = _mm512_add_ps(v, _mm512_maskz_permute_ps(all, v, 0x4E));        // pairs within a lane
  v = _mm512_add_ps(v, _mm512_maskz_permute_ps(all, v, 0xB1));
  return _mm512_cvtss_f32(v);
}

// Transposes the 16x16 block held in r[0..15] (row i in r[i]) in place: afterwards r[j] holds
// column j. 64 shuffles instead of 256 scalar moves.
inline void transpose(Vec r[kLanes]) {
  __m512 t[16], u[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    u[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
    u[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  // u[4q + j] holds, in 128-bit lane L, column 4L + j of rows 4q..4q+3.
  for (int j = 0; j < 4; ++j) {
    const __m512 v = _mm512_shuffle_f32x4(u[j], u[4 + j], 0x88), w = _mm512_shuffle_f32x4(u[j], u[4 + j], 0xDD);
    const __m512 v2 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0x88), w2 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0xDD);
    r[j] = _mm512_shuffle_f32x4(v, v2, 0x88);
    r[4 + j] = _mm512_shuffle_f32x4(w, w2, 0x88);
    r[8 + j] = _mm512_shuffle_f32x4(v, v2, 0xDD);
    r[12 + j] = _mm512_shuffle_f32x4(w, w2, 0xDD);
  }
}

// 32-bit integers, for the gathers of strided windows.
inline IVec iset1(int32_t v) { return _mm512_set1_epi32(v); }
inline IVec iload(const int32_t* p) { return _mm512_loadu_si512(p); }
inline IVec iadd(IVec a, IVec b) { return _mm512_add_epi32(a, b); }
inline IVec isub(IVec a, IVec b) { return _mm512_sub_epi32(a, b); }
inline IVec imul(IVec a, IVec b) { return _mm512_mullo_epi32(a, b); }
// The lanes of M where 0 <= V < LIMIT.
inline Mask in_range(Mask m, IVec v, IVec limit) {
  m = _mm512_mask_cmpge_epi32_mask(m, v, _mm512_setzero_si512());
  return _mm512_mask_cmplt_epi32_mask(m, v, limit);
}
// BASE[OFFSET] in the lanes of M, zeros elsewhere (which read no memory).
inline Vec gather(Mask m, IVec offset, const float* base) {
  return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, offset, base, 4);
}

// kLanes half elements at P widened to float (exact): float16 with F16C's conversion, bfloat16
// (float32's top half) by a 16-bit shift. The masked forms read the lanes of M only; COUNT, the
// number of leading lanes M holds, is what AVX2's forms use.
inline Vec load_half(const float16* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
inline Vec load_half(const bfloat16* p) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16));
}
inline Vec load_half_masked(Mask m, int64_t, const float16* p) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p)); }
inline Vec load_half_masked(Mask m, int64_t, const bfloat16* p) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
}

#elif defined(CHAINER_ISA_AVX2)
inline constexpr int kLanes = 8;
inline constexpr bool kCheapMasks = false;
using Vec = __m256;
using IVec = __m256i;
using Mask = __m256i;  // all ones in the lanes on, zeros elsewhere (what vmaskmovps reads)

inline Mask mask(uint32_t bits) {
  const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(int32_t(bits & 0xff)), bit), bit);
}
inline Mask mask_and(Mask a, Mask b) { return _mm256_and_si256(a, b); }
inline Vec zero() { return _mm256_setzero_ps(); }
inline Vec set1(float v) { return _mm256_set1_ps(v); }
inline Vec load(const float* p) { return _mm256_loadu_ps(p); }
inline void store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
inline Vec load_masked(Mask m, uintptr_t p) { return _mm256_maskload_ps(reinterpret_cast<const float*>(p), m); }
inline void store_masked(float* p, Mask m, Vec v) { _mm256_maskstore_ps(p, m, v); }
inline Vec add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
inline Vec mul(Vec a, Vec b) { return _mm256_mul_ps(a, b); }
inline Vec fmadd(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline Vec bit_or(Vec a, Vec b) { return _mm256_or_ps(a, b); }

inline float lane_sum(Vec v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));  // 128-bit halves
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));                                           // pairs
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// The 8x8 block: 24 shuffles.
inline void transpose(Vec r[kLanes]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  // u[4q + j] holds, in 128-bit half H, column 4H + j of rows 4q..4q+3.
  for (int j = 0; j < 4; ++j) {
    r[j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x20);
    r[4 + j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x31);
  }
}

inline IVec iset1(int32_t v) { return _mm256_set1_epi32(v); }
inline IVec iload(const int32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline IVec iadd(IVec a, IVec b) { return _mm256_add_epi32(a, b); }
inline IVec isub(IVec a, IVec b) { return _mm256_sub_epi32(a, b); }
inline IVec imul(IVec a, IVec b) { return _mm256_mullo_epi32(a, b); }
inline Mask in_range(Mask m, IVec v, IVec limit) {
  m = _mm256_and_si256(m, _mm256_cmpgt_epi32(v, _mm256_set1_epi32(-1)));
  return _mm256_and_si256(m, _mm256_cmpgt_epi32(limit, v));
}
inline Vec gather(Mask m, IVec offset, const float* base) {
  return _mm256_mask_i32gather_ps(_mm256_setzero_ps(), base, offset, _mm256_castsi256_ps(m), 4);
}

inline Vec load_half(const float16* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline Vec load_half(const bfloat16* p) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
}
// AVX2 has no 16-bit masked load: the COUNT leading elements go through a zeroed buffer.
template <class T>
inline Vec load_half_masked(Mask, int64_t count, const T* p) {
  alignas(16) T buffer[kLanes];
  std::memset(buffer, 0, sizeof buffer);
  if (count > 0) std::memcpy(buffer, p, size_t(count < kLanes ? count : kLanes) * sizeof(T));
  return load_half(buffer);
}
#endif

inline void prefetch(const void* p) { _mm_prefetch(static_cast<const char*>(p), _MM_HINT_T0); }

}  // namespace chainer::cpu::CHAINER_ISA::simd
