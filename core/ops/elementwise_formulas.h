/// @file
/// The element formulas of the elementwise kernels, shared by the CPU (core/cpu/elementwise.cpp)
/// and CUDA (core/cuda/elementwise.cu) so both devices compute one expression per op, as
/// core/ops/update_rules.h does for the optimizers. Each is a function object on one element (two
/// for the binary ones) of type T; the kernels around them handle layouts, broadcasting and
/// threads. On the host the math is <cmath>'s, on the device CUDA's overloads of the same names.
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/ops/kernels.h"

#if defined(__CUDACC__)
#define CHAINER_FORMULA __host__ __device__ __forceinline__
#else
#define CHAINER_FORMULA inline
#endif

namespace chainer::formulas {

/// The math functions the formulas use, in T's own precision on the host and on the device.
namespace math {
#if defined(__CUDA_ARCH__)
#define CHAINER_FORMULA_MATH(NAME, DEVICE, HOST) \
  template <class T>                             \
  CHAINER_FORMULA T NAME(T x) {                  \
    return ::DEVICE(x);                          \
  }
#else
#define CHAINER_FORMULA_MATH(NAME, DEVICE, HOST) \
  template <class T>                             \
  CHAINER_FORMULA T NAME(T x) {                  \
    return std::HOST(x);                         \
  }
#endif
CHAINER_FORMULA_MATH(exp, exp, exp)
CHAINER_FORMULA_MATH(log, log, log)
CHAINER_FORMULA_MATH(sqrt, sqrt, sqrt)
CHAINER_FORMULA_MATH(tanh, tanh, tanh)
CHAINER_FORMULA_MATH(abs, fabs, abs)
CHAINER_FORMULA_MATH(expm1, expm1, expm1)
CHAINER_FORMULA_MATH(log1p, log1p, log1p)
#undef CHAINER_FORMULA_MATH
}  // namespace math

/// `x op y` for the `binary` kernel. Integer operands narrower than int are promoted: the cast
/// wraps the result back to T. Maximum and Minimum give NaN when either is NaN, as numpy.
template <BinaryOp Op>
struct Binary {
  template <class T>
  CHAINER_FORMULA T operator()(T x, T y) const {
    if constexpr (Op == BinaryOp::Add) return T(x + y);
    else if constexpr (Op == BinaryOp::Sub) return T(x - y);
    else if constexpr (Op == BinaryOp::Mul) return T(x * y);
    else if constexpr (Op == BinaryOp::Div) return T(x / y);
    else {
      if constexpr (std::is_floating_point_v<T>) {
        if (x != x) return x;
      }
      if constexpr (Op == BinaryOp::Maximum) return x >= y ? x : y;
      else return x <= y ? x : y;
    }
  }
};

/// `op(x)` for the `unary` kernel (floating types).
template <UnaryOp Op>
struct Unary {
  template <class T>
  CHAINER_FORMULA T operator()(T x) const {
    if constexpr (Op == UnaryOp::Neg) return -x;
    else if constexpr (Op == UnaryOp::Exp) return math::exp(x);
    else if constexpr (Op == UnaryOp::Log) return math::log(x);
    else if constexpr (Op == UnaryOp::Sqrt) return math::sqrt(x);
    else if constexpr (Op == UnaryOp::Square) return x * x;
    else if constexpr (Op == UnaryOp::Relu) return x > T(0) ? x : T(0);
    else if constexpr (Op == UnaryOp::Sigmoid) return T(0.5) * math::tanh(T(0.5) * x) + T(0.5);
    else if constexpr (Op == UnaryOp::Tanh) return math::tanh(x);
    else if constexpr (Op == UnaryOp::Abs) return math::abs(x);
    else return x > T(0) ? T(1) : x < T(0) ? T(-1) : x;  // Sign: 0 and NaN stay
  }
};

/// The gradient of activation OP from its output V and the output gradient G.
template <GradOp Op>
struct ActivationGrad {
  template <class T>
  CHAINER_FORMULA T operator()(T v, T g) const {
    if constexpr (Op == GradOp::Relu) return v > T(0) ? g : T(0);
    else if constexpr (Op == GradOp::Sigmoid) return g * v * (T(1) - v);
    else return g * (T(1) - v * v);
  }
};

/// `x op y` as 1 or 0 for the `compare` kernel.
template <CompareOp Op>
struct Compare {
  template <class T>
  CHAINER_FORMULA uint8_t operator()(T x, T y) const {
    if constexpr (Op == CompareOp::Equal) return x == y;
    else if constexpr (Op == CompareOp::NotEqual) return x != y;
    else if constexpr (Op == CompareOp::Less) return x < y;
    else if constexpr (Op == CompareOp::LessEqual) return x <= y;
    else if constexpr (Op == CompareOp::Greater) return x > y;
    else return x >= y;
  }
};

/// X clipped to [LO, HI]; NaN stays NaN.
template <class T>
struct Clip {
  T lo, hi;
  CHAINER_FORMULA T operator()(T x) const { return x < lo ? lo : x > hi ? hi : x; }
};

/// X * MUL + ADD.
template <class T>
struct Affine {
  T mul, add;
  CHAINER_FORMULA T operator()(T x) const { return x * mul + add; }
};

/// Y + ALPHA * X.
template <class T>
struct Axpy {
  T alpha;
  CHAINER_FORMULA T operator()(T y, T x) const { return y + alpha * x; }
};

/// Activation OP with parameter P of its input X (core/ops/kernels.h's ParametricOp); INV is 1 / P,
/// rounded from double.
template <ParametricOp Op, class T>
struct Parametric {
  T p, inv;
  CHAINER_FORMULA T operator()(T x) const {
    if constexpr (Op == ParametricOp::LeakyRelu) return x >= T(0) ? x : p * x;
    else if constexpr (Op == ParametricOp::Elu) return x >= T(0) ? x : p * math::expm1(x);
    else {
      const T px = p * x;  // max(px, 0) + log1p(exp(-|px|)): exp never overflows
      return ((px < T(0) ? T(0) : px) + math::log1p(math::exp(-math::abs(px)))) * inv;
    }
  }
};

/// The gradient of Parametric<OP> at its input X, from the output gradient G.
template <ParametricOp Op, class T>
struct ParametricGrad {
  T p;
  CHAINER_FORMULA T operator()(T x, T g) const {
    if constexpr (Op == ParametricOp::LeakyRelu) return x >= T(0) ? g : p * g;
    else if constexpr (Op == ParametricOp::Elu) return x > T(0) ? g : p * math::exp(x) * g;
    else return g * (T(0.5) * math::tanh(T(0.5) * p * x) + T(0.5));
  }
};

/// The sigmoid and tanh of the recurrent cells: the formulas' own by default; the CPU's kernels
/// pass one that vectorizes (core/cpu/vector_math.h).
struct CellMath {
  template <class T>
  CHAINER_FORMULA static T sigmoid(T x) {
    return Unary<UnaryOp::Sigmoid>{}(x);
  }
  template <class T>
  CHAINER_FORMULA static T tanh(T x) {
    return math::tanh(x);
  }
};

/// One unit of one LSTM step (the `lstm` kernel), as Chainer's lstm: the gates' inputs XA, XI, XF,
/// XO and the previous cell state C_PREV give the cell state C and the output H.
template <class T, class M = CellMath>
CHAINER_FORMULA void lstm_cell(T xa, T xi, T xf, T xo, T c_prev, T& c, T& h) {
  c = M::tanh(xa) * M::sigmoid(xi) + M::sigmoid(xf) * c_prev;
  h = M::sigmoid(xo) * M::tanh(c);
}

/// The gradients of lstm_cell (the `lstm_grad` kernel) from its inputs, its output C and the
/// output gradients GC and GH: GX[0..3] for XA, XI, XF, XO and GC_PREV.
template <class T, class M = CellMath>
CHAINER_FORMULA void lstm_cell_grad(T xa, T xi, T xf, T xo, T c_prev, T c, T gc, T gh, T* gx, T& gc_prev) {
  const T a = M::tanh(xa), i = M::sigmoid(xi), f = M::sigmoid(xf), o = M::sigmoid(xo), tc = M::tanh(c);
  const T g = gh * o * (T(1) - tc * tc) + gc;  // the whole gradient of c
  gx[0] = g * i * (T(1) - a * a);
  gx[1] = g * a * i * (T(1) - i);
  gx[2] = g * c_prev * f * (T(1) - f);
  gx[3] = gh * tc * o * (T(1) - o);
  gc_prev = g * f;
}

/// One unit of one GRU step (the `gru` kernel), as Chainer's n_step_gru: the input's projections
/// XR, XZ, XN (with their biases), the previous output's HR, HZ, HN (with theirs) and the previous
/// output H give r = sigmoid(xr + hr), z = sigmoid(xz + hz), n = tanh(xn + r hn) and the output
/// (1 - z) n + z h.
template <class T, class M = CellMath>
CHAINER_FORMULA T gru_cell(T xr, T xz, T xn, T hr, T hz, T hn, T h) {
  const T r = M::sigmoid(xr + hr), z = M::sigmoid(xz + hz), n = M::tanh(xn + r * hn);
  return (T(1) - z) * n + z * h;
}

/// The gradients of gru_cell (the `gru_grad` kernel) from the output gradient G: GX[0..2] for
/// XR, XZ, XN, GH[0..2] for HR, HZ, HN, and GH_PREV for H.
template <class T, class M = CellMath>
CHAINER_FORMULA void gru_cell_grad(T xr, T xz, T xn, T hr, T hz, T hn, T h, T g, T* gx, T* gh, T& gh_prev) {
  const T r = M::sigmoid(xr + hr), z = M::sigmoid(xz + hz), n = M::tanh(xn + r * hn);
  const T dn = g * (T(1) - z) * (T(1) - n * n);  // through tanh
  const T dz = g * (h - n) * z * (T(1) - z);
  const T dr = dn * hn * r * (T(1) - r);
  gx[0] = dr, gx[1] = dz, gx[2] = dn;
  gh[0] = dr, gh[1] = dz, gh[2] = dn * r;
  gh_prev = g * z;
}

}  // namespace chainer::formulas
