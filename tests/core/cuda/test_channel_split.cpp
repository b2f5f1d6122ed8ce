// Batch normalization's channel sums on CUDA cut each channel into pieces, a block each, and
// walk each piece with 256 threads (core/cuda/channel_split.h). The partition and the walk are
// host code too, so here, without a GPU: every element of every channel is added exactly once,
// by a thread of one of its own channel's blocks, each thread's elements in increasing order, and
// the pieces' sums add up to the channel's sum.
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "core/cuda/channel_split.h"

using chainer::ChannelView;
using chainer::cuda::channel_split;
using chainer::cuda::ChannelSplit;
using chainer::cuda::for_each_in_piece;
using chainer::cuda::kChannelThreads;

namespace {

// What is wrong with the partition of V ("" when nothing is). Checks up to 12 channels.
std::string partition_fault(const ChannelView& v) {
  const ChannelSplit s = channel_split(v);
  const int64_t P = v.outer, C = v.channels, Q = v.inner, n = P * C * Q;
  if (s.pieces() < 1 || s.pieces() > 65535) return "pieces out of a grid's y range";
  if ((s.row_pieces - 1) * s.rows >= P || (s.col_pieces - 1) * s.width >= Q) return "an empty piece";
  std::vector<uint8_t> seen(size_t(n), 0);
  std::vector<double> value(static_cast<size_t>(n));
  std::mt19937_64 rng(uint64_t(P * 31 + C * 7 + Q));
  for (double& x : value) x = double(rng() % 1000) - 500;  // integers: sums exact in any order
  const int64_t checked = C < 12 ? C : 12;
  for (int64_t k = 0; k < checked; ++k) {
    const int64_t c = C <= 12 ? k : (k * 7919) % C;
    double total = 0;
    for (int64_t j = 0; j < s.pieces(); ++j)
      for (int t = 0; t < kChannelThreads; ++t) {
        int64_t previous = -1;
        std::string fault;
        for_each_in_piece(s, P, C, Q, c, j, t, [&](int64_t at) {
          if (at < 0 || at >= n) fault = "an index out of the view";
          else if ((at / Q) % C != c) fault = "an element of another channel";
          else if (at <= previous) fault = "a thread's elements out of order";
          else if (seen[size_t(at)]++) fault = "an element added twice";
          else total += value[size_t(at)];
          previous = at;
        });
        if (!fault.empty()) return fault;
      }
    double want = 0;
    for (int64_t p = 0; p < P; ++p)
      for (int64_t q = 0; q < Q; ++q) {
        const size_t at = size_t((p * C + c) * Q + q);
        if (seen[at] != 1) return "an element never added";
        want += value[at];
      }
    if (total != want) return "the pieces' sums differ from the channel's";
  }
  return "";
}

}  // namespace

TEST_CASE("channel split: the views of a CNN, wide rows cut in runs, one column, one channel, one pass") {
  const std::vector<ChannelView> views = {
      {128, 32, 784},  // a CNN layer: 22 pieces of 6 rows
      {64, 64, 196},   // rows narrower than a block
      {1, 4, 262147},  // one image: rows cut in runs of a multiple of 32
      {3, 1, 333331},  // fewer rows than pieces, uneven runs
      {100003, 3, 1},  // inner 1 (a linear layer's output)
      {4097, 1, 1},    // one channel, one element past a piece
      {2049, 33, 1},   // rows of one element
      {33, 1, 4099},   // rows just wider than a piece
      {7, 2, 1031},    // rows wider than a block, a few each
      {5001, 2, 3},    // rows far narrower than a block
      {3, 2049, 1},    // enough channels for one pass
      {2, 3, 4},       // one pass
      {1, 1, 1},
      {1, 1, 4096},
      {1, 1, 4097},
      {4096, 1, 1},
      {1, 3, 255},
  };
  for (const ChannelView& v : views) {
    const ChannelSplit s = channel_split(v);
    INFO("(" << v.outer << ", " << v.channels << ", " << v.inner << "): rows " << s.rows << ", width " << s.width
             << ", " << s.row_pieces << " x " << s.col_pieces << " pieces");
    CHECK(partition_fault(v) == "");
  }
  // The CNN layer fills the device instead of taking 32 blocks; enough channels take one pass.
  CHECK(channel_split({128, 32, 784}).pieces() * 32 >= 512);
  CHECK(channel_split({3, 2049, 1}).pieces() == 1);
  CHECK(channel_split({1, 1, 4096}).pieces() == 1);
}

TEST_CASE("channel split: random views of every kind cover each element once") {
  std::mt19937_64 rng(1);
  auto upto = [&](int64_t hi) { return int64_t(1 + rng() % uint64_t(hi)); };
  for (int i = 0; i < 400; ++i) {
    ChannelView v;
    switch (i % 4) {
      case 0: v = {upto(200), upto(20), upto(2000)}; break;
      case 1: v = {upto(3), upto(4), upto(60000)}; break;  // few rows: runs
      case 2: v = {upto(60000), upto(4), upto(3)}; break;  // narrow rows
      default: v = {upto(30), upto(2000), upto(30)};       // many channels
    }
    INFO("(" << v.outer << ", " << v.channels << ", " << v.inner << ")");
    REQUIRE(partition_fault(v) == "");
  }
}
