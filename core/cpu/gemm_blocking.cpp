#include "core/cpu/gemm_blocking.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "core/util/error.h"

namespace chainer::cpu {

// The A micro-panel (MR x KC) that the micro-kernel keeps in L1 takes at most a third of the L1
// data cache, the rest left to the B micro-panels streaming past; a chunk's packed B (KC x CW)
// takes an eighth of L2. Deeper slices also change where partial sums are rounded, so products
// may differ in the last bits between such machines (never run to run).
GemmBlocking gemm_blocking_for(GemmTile tile, int64_t l1d_bytes, int64_t l2_bytes, const char* kc_override) {
  int64_t kc = std::clamp<int64_t>(l1d_bytes / 3 / (tile.mr * int64_t(sizeof(float))) / 16 * 16, 64, 256);
  if (kc_override && *kc_override) {
    char* end = nullptr;
    const long v = std::strtol(kc_override, &end, 10);
    if (end == kc_override || *end != '\0' || v < 16 || v > 512 || v % 16 != 0)
      throw Error(str("gemm: CHAINER_GEMM_KC must be a multiple of 16 from 16 to 512, not '", kc_override, "'"));
    kc = v;
  }
  const int64_t cw = std::clamp<int64_t>(l2_bytes / 8 / (kc * int64_t(sizeof(float))) / tile.nr * tile.nr, tile.nr, 512);
  return {kc, cw};
}

namespace {
int64_t cache_bytes(int name, int64_t fallback) {
  const long v = sysconf(name);
  return v > 0 ? int64_t(v) : fallback;
}
}  // namespace

GemmBlocking gemm_blocking_here(GemmTile tile) {
  return gemm_blocking_for(tile, cache_bytes(_SC_LEVEL1_DCACHE_SIZE, 32 << 10), cache_bytes(_SC_LEVEL2_CACHE_SIZE, 1 << 20),
                           std::getenv("CHAINER_GEMM_KC"));
}

}  // namespace chainer::cpu
