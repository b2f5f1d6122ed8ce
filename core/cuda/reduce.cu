// Reductions: sums over any set of axes, the maximum or minimum (and its index) along one axis,
// and the sum of squares of a list of tensors. All are deterministic: each output is reduced by a
// fixed set of threads in a fixed tree (shuffles, then shared memory in index order), never with
// atomics, so a result depends only on the inputs and their shapes. Sums accumulate in double, as
// the CPU; a float16 or bfloat16 sum is rounded to float and then to the half type, as the CPU
// computes it (a float32 sum, rounded). The extremes of half elements are found among their
// float values (exact) and stored back exactly. A sum with few outputs over many elements (a full
// sum, the column sums of a tall matrix) is split over many blocks in two passes, the partition
// fixed by the shape alone.
#include <algorithm>
#include <type_traits>

#include "core/cuda/common.cuh"
#include "core/cuda/half.cuh"
#include "core/cuda/kernels.h"
#include "core/cuda/reduce.cuh"

namespace chainer::cuda {

namespace {

// The input offset of index I of an index space (kept or reduced dims with their input strides):
// Layout::offset without the outermost division (I < numel), so a 1-D space costs a multiply.
__device__ int64_t offset_in(const Layout& l, int64_t i) {
  int64_t off = 0;
  for (int d = l.nd - 1; d > 0; --d) {
    const int64_t q = i / l.shape[d];
    off += (i - q * l.shape[d]) * l.strides[d];
    i = q;
  }
  return l.nd > 0 ? off + i * l.strides[0] : off;
}

// ---- sum_axes ----

// Split sums.
// With few outputs, one block (or one warp) per output leaves most of the device idle: a sum of
// 10M floats on one block takes 0.5-1 ms where the whole device needs ~15 us. Then each
// output's reduced elements are cut into CHUNKS consecutive pieces of CHUNK elements (the last
// one shorter); pass 1 sums piece p of output o on block (x, p) into partials[o * CHUNKS + p]
// (double), pass 2 adds each output's partials in a fixed tree (sum_partials_kernel). CHUNKS
// depends only on the shape, so the result is the same on every device and every run.
constexpr int64_t kTargetBlocks = 1024;  // a wave of 256-thread blocks fills an H100 (132 SMs x 8)
constexpr int64_t kRowChunk = 4096;      // the fewest elements a block's piece of a row holds
constexpr int64_t kColumnChunk = 256;    // the fewest reduced rows a block's piece of 32 columns holds

// Pieces per output for OUTPUTS outputs reduced over COUNT elements, when BLOCKS blocks cover
// the outputs and a piece has at least MIN_CHUNK elements; 1 means no split.
int64_t chunks_for(int64_t blocks, int64_t count, int64_t min_chunk) {
  const int64_t by_size = (count + min_chunk - 1) / min_chunk;
  const int64_t by_blocks = std::max<int64_t>(1, kTargetBlocks / std::max<int64_t>(blocks, 1));
  return std::max<int64_t>(1, std::min(by_size, by_blocks));
}

// The innermost input dims are reduced: W warps per output stride over its reduced elements
// (consecutive lanes read consecutive elements), then sum by shuffles (and block_sum for W > 1).
// blockIdx.y picks the piece of CHUNK elements; with one piece (gridDim.y == 1) OUT is the
// result, else the partials (see "Split sums" above).
template <class T, int W, class R>
__global__ void sum_rows_kernel(const T* a, R* out, int64_t outputs, int64_t count, int64_t chunk, Layout kept,
                                Layout red) {
  constexpr int kPerBlock = kWarps / W;
  const int rank = int(threadIdx.x) % (32 * W);  // within this output's threads
  const int64_t begin = int64_t(blockIdx.y) * chunk, end = min(count, begin + chunk);
  for (int64_t base = int64_t(blockIdx.x) * kPerBlock; base < outputs; base += int64_t(gridDim.x) * kPerBlock) {
    const int64_t o = base + int64_t(threadIdx.x) / (32 * W);
    double s = 0;
    if (o < outputs) {
      const T* p = a + offset_in(kept, o);
      for (int64_t r = begin + rank; r < end; r += 32 * W) s += double(load(p[offset_in(red, r)]));
    }
    if constexpr (W == 1) s = warp_sum(s);
    else s = block_sum(s);  // BASE is uniform over the block, so every thread gets here
    if (rank == 0 && o < outputs) out[o * gridDim.y + blockIdx.y] = from_double<R>(s);
  }
}

// Pass 2 of a split sum: a warp per output adds its CHUNKS partials (lanes in index order, then
// the butterfly) and rounds once to T.
template <class T>
__global__ void sum_partials_kernel(const double* partials, int64_t outputs, int64_t chunks, T* out) {
  for (int64_t o = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32; o < outputs;
       o += int64_t(gridDim.x) * blockDim.x / 32) {
    const double s = warp_sum_of(partials + o * chunks, chunks);
    if (threadIdx.x % 32 == 0) out[o] = from_double<T>(s);
  }
}

// The innermost input dims are kept: a block holds 32 consecutive outputs (threadIdx.x, reading
// consecutive addresses), each summed by kSlices threads (threadIdx.y) over interleaved slices of
// its reduced elements; the slices' sums are then added in slice order. This is the bias
// gradient's (N, C) -> (C).
constexpr int kSlices = kThreads / 32;

// As sum_rows_kernel, blockIdx.y picks the piece of CHUNK reduced elements.
template <class T, class R>
__global__ void sum_columns_kernel(const T* a, R* out, int64_t outputs, int64_t count, int64_t chunk, Layout kept,
                                   Layout red) {
  __shared__ double slice_sums[kSlices][32];
  const int64_t begin = int64_t(blockIdx.y) * chunk, end = min(count, begin + chunk);
  for (int64_t base = int64_t(blockIdx.x) * 32; base < outputs; base += int64_t(gridDim.x) * 32) {
    const int64_t o = base + threadIdx.x;
    double s = 0;
    if (o < outputs) {
      const T* p = a + offset_in(kept, o);
      for (int64_t r = begin + threadIdx.y; r < end; r += kSlices) s += double(load(p[offset_in(red, r)]));
    }
    slice_sums[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && o < outputs) {
      double total = 0;
      for (int y = 0; y < kSlices; ++y) total += slice_sums[y][threadIdx.x];
      out[o * gridDim.y + blockIdx.y] = from_double<R>(total);
    }
    __syncthreads();  // slice_sums is rewritten by the next round
  }
}

// ---- max_axis ----

// A candidate for the first maximum. The CPU loop (start at element 0, replace on strict >) ends
// at element 0 when it is NaN, else at the first of the largest non-NaN values. Ranking NaN at
// index 0 above everything and later NaNs below everything, then by value, then by lower index,
// is a total order whose maximum is that element, so any reduction tree finds the same one.
template <class T>
struct Candidate {
  T v;
  int64_t at;  // < 0: no element seen
};

template <class T>
__device__ int nan_rank(const Candidate<T>& c) {
  if constexpr (std::is_floating_point_v<T>) {
    if (isnan(c.v)) return c.at == 0 ? 2 : 0;
  }
  return 1;
}

// The first maximum (IS_MAX) or, with the comparison of values reversed, the first minimum:
// the CPU's loop for min_axis replaces on strict < in the same way.
template <bool IS_MAX, class T>
__device__ Candidate<T> first_extreme(const Candidate<T>& x, const Candidate<T>& y) {
  if (x.at < 0 || y.at < 0) return x.at < 0 ? y : x;
  const int rx = nan_rank(x), ry = nan_rank(y);
  if (rx != ry) return rx > ry ? x : y;
  if (rx == 1 && x.v != y.v) return (IS_MAX ? x.v > y.v : x.v < y.v) ? x : y;
  return x.at < y.at ? x : y;
}

// L threads per output of an (outer, len, inner) view: a warp when inner == 1 (a row is
// contiguous), else one thread (consecutive threads read consecutive addresses). Candidates hold
// compute_t<T> values (a half element as its float).
template <bool IS_MAX, class T, int L>
__global__ void extreme_kernel(const T* a, int64_t outputs, int64_t len, int64_t inner, T* out, int32_t* argmax) {
  using C = compute_t<T>;
  const int lane = int(threadIdx.x) % L;
  for (int64_t q = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / L; q < outputs;
       q += int64_t(gridDim.x) * blockDim.x / L) {
    const T* p = a + (q / inner) * len * inner + q % inner;
    Candidate<C> best{C(0), -1};
    for (int64_t k = lane; k < len; k += L) best = first_extreme<IS_MAX>(best, Candidate<C>{load(p[k * inner]), k});
    for (int m = L / 2; m > 0; m /= 2)
      best = first_extreme<IS_MAX>(best, Candidate<C>{shfl_xor(best.v, m), shfl_xor(best.at, m)});
    if (lane == 0) {
      if (out) out[q] = convert<T>(best.v);
      if (argmax) argmax[q] = int32_t(best.at);
    }
  }
}

// ---- sum_of_squares ----

// Each tensor gets kPartials slots of the scratch (zeroed first): one per block of its launch.
constexpr int kPartials = 128;

template <class T>
__global__ void sum_squares_kernel(const T* x, int64_t n, double* partials) {
  double s = 0;
  CHAINER_GRID_STRIDE_LOOP(i, n) s += double(x[i]) * double(x[i]);
  s = block_sum(s);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

// One block of kPartials threads: each tensor's slots by a fixed tree, then the tensors' sums
// in list order (the CPU's order).
__global__ void sum_squares_finish_kernel(const double* partials, int64_t tensors, double* out) {
  __shared__ double warp_sums[kPartials / 32];
  double total = 0;
  for (int64_t j = 0; j < tensors; ++j) {
    const double s = warp_sum(partials[j * kPartials + threadIdx.x]);
    if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
      double tensor_sum = 0;
      for (int w = 0; w < kPartials / 32; ++w) tensor_sum += warp_sums[w];
      total += tensor_sum;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = total;
}

}  // namespace

void sum_axes(const Tensor& a, const std::vector<bool>& reduce, Tensor& out) {
  if (out.numel() == 0) return;
  if (a.numel() == 0) {  // sums of nothing; zero bits are 0 in every dtype
    CHAINER_CUDA_CHECK(cudaMemsetAsync(out.raw_data(), 0, out.nbytes(), compute_stream()));
    return;
  }
  // The contiguous input as a kept and a reduced index space: dims of extent 1 dropped, runs of
  // kept or of reduced dims merged, so the usual cases have 1-D spaces.
  const Tensor ac = a.contiguous();
  Layout kept, red;
  bool innermost_reduced = false, seen = false, last_reduced = false;
  int64_t outputs = 1, count = 1, stride = 1;
  for (int64_t d = a.ndim() - 1; d >= 0; --d) {
    const int64_t extent = a.shape()[size_t(d)];
    const bool r = reduce[size_t(d)];
    if (extent != 1) {
      Layout& l = r ? red : kept;
      if (seen && r == last_reduced) {
        l.shape[0] *= extent;  // merged with the run just inside it
      } else {
        if (l.nd == kMaxDims)
          throw Error(str("sum: too many alternating summed and kept axes in shape ", shape_str(a.shape())));
        for (int k = l.nd; k > 0; --k) l.shape[k] = l.shape[k - 1], l.strides[k] = l.strides[k - 1];
        l.shape[0] = extent, l.strides[0] = stride, ++l.nd;
      }
      if (!seen) innermost_reduced = r;
      seen = true, last_reduced = r;
      (r ? count : outputs) *= extent;
    }
    stride *= extent;
  }
  // Kept innermost dims: 32 outputs a block. Long rows: a block each. Short rows: a warp each.
  const int64_t out_blocks = blocks_for(outputs, !innermost_reduced ? 32 : count > 1024 ? 1 : kWarps);
  const int64_t chunks = !innermost_reduced ? chunks_for(out_blocks, count, kColumnChunk)
                         : count > 1024     ? chunks_for(out_blocks, count, kRowChunk)
                                            : 1;
  const int64_t chunk = (count + chunks - 1) / chunks;
  Tensor partials;
  if (chunks > 1) partials = Tensor::empty({outputs * chunks}, DType::Float64, Device::cuda(current_device_index()));
  CHAINER_DISPATCH_ALL_AND_CUDA_HALF(a.dtype(), "sum", [&] {
    using T = scalar_t;
    const T* pa = elements<T>(ac);
    T* po = elements<T>(out);
    // The one pass of an unsplit sum, writing the result, or pass 1 of a split one, the partials.
    auto launch = [&](auto* dst) {
      using R = std::remove_pointer_t<decltype(dst)>;
      const dim3 grid(static_cast<unsigned>(out_blocks), static_cast<unsigned>(chunks));
      if (!innermost_reduced) {
        sum_columns_kernel<T, R><<<grid, dim3(32, kSlices), 0, compute_stream()>>>(pa, dst, outputs, count, chunk, kept,
                                                                                  red);
        CHAINER_CUDA_CHECK_LAUNCH(sum_columns_kernel);
      } else if (count > 1024) {
        sum_rows_kernel<T, kWarps, R><<<grid, kThreads, 0, compute_stream()>>>(pa, dst, outputs, count, chunk, kept,
                                                                              red);
        CHAINER_CUDA_CHECK_LAUNCH(sum_rows_kernel);
      } else {
        sum_rows_kernel<T, 1, R><<<grid, kThreads, 0, compute_stream()>>>(pa, dst, outputs, count, chunk, kept, red);
        CHAINER_CUDA_CHECK_LAUNCH(sum_rows_kernel);
      }
    };
    if (chunks == 1) {
      launch(po);
      return;
    }
    double* pp = partials.data<double>();
    launch(pp);
    sum_partials_kernel<T><<<blocks_for(outputs, kWarps), kThreads, 0, compute_stream()>>>(pp, outputs, chunks, po);
    CHAINER_CUDA_CHECK_LAUNCH(sum_partials_kernel);
  });
}

namespace {
template <bool IS_MAX>
void extreme_axis(const char* op, const Tensor& a, int64_t axis, Tensor& out, Tensor* index) {
  const int64_t len = a.shape()[size_t(axis)];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= a.shape()[size_t(d)];
  for (int64_t d = axis + 1; d < a.ndim(); ++d) inner *= a.shape()[size_t(d)];
  const int64_t outputs = outer * inner;
  if (outputs == 0) return;
  const Tensor ac = a.contiguous();
  CHAINER_DISPATCH_ALL_AND_CUDA_HALF(a.dtype(), op, [&] {
    using T = scalar_t;
    const T* pa = elements<T>(ac);
    T* po = out.defined() ? elements<T>(out) : nullptr;
    int32_t* pi = index ? index->data<int32_t>() : nullptr;
    if (inner == 1) {
      extreme_kernel<IS_MAX, T, 32><<<blocks_for(outputs, kWarps), kThreads, 0, compute_stream()>>>(pa, outputs, len,
                                                                                                    inner, po, pi);
      CHAINER_CUDA_CHECK_LAUNCH(extreme_kernel);
    } else {
      extreme_kernel<IS_MAX, T, 1><<<blocks_for(outputs), kThreads, 0, compute_stream()>>>(pa, outputs, len, inner, po,
                                                                                           pi);
      CHAINER_CUDA_CHECK_LAUNCH(extreme_kernel);
    }
  });
}
}  // namespace

void max_axis(const Tensor& a, int64_t axis, Tensor& out, Tensor* argmax) {
  extreme_axis<true>("max", a, axis, out, argmax);
}

void min_axis(const Tensor& a, int64_t axis, Tensor& out, Tensor* argmin) {
  extreme_axis<false>("min", a, axis, out, argmin);
}

void sum_of_squares(const std::vector<Tensor>& xs, Tensor& out) {
  if (xs.empty()) {
    CHAINER_CUDA_CHECK(cudaMemsetAsync(out.raw_data(), 0, sizeof(double), compute_stream()));
    return;
  }
  const int64_t tensors = int64_t(xs.size());
  Tensor partials = Tensor::empty({tensors * kPartials}, DType::Float64, Device::cuda(current_device_index()));
  double* pp = partials.data<double>();
  // Slots that no block writes (small or empty tensors) must add nothing.
  CHAINER_CUDA_CHECK(cudaMemsetAsync(pp, 0, partials.nbytes(), compute_stream()));
  for (int64_t j = 0; j < tensors; ++j) {
    const Tensor x = xs[size_t(j)].contiguous();
    const int64_t n = x.numel();
    if (n == 0) continue;
    CHAINER_DISPATCH_FLOATING(x.dtype(), "sum_of_squares", [&] {
      using T = scalar_t;
      const unsigned blocks = std::min(blocks_for(n), unsigned(kPartials));
      sum_squares_kernel<T><<<blocks, kThreads, 0, compute_stream()>>>(x.data<T>(), n, pp + j * kPartials);
      CHAINER_CUDA_CHECK_LAUNCH(sum_squares_kernel);
    });
  }
  sum_squares_finish_kernel<<<1, kPartials, 0, compute_stream()>>>(pp, tensors, out.data<double>());
  CHAINER_CUDA_CHECK_LAUNCH(sum_squares_finish_kernel);
}

}  // namespace chainer::cuda
