/// @file
/// Arithmetic on variables with numpy broadcasting, as Chainer's Variable operators: add, sub,
/// mul, div of two variables (backward sums the gradient back over broadcast axes), the same with
/// a scalar on either side, and negation. The operators live in namespace chainer so that
/// argument-dependent lookup finds them: `y = 2.0 * x + b`, `1.0 - x`, `-x`.
#pragma once
#include "autograd/variable.h"

namespace chainer::functions {

/// `a + b`, broadcast.
Variable add(const Variable& a, const Variable& b);
/// `a - b`, broadcast.
Variable sub(const Variable& a, const Variable& b);
/// `a * b` elementwise, broadcast.
Variable mul(const Variable& a, const Variable& b);
/// `a / b` elementwise, broadcast.
Variable div(const Variable& a, const Variable& b);

Variable add(const Variable& x, double s);  ///< `x + s`
Variable sub(const Variable& x, double s);  ///< `x - s`
Variable sub(double s, const Variable& x);  ///< `s - x`
Variable mul(const Variable& x, double s);  ///< `x * s`
Variable div(const Variable& x, double s);  ///< `x * (1 / s)`, as Chainer
Variable div(double s, const Variable& x);  ///< `s / x`
/// `-x`.
Variable neg(const Variable& x);

}  // namespace chainer::functions

namespace chainer {

/// functions::add(a, b).
inline Variable operator+(const Variable& a, const Variable& b) { return functions::add(a, b); }
/// functions::sub(a, b).
inline Variable operator-(const Variable& a, const Variable& b) { return functions::sub(a, b); }
/// functions::mul(a, b).
inline Variable operator*(const Variable& a, const Variable& b) { return functions::mul(a, b); }
/// functions::div(a, b).
inline Variable operator/(const Variable& a, const Variable& b) { return functions::div(a, b); }
/// `x + s`: functions::add(x, s).
inline Variable operator+(const Variable& x, double s) { return functions::add(x, s); }
/// `s + x`: functions::add(x, s).
inline Variable operator+(double s, const Variable& x) { return functions::add(x, s); }
/// `x - s`: functions::sub(x, s).
inline Variable operator-(const Variable& x, double s) { return functions::sub(x, s); }
/// `s - x`: functions::sub(s, x).
inline Variable operator-(double s, const Variable& x) { return functions::sub(s, x); }
/// `x * s`: functions::mul(x, s).
inline Variable operator*(const Variable& x, double s) { return functions::mul(x, s); }
/// `s * x`: functions::mul(x, s).
inline Variable operator*(double s, const Variable& x) { return functions::mul(x, s); }
/// `x / s`: functions::div(x, s).
inline Variable operator/(const Variable& x, double s) { return functions::div(x, s); }
/// `s / x`: functions::div(s, x).
inline Variable operator/(double s, const Variable& x) { return functions::div(s, x); }
/// `-x`: functions::neg(x).
inline Variable operator-(const Variable& x) { return functions::neg(x); }

}  // namespace chainer
