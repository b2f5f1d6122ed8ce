/// @file
/// Pair: an argument Chainer takes as an int or a pair of ints, (y, x) — the stride, padding,
/// dilation and kernel size of the 2-D convolutions and their links. Both `2` and `{2, 1}`
/// convert to it, so a call reads as the Python one (`F::convolution_2d(x, W, b, 2, {1, 0})`);
/// one type instead of an overload for each mix of int and pair arguments.
#pragma once
#include <cstdint>

namespace chainer::functions {

/// One extent per spatial axis, (y, x): Chainer's `int or pair of ints`.
struct Pair {
  int64_t y;  ///< along the height (Chainer's first element)
  int64_t x;  ///< along the width (Chainer's second element)
  /// The same value on both axes (Chainer's plain int).
  Pair(int64_t both) : y(both), x(both) {}  // NOLINT: implicit, as Python's `stride=2`
  /// ALONG_Y along the height, ALONG_X along the width.
  Pair(int64_t along_y, int64_t along_x) : y(along_y), x(along_x) {}
  /// Whether both axes are equal.
  bool operator==(const Pair&) const = default;
};

}  // namespace chainer::functions
