// The packed GEMM's cache blocking (core/cpu/gemm.cpp), chosen at run time from the CPU's caches
// as OpenBLAS and oneDNN choose it per microarchitecture, and from the micro-tile of the kernel
// family in use (core/cpu/family.h): the same rule for the AVX2 and the AVX-512 kernels.
#pragma once
#include <cstdint>

namespace chainer::cpu {

// A micro-kernel's register tile: MR rows by NR columns of C.
struct GemmTile {
  int64_t mr, nr;
};

// The depth of a packed slice (KC) and the columns of C per work chunk (CW). The Zen 5 machines
// here (48 KiB L1d, 1 MiB L2) get 256 and 128 with the AVX-512 tile (14 x 32), the blocking
// measured best there; a Zen 4 (32 KiB L1d) gets 192 and 160.
struct GemmBlocking {
  int64_t kc, cw;
};

// The blocking of TILE for an L1d and an L2 of these sizes; KC_OVERRIDE (CHAINER_GEMM_KC, for
// measuring; null or empty: none) sets KC, a multiple of 16 from 16 to 512, else chainer::Error.
GemmBlocking gemm_blocking_for(GemmTile tile, int64_t l1d_bytes, int64_t l2_bytes, const char* kc_override);

// This CPU's blocking of TILE (its caches from sysconf, CHAINER_GEMM_KC from the environment).
GemmBlocking gemm_blocking_here(GemmTile tile);

}  // namespace chainer::cpu
