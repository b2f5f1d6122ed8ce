/// @file
/// Array manipulation, as chainer.functions.reshape / flatten / transpose / concat / stack /
/// broadcast_to / expand_dims / squeeze / split_axis (indexing is get_item.h). Outputs are contiguous; reshape,
/// flatten, expand_dims and squeeze of a contiguous input share its memory, as numpy's.
///
/// Braced lists of integers are lists of axes or split points: `F::squeeze(x, {})` removes no
/// axis and `F::split_axis(x, {3}, 0)` splits at index 3, as Python's `()` and `[3]`.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "autograd/variable.h"

namespace chainer::functions {

/// X with SHAPE, of the same number of elements; one extent may be -1.
Variable reshape(const Variable& x, const Shape& shape);
/// X as a 1-D array of all its elements, as Chainer's flatten (the batch axis too: to keep it,
/// as before a Linear layer, use `reshape(x, {n, -1})`).
Variable flatten(const Variable& x);
/// X with its axes permuted by AXES; the default reverses the axes.
Variable transpose(const Variable& x, const std::vector<int64_t>& axes = {});
/// XS joined along the existing AXIS; Chainer's default axis is 1.
Variable concat(const std::vector<Variable>& xs, int64_t axis = 1);
/// XS, of one shape, joined along a new axis AXIS.
Variable stack(const std::vector<Variable>& xs, int64_t axis = 0);

/// X broadcast to SHAPE by numpy's rules (a copy); the gradient is summed back to x's shape.
Variable broadcast_to(const Variable& x, const Shape& shape);
/// X with a new axis of extent 1 at AXIS, in [-ndim - 1, ndim] (negative counts from the end of
/// the result).
Variable expand_dims(const Variable& x, int64_t axis);
/// X without any of its axes of extent 1 (Chainer's `axis=None`).
Variable squeeze(const Variable& x);
/// X without AXIS, which must have extent 1.
Variable squeeze(const Variable& x, int64_t axis);
/// X without the axes AXES, each of extent 1 and named once (none when AXES is empty).
Variable squeeze(const Variable& x, const std::vector<int64_t>& axes);
/// X without the axes AXES (a braced list: `{}` removes none, unlike `axis=None`).
Variable squeeze(const Variable& x, std::initializer_list<int64_t> axes);

/// X split along AXIS into SECTIONS pieces of equal extent (SECTIONS must divide it), as
/// chainer.functions.split_axis with an integer. The gradient joins the pieces' gradients, zeros
/// for pieces that got none. Chainer's force_tuple has no counterpart: the result is always a
/// vector, of one variable when SECTIONS is 1.
std::vector<Variable> split_axis(const Variable& x, int64_t sections, int64_t axis);
/// X split along AXIS before each of INDICES (numpy.split): piece i is x[indices[i-1]:indices[i]]
/// with Python's slice rules (negative indices count from the end, bounds past the end are
/// clamped; equal ones give empty pieces), so there are INDICES.size() + 1 pieces. The indices
/// must be sorted once resolved, and the last must not exceed the extent (Chainer's checks).
std::vector<Variable> split_axis(const Variable& x, const std::vector<int64_t>& indices, int64_t axis);
/// X split along AXIS before each of INDICES, a braced list of split points.
std::vector<Variable> split_axis(const Variable& x, std::initializer_list<int64_t> indices, int64_t axis);

/// The slices of X along AXIS, that axis removed: x[0], x[1], ... for axis 0, as
/// chainer.functions.separate (the inverse of stack).
std::vector<Variable> separate(const Variable& x, int64_t axis = 0);

}  // namespace chainer::functions
