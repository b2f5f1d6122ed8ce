/// @file
/// In-place parameter updates used by optimizers and their hooks. Each steps every parameter it
/// is given in one call: one fused pass over memory per parameter on the CPU (the update is
/// memory-bound, so reading param, grad and state once is what makes it fast), one launch for all
/// parameters on a GPU. Scalars come through a function (core/ops/kernels.h, UpdateScalarsFn) so that
/// a step replayed from a CUDA graph uses this step's learning rate.
#pragma once
#include <vector>

#include "core/ops/op_types.h"

namespace chainer::ops {

/// One step of RULE on every parameter of PARAMS (all on one device; each entry's tensors
/// contiguous and of one shape and dtype; states state0, state1, state2 in this order, as many as
/// update_rule_states(RULE)), as Chainer 7.8.1's update rules:
///
///     SGD:           p -= lr * g
///     MomentumSGD:   v = momentum * v - lr * g; p += v                                  (v)
///     Adam:          m += (1-beta1)(g-m); v += (1-beta2)(g^2-v);
///                    p -= eta * (lr * m / (sqrt(v) + eps) + weight_decay_rate * p)      (m, v)
///     AMSGrad:       Adam with vhat = max(vhat, v) in place of v in the step         (m, v, vhat)
///     AdaGrad:       h += g^2; p -= lr * g / (sqrt(h) + eps)                            (h)
///     RMSprop:       ms = alpha * ms + (1-alpha) g^2;
///                    p -= lr * g / (sqrt(ms) + eps), or / sqrt(ms + eps) if eps_inside_sqrt  (ms)
///     AdaDelta:      msg += (1-rho)(g^2 - msg); dx = sqrt((msdx + eps) / (msg + eps)) * g;
///                    msdx += (1-rho)(dx^2 - msdx); p -= dx                              (msg, msdx)
///     NesterovAG:    v = momentum * v - lr * g; p += momentum^2 * v - (1 + momentum) * lr * g   (v)
///     RMSpropGraves: n = alpha * n + (1-alpha) g^2; g_ = alpha * g_ + (1-alpha) g;
///                    delta = momentum * delta - lr * g / sqrt(n - g_^2 + eps); p += delta   (n, g_, delta)
///     SMORMS3:       r = 1 / (mem + 1); g_ = (1-r) g_ + r g; g2 = (1-r) g2 + r g^2;
///                    x = g_^2 / (g2 + eps); p -= g * min(x, lr) / (sqrt(g2) + eps);
///                    mem = 1 + mem * (1 - x)                                           (mem, g_, g2)
///
/// On a GPU, SCALARS is kept by a step captured into a CUDA graph and called again before every
/// replay, long after this call returned: it must own what it reads (captures by value) or read
/// it from an object that outlives the graph (the optimizer's state), never the caller's locals.
void update_(UpdateRule rule, std::vector<ParamTensors>& params, const UpdateScalarsFn& scalars);

// The single-parameter forms, with fixed scalars.
/// The scalars of one Adam step (adam_update_).
struct AdamStep {
  double lr;            ///< alpha * sqrt(1 - beta2^t) / (1 - beta1^t): the bias-corrected step
  double beta1;         ///< decay of the first moment
  double beta2;         ///< decay of the second moment
  double eps;           ///< added to sqrt(v)
  double eta = 1.0;     ///< schedule multiplier
  double weight_decay_rate = 0.0;  ///< decoupled weight decay rate
};
/// One Adam step on PARAM with moments M and V, in place (update_ with adam_scalars(STEP)).
void adam_update_(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const AdamStep& step);
/// One MomentumSGD step on PARAM with velocity V, in place (update_ with momentum_sgd_scalars).
void momentum_sgd_update_(Tensor& param, const Tensor& grad, Tensor& v, double lr, double momentum);
/// The scalars function of adam_update_: it holds a copy of STEP, so it may be called after the
/// caller's STEP is gone (a replayed CUDA graph calls it again).
UpdateScalarsFn adam_scalars(const AdamStep& step);
/// The scalars function of momentum_sgd_update_: it holds copies of LR and MOMENTUM.
UpdateScalarsFn momentum_sgd_scalars(double lr, double momentum);

/// Scales every gradient by min(1, threshold / global norm), as Chainer's GradientClipping; on a
/// GPU without reading the norm on the host.
void clip_grads_by_norm_(std::vector<Tensor>& grads, double threshold);

/// Sum of squares of all elements (double accumulation), read on the host.
double sum_of_squares(const Tensor& a);

}  // namespace chainer::ops
