// How batch normalization's channel sums (core/cuda/normalization.cu) cut each channel of an
// (outer, channels, inner) view into pieces, a block each, and which elements of its piece each
// thread adds. Host and device code alike: the kernel walks pieces with it, and
// tests/core/cuda/test_channel_split.cpp checks on a machine without a GPU that every element of every
// channel is added exactly once, by its own channel's blocks.
#pragma once
#include <algorithm>
#include <cstdint>

#include "core/ops/kernels.h"

#ifdef __CUDACC__
#define CHAINER_HOST_DEVICE __host__ __device__
#else
#define CHAINER_HOST_DEVICE
#endif
#ifdef __CUDA_ARCH__
#define UNROLL_ON_DEVICE _Pragma("unroll 4")
#else
#define UNROLL_ON_DEVICE  // the host compiler has no such pragma
#endif

namespace chainer::cuda {

constexpr int kChannelThreads = 256;  // threads of a channel-sums block (common.cuh's kThreads)
constexpr int64_t kChannelTargetBlocks = 1024;  // a wave of 256-thread blocks fills an H100 (132 SMs x 8)
constexpr int64_t kChannelMinPiece = 4096;      // the fewest elements a piece holds (16 per thread)

struct ChannelSplit {
  int64_t rows = 1;        // rows per piece (the last piece of a channel may have fewer)
  int64_t width = 1;       // elements of a row per piece: INNER unless rows are cut
  int64_t row_pieces = 1;  // ceil(outer / rows)
  int64_t col_pieces = 1;  // ceil(inner / width)
  int64_t pieces() const { return row_pieces * col_pieces; }
};

inline ChannelSplit channel_split(const ChannelView& v) {
  const int64_t P = v.outer, Q = v.inner, n = P * Q;
  const int64_t by_size = (n + kChannelMinPiece - 1) / kChannelMinPiece;
  const int64_t by_blocks = std::max<int64_t>(1, kChannelTargetBlocks / std::max<int64_t>(v.channels, 1));
  const int64_t want = std::max<int64_t>(1, std::min(by_size, by_blocks));
  ChannelSplit s;
  if (want <= P) {  // whole rows: pieces of ceil(P / want) rows, none empty
    s.rows = (P + want - 1) / want;
    s.width = Q;
    s.row_pieces = (P + s.rows - 1) / s.rows;
    s.col_pieces = 1;
  } else {  // a row a piece is too few: each row cut in runs of a multiple of 32 elements
    const int64_t per_row = (want + P - 1) / P;
    s.rows = 1;
    s.width = ((Q + per_row - 1) / per_row + 31) / 32 * 32;
    s.row_pieces = P;
    s.col_pieces = (Q + s.width - 1) / s.width;
  }
  return s;
}

// The elements of piece J of channel C that thread T (of kChannelThreads) adds, in the order it
// adds them: F(flat index). Consecutive threads take consecutive elements of a row (coalesced
// loads), and no element costs a division. A piece of rows of W <= kChannelThreads elements is
// covered by the threads as a grid of kChannelThreads / W rows of W (the last
// kChannelThreads % W threads idle), each thread walking its column down the rows. A wider piece
// is read as its rows laid end to end, kChannelThreads elements at a time: a step crosses at most
// one row end, so (row, element) advances by a compare, and every thread gets the same count to
// within one. The loops are unrolled so that a thread has several loads in flight.
template <class F>
CHAINER_HOST_DEVICE void for_each_in_piece(const ChannelSplit& s, int64_t outer, int64_t channels, int64_t inner,
                                           int64_t c, int64_t j, int t, F&& f) {
  const int64_t rp = j / s.col_pieces, cp = j - rp * s.col_pieces;
  const int64_t p0 = rp * s.rows, p1 = p0 + s.rows < outer ? p0 + s.rows : outer;
  const int64_t q0 = cp * s.width, q1 = q0 + s.width < inner ? q0 + s.width : inner;
  const int64_t w = q1 - q0, row_step = channels * inner;  // >= 1; between a channel's rows
  if (w <= kChannelThreads) {
    const int tp = kChannelThreads / int(w), ty = t / int(w), tx = t - ty * int(w);
    if (ty >= tp) return;
    int64_t at = ((p0 + ty) * channels + c) * inner + q0 + tx;
UNROLL_ON_DEVICE
    for (int64_t p = p0 + ty; p < p1; p += tp, at += tp * row_step) f(at);
  } else {
    // Element k of the rows laid end to end is element q of a row at AT; q < q1 as
    // t < kChannelThreads < w.
    int64_t q = q0 + t, at = (p0 * channels + c) * inner + q;
UNROLL_ON_DEVICE
    for (int64_t k = t; k < (p1 - p0) * w; k += kChannelThreads) {
      f(at);
      q += kChannelThreads, at += kChannelThreads;
      // Q was below q1 + kChannelThreads, so now below q0 + kChannelThreads < q1.
      if (q >= q1) q -= w, at += row_step - w;
    }
  }
}

}  // namespace chainer::cuda

#undef UNROLL_ON_DEVICE
