// Deterministic warp and block reductions shared by the reduction and nn kernels: a fixed
// butterfly within a warp, then the warps' partial results added in order by thread 0, so a sum
// depends only on its inputs and the launch shape, never on timing.
#pragma once
#include "core/cuda/common.cuh"

namespace chainer::cuda {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kWarps = kThreads / 32;

template <class A>
__device__ A shfl_xor(A v, int lane_mask) {
  if constexpr (sizeof(A) < sizeof(int)) return A(__shfl_xor_sync(kFullMask, int(v), lane_mask));
  else return __shfl_xor_sync(kFullMask, v, lane_mask);
}

// Butterfly reductions over groups of L lanes (1 or 32): every lane of a group ends with the same
// bits. fmax, unlike std::max, is symmetric in NaN, so the lanes agree on the maximum too.
template <int L, class A>
__device__ A group_sum(A v) {
  for (int m = L / 2; m > 0; m /= 2) v += shfl_xor(v, m);
  return v;
}
template <int L, class A>
__device__ A group_max(A v) {
  for (int m = L / 2; m > 0; m /= 2) v = fmax(v, shfl_xor(v, m));
  return v;
}
template <class A>
__device__ A warp_sum(A v) {
  return group_sum<32>(v);
}

// The sum of P[0, N) by one warp: lane l adds P[l], P[l + 32], ... in order, then the butterfly,
// so every lane gets the same bits. Every lane of the warp must call it. The second pass of a
// reduction split over blocks (core/cuda/reduce.cu, "Split sums").
template <class A>
__device__ A warp_sum_of(const A* p, int64_t n) {
  A s = 0;
  for (int64_t i = threadIdx.x % 32; i < n; i += 32) s += p[i];
  return warp_sum(s);
}

// Blocks for a reduction of N items into one result, done in two passes when more than one: one
// block per ITEMS_PER_BLOCK items, at most MAX_BLOCKS. A function of N alone, so the partition,
// and with it the rounding, is the same on every device and every run.
inline unsigned partial_blocks(int64_t n, int64_t items_per_block, int64_t max_blocks) {
  const int64_t b = (n + items_per_block - 1) / items_per_block;
  return unsigned(b < 1 ? 1 : b > max_blocks ? max_blocks : b);
}

// Sum over a block of kThreads: warps by shuffles, then thread 0 adds the warps' sums in order.
// The result is valid in thread 0; every thread of the block must call it.
template <class A>
__device__ A block_sum(A v) {
  __shared__ A warp_sums[kWarps];
  v = warp_sum(v);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  A total = 0;
  if (threadIdx.x == 0)
    for (int w = 0; w < kWarps; ++w) total += warp_sums[w];
  __syncthreads();  // warp_sums is free for the next call
  return total;
}

}  // namespace chainer::cuda
