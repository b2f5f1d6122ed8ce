/// @file
/// The element steps of the optimizer rules that the CPU (core/cpu/update.cpp) and CUDA
/// (core/cuda/update.cu) kernels share, so both devices run one formula: each updates one element
/// of a parameter P and its state from its gradient G, in the parameter's type T with the scalars
/// already converted to T (those named one_minus_* and the like are computed in double first, as
/// Chainer's Python does). The forms and the order of operations are those of Chainer 7.8.1's
/// update_core_cpu (ops::update_ lists them). SGD, MomentumSGD and Adam keep their own loops
/// (Adam's float32 CPU step is vectorized by hand).
#pragma once
#include <cmath>

#if defined(__CUDACC__)
#define CHAINER_ELEMENT_STEP __host__ __device__ __forceinline__
#else
#define CHAINER_ELEMENT_STEP inline
#endif

namespace chainer::update_rules {

/// The square root of X in T's own precision, on the host and on the device.
template <class T>
CHAINER_ELEMENT_STEP T root(T x) {
#if defined(__CUDA_ARCH__)
  return sqrt(x);
#else
  return std::sqrt(x);
#endif
}

/// AMSGrad (Adam with amsgrad): Adam's moments, then VHAT = max(VHAT, V) in the denominator.
template <class T>
CHAINER_ELEMENT_STEP void ams_grad(T& p, T g, T& m, T& v, T& vhat, T one_minus_beta1, T one_minus_beta2, T lr,
                                   T eps, T eta, T weight_decay_rate) {
  m += one_minus_beta1 * (g - m);
  v += one_minus_beta2 * (g * g - v);
  vhat = v <= vhat ? vhat : v;  // a NaN in v propagates, as numpy.maximum
  p -= eta * (lr * m / (root(vhat) + eps) + weight_decay_rate * p);
}

/// AdaGrad: H accumulates the squared gradients.
template <class T>
CHAINER_ELEMENT_STEP void ada_grad(T& p, T g, T& h, T lr, T eps) {
  h += g * g;
  p -= lr * g / (root(h) + eps);
}

/// RMSprop: MS is the running mean square; EPS_INSIDE_SQRT picks sqrt(ms + eps) over sqrt(ms) + eps.
template <class T>
CHAINER_ELEMENT_STEP void rmsprop(T& p, T g, T& ms, T lr, T alpha, T one_minus_alpha, T eps, bool eps_inside_sqrt) {
  ms = ms * alpha + one_minus_alpha * g * g;
  const T denom = eps_inside_sqrt ? root(ms + eps) : root(ms) + eps;
  p -= lr * g / denom;
}

/// AdaDelta: MSG and MSDX are the running mean squares of the gradient and of the step.
template <class T>
CHAINER_ELEMENT_STEP void ada_delta(T& p, T g, T& msg, T& msdx, T rho, T one_minus_rho, T eps) {
  msg = msg * rho + one_minus_rho * g * g;
  const T dx = root((msdx + eps) / (msg + eps)) * g;
  msdx = msdx * rho + one_minus_rho * dx * dx;
  p -= dx;
}

/// NesterovAG: V is the velocity; MOMENTUM_SQ = momentum^2 and LR_AHEAD = (1 + momentum) * lr,
/// computed in double as Chainer does.
template <class T>
CHAINER_ELEMENT_STEP void nesterov_ag(T& p, T g, T& v, T lr, T momentum, T momentum_sq, T lr_ahead) {
  v = v * momentum - lr * g;
  p += momentum_sq * v;
  p -= lr_ahead * g;
}

/// RMSpropGraves: N and GM are the running means of g^2 and g, DELTA the step with momentum.
template <class T>
CHAINER_ELEMENT_STEP void rmsprop_graves(T& p, T g, T& n, T& gm, T& delta, T lr, T alpha, T one_minus_alpha,
                                         T momentum, T eps) {
  n = n * alpha + one_minus_alpha * g * g;
  gm = gm * alpha + one_minus_alpha * g;
  delta = delta * momentum - lr * g / root(n - gm * gm + eps);
  p += delta;
}

/// SMORMS3: MEM is the memory length (it starts at 1), GM and G2 the running means of g and g^2.
template <class T>
CHAINER_ELEMENT_STEP void smorms3(T& p, T g, T& mem, T& gm, T& g2, T lr, T eps) {
  const T r = T(1) / (mem + T(1));
  gm = (T(1) - r) * gm + r * g;
  g2 = (T(1) - r) * g2 + r * g * g;
  const T x = gm * gm / (g2 + eps);
  p -= g * (lr < x ? lr : x) / (root(g2) + eps);  // min(x, lr); a NaN in x propagates
  mem = T(1) + mem * (T(1) - x);
}

}  // namespace chainer::update_rules
