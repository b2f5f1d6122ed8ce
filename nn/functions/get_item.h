/// @file
/// get_item: numpy indexing as chainer.functions.get_item (what `x[...]` is in Python). An index
/// is a list of entries, each an integer, a chainer::Slice, chainer::newaxis, chainer::ellipsis
/// (also reachable as F::Slice, F::newaxis, F::ellipsis) or one integer array:
///
///     F::get_item(x, 0)                                              // x[0]
///     F::get_item(x, {F::Slice(1, 5, 2), F::newaxis, F::ellipsis, -1})  // x[1:5:2, None, ..., -1]
///     F::get_item(x, {F::ellipsis, F::Slice(std::nullopt, std::nullopt, -1)})  // x[..., ::-1]
///     F::get_item(x, {F::Slice(), std::vector<int64_t>{2, 0, 2}})    // x[:, [2, 0, 2]]
///
/// A braced list is Python's tuple of entries; an integer array is spelled as a Tensor or a
/// std::vector<int64_t>. Integers, slices, newaxis and ellipsis select a strided view of x
/// (copied to a contiguous output unless the view is contiguous already, then shared, as
/// numpy's views). One integer array (int32, int64 or uint8, any shape; negative entries count
/// from the end; repeats allowed) gathers along its axis, and its gradient sums over repeated
/// entries. As in numpy, the array's axes replace the axis it indexes, or come first when
/// integers and the array are separated by a slice, newaxis or ellipsis (`x[0, :, [1, 2]]`).
///
/// Not supported, unlike Chainer (numpy): two or more integer arrays in one index, and boolean
/// masks (there is no bool dtype: take the positions of the true entries as an integer array).
/// Variable has no operator[]: Variable lives below the functions (autograd), and Tensor's
/// operator[] is a view of one row, not this function.
#pragma once
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <vector>

#include "autograd/variable.h"

namespace chainer {

/// One axis's slice start:stop:step, as Python's slice: an unset bound means the end the step
/// walks from or to, negative bounds count from the end, and bounds past the ends are clamped.
struct Slice {
  std::optional<int64_t> start;  ///< the first entry; unset: 0, or the last entry when step < 0
  std::optional<int64_t> stop;   ///< the entry to stop before; unset: past the end in the step's direction
  std::optional<int64_t> step;   ///< unset: 1; 0 is an error; negative walks backward

  Slice() = default;  ///< `:`, the whole axis
  /// Python's slice(stop): `:stop`.
  explicit Slice(std::optional<int64_t> end) : stop(end) {}
  /// Python's slice(start, stop, step): `start:stop:step`.
  Slice(std::optional<int64_t> begin, std::optional<int64_t> end, std::optional<int64_t> stride = std::nullopt)
      : start(begin), stop(end), step(stride) {}
};

/// The type of newaxis.
struct NewAxis {};
/// numpy.newaxis (None in an index): a new axis of extent 1.
inline constexpr NewAxis newaxis{};
/// The type of ellipsis.
struct Ellipsis {};
/// Python's Ellipsis (`...` in an index): as many `:` as the axes the other entries leave.
inline constexpr Ellipsis ellipsis{};

/// One entry of an index for F::get_item.
class Index {
 public:
  /// What an entry is.
  enum class Kind { Integer, Slice, NewAxis, Ellipsis, Array };

  /// One entry of an axis, which is dropped (any integer type but bool: numpy reads a bool as a mask).
  template <std::integral I>
    requires(!std::same_as<I, bool>)
  Index(I index) : kind_(Kind::Integer), integer_(int64_t(index)) {}
  Index(Slice slice) : kind_(Kind::Slice), slice_(slice) {}        ///< a strided range of an axis
  Index(NewAxis) : kind_(Kind::NewAxis) {}                         ///< a new axis of extent 1
  Index(Ellipsis) : kind_(Kind::Ellipsis) {}                       ///< the axes no other entry names
  /// An integer array (any integer dtype and shape, on any device) gathering along its axis.
  Index(Tensor indices) : kind_(Kind::Array), array_(std::move(indices)) {}
  /// An integer array of these host values, 1-D.
  Index(const std::vector<int64_t>& indices) : Index(Tensor::from_vector(indices)) {}

  Kind kind() const { return kind_; }                ///< what this entry is
  int64_t integer() const { return integer_; }       ///< the index of an Integer entry
  const chainer::Slice& slice() const { return slice_; }  ///< the slice of a Slice entry
  const Tensor& array() const { return array_; }     ///< the indices of an Array entry

 private:
  Kind kind_;
  int64_t integer_ = 0;
  chainer::Slice slice_;
  Tensor array_;
};

}  // namespace chainer

namespace chainer::functions {

using chainer::ellipsis;  // F::ellipsis, beside F::get_item
using chainer::newaxis;   // F::newaxis
using chainer::Slice;     // F::Slice

/// X[INDEX] for an index of one entry (see the file comment).
Variable get_item(const Variable& x, const Index& index);
/// X[entries...]: the entries of a Python tuple, as a braced list.
Variable get_item(const Variable& x, std::initializer_list<Index> slices);
/// X[entries...]: the entries of a Python tuple.
Variable get_item(const Variable& x, const std::vector<Index>& slices);

}  // namespace chainer::functions
