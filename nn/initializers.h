/// @file
/// Weight initializers, as chainer.initializers. Fan-in is the product of all axes but the
/// first (W of a Linear link is (out, in)). Draws come from GEN, or the default generator.
#pragma once
#include <concepts>
#include <functional>
#include <utility>

#include "core/util/random.h"

namespace chainer::initializers {

/// LeCunNormal: normal draws with standard deviation `scale * sqrt(1 / fan_in)`.
Tensor lecun_normal(const Shape& shape, double scale = 1.0, DType dtype = DType::Float32, Generator* gen = nullptr);
/// HeNormal (MSRA): normal draws with standard deviation `scale * sqrt(2 / fan_in)`.
Tensor he_normal(const Shape& shape, double scale = 1.0, DType dtype = DType::Float32, Generator* gen = nullptr);
/// GlorotUniform: uniform draws in `[-s, s)`, `s = scale * sqrt(6 / (fan_in + fan_out))`.
Tensor glorot_uniform(const Shape& shape, double scale = 1.0, DType dtype = DType::Float32, Generator* gen = nullptr);
/// Normal: draws with mean 0 and standard deviation SCALE.
Tensor normal(const Shape& shape, double scale = 0.05, DType dtype = DType::Float32, Generator* gen = nullptr);
/// Constant: every element is VALUE.
Tensor constant(const Shape& shape, double value, DType dtype = DType::Float32);

/// What a link takes as initialW or initial_bias, as Chainer's initializer arguments: a function
/// of the shape (`[](const Shape& s) { return initializers::normal(s, 0.01); }`), a scalar
/// (every element), or an array (copied; its shape must be the parameter's). Empty (the
/// default, Chainer's None): the link's own default.
class Initializer {
 public:
  Initializer() = default;  ///< none: the link's default
  /// Every element VALUE (Chainer's scalar initializer).
  Initializer(double value)  // NOLINT: implicit, as Python's initial_bias=0
      : fn_([value](const Shape& shape) { return constant(shape, value); }) {}
  /// A float32 copy of ARRAY, whose shape must be the parameter's.
  Initializer(Tensor array);  // NOLINT: implicit, as Python's initialW=array
  /// FN(shape): the parameter's values.
  template <class Fn>
    requires std::is_invocable_r_v<Tensor, Fn, const Shape&>
  Initializer(Fn fn) : fn_(std::move(fn)) {}  // NOLINT: implicit, as Python's initialW=initializer

  /// Whether one was given.
  explicit operator bool() const { return bool(fn_); }
  /// The values of a parameter of SHAPE (float32, on the CPU); WHO (the link and the
  /// parameter) names the caller when an array's shape differs.
  Tensor operator()(const Shape& shape, const std::string& who) const;

 private:
  std::function<Tensor(const Shape&)> fn_;
};

}  // namespace chainer::initializers
