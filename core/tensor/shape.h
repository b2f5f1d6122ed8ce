/// @file
/// Shapes are small vectors of extents; strides are counted in elements, not bytes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace chainer {

/// A tensor's extents, outermost first.
using Shape = std::vector<int64_t>;

int64_t shape_numel(const Shape& shape);            ///< the number of elements (1 for a scalar)
std::string shape_str(const Shape& shape);          ///< "(100, 784)", "()" for a scalar
/// The row-major (C-contiguous) strides of SHAPE, in elements.
std::vector<int64_t> contiguous_strides(const Shape& shape);
/// Resolves a possibly negative axis against ndim; OP names the caller in the error.
int64_t normalize_axis(int64_t axis, int64_t ndim, const char* op);

/// SHAPE seen around AXIS as (outer, len, inner): the extents before AXIS multiplied, AXIS's own,
/// and those after it multiplied. A "row" is one (outer, inner) pair: the LEN elements of a
/// softmax or an argmax, INNER apart.
struct AxisView {
  int64_t outer = 1;  ///< extents before AXIS, multiplied
  int64_t len = 1;    ///< AXIS's extent
  int64_t inner = 1;  ///< extents after AXIS, multiplied
  int64_t rows() const { return outer * inner; }  ///< the number of rows
};
/// SHAPE seen around AXIS (already normalized).
AxisView axis_view(const Shape& shape, int64_t axis);

}  // namespace chainer
