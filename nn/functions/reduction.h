/// @file
/// Reductions, as chainer.functions.sum / mean / average / max / min / argmax / argmin /
/// logsumexp. AXIS is Chainer's: None (every axis), one axis, or several (a tuple in Python);
/// negative axes count from the end; KEEPDIMS keeps the reduced axes with extent 1.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "autograd/variable.h"

namespace chainer::functions {

/// The `axis` argument of Chainer's reductions: None (every axis), one axis, or a list of axes.
/// It converts implicitly, so calls read as in Python: `F::max(x)`, `F::max(x, 1)`,
/// `F::max(x, {0, 2})`, `F::sum(x, std::nullopt, true)`. An empty list is Chainer's `axis=()`:
/// no axis is reduced (but `{}` alone, being the default, means None).
class Axes {
 public:
  Axes() = default;                                      ///< None: every axis
  Axes(std::nullopt_t) {}                                ///< None: every axis
  Axes(int64_t axis) : all_(false), axes_{axis} {}       ///< one axis
  /// One axis, or None when AXIS is empty.
  Axes(std::optional<int64_t> axis) : all_(!axis) {
    if (axis) axes_.push_back(*axis);
  }
  Axes(std::initializer_list<int64_t> axes) : all_(false), axes_(axes) {}  ///< these axes
  Axes(std::vector<int64_t> axes) : all_(false), axes_(std::move(axes)) {}  ///< these axes

  /// Whether this is None (every axis).
  bool all() const { return all_; }
  /// The axes as given (empty for None).
  const std::vector<int64_t>& list() const { return axes_; }
  /// The axes of an array of NDIM dimensions this names, in [0, ndim) and increasing. Throws
  /// chainer::Error naming OP for an axis out of range or one named twice.
  std::vector<int64_t> resolve(int64_t ndim, const char* op) const;
  /// As Python writes it: "None", "1", "(0, 2)".
  std::string str() const;

 private:
  bool all_ = true;
  std::vector<int64_t> axes_;
};

/// The sum of X over AXIS (every axis by default).
Variable sum(const Variable& x, const Axes& axis = {}, bool keepdims = false);
/// The mean of X over AXIS (every axis by default).
Variable mean(const Variable& x, const Axes& axis = {}, bool keepdims = false);
/// Weighted mean: `sum(x * weights, axis) / sum(weights)`. With AXIS, WEIGHTS is 1-D with
/// `x.shape[axis]` entries; without, it has x's shape. Undefined WEIGHTS gives `mean(x, axis)`.
/// The weights are differentiable too.
Variable average(const Variable& x, std::optional<int64_t> axis = std::nullopt, const Variable& weights = Variable(),
                 bool keepdims = false);

/// The maximum of X (float32 or float64) over AXIS. The gradient goes to every element equal
/// to its maximum: ties each get the whole output gradient (Chainer's `gy * (x == y)`).
Variable max(const Variable& x, const Axes& axis = {}, bool keepdims = false);
/// The minimum of X over AXIS; ties each get the whole output gradient, as max.
Variable min(const Variable& x, const Axes& axis = {}, bool keepdims = false);
/// The index of the maximum of X (float32 or float64) along AXIS, or in the flattened X
/// without one; the first on ties. int32, and not differentiable: a variable without a creator.
Variable argmax(const Variable& x, std::optional<int64_t> axis = std::nullopt);
/// The index of the minimum of X along AXIS, or in the flattened X; as argmax.
Variable argmin(const Variable& x, std::optional<int64_t> axis = std::nullopt);
/// `log(sum(exp(x)))` over AXIS, stable for large values (the maximum is taken out first).
Variable logsumexp(const Variable& x, const Axes& axis = {});

}  // namespace chainer::functions
