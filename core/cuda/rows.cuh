// The row helpers of the row-wise CUDA kernels (softmax.cu, loss.cu): views (outer, len, inner)
// of a tensor along one axis, each row taken by a group of L threads.
#pragma once
#include <type_traits>

#include "core/cuda/common.cuh"

namespace chainer::cuda {

// The rows of a view are taken by groups of L threads: a warp when inner == 1 (a row is
// contiguous, lanes read consecutive elements), else one thread (consecutive threads read
// consecutive addresses). L is uniform over a warp, so the group reductions see every lane.
#define CHAINER_ROW_LOOP(row, rows, L)                                                                     \
  for (int64_t row = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / (L); row < (rows);                 \
       row += int64_t(gridDim.x) * blockDim.x / (L))

__device__ inline int64_t row_base(int64_t row, int64_t len, int64_t inner) {
  return (row / inner) * len * inner + row % inner;
}

// Calls LAUNCH with the lanes per row (as std::integral_constant) and the blocks covering V's rows.
template <class Launch>
void launch_rows(const AxisView& v, Launch&& launch) {
  if (v.inner == 1) launch(std::integral_constant<int, 32>(), blocks_for(v.rows(), kWarps));
  else launch(std::integral_constant<int, 1>(), blocks_for(v.rows()));
}

}  // namespace chainer::cuda
