/// @file
/// In-place parameter updates used by optimizers and their hooks. Each steps every parameter it
/// is given in one call: one fused pass over memory per parameter on the CPU (the update is
/// memory-bound, so reading param, grad and state once is what makes it fast), one launch for all
/// parameters on a GPU. Scalars come through a function (core/kernels.h, UpdateScalarsFn) so that
/// a step replayed from a CUDA graph uses this step's learning rate.
#pragma once
#include <vector>

#include "core/kernels.h"

namespace chainer::ops {

/// One step of RULE on every parameter of PARAMS (all on one device; each entry's tensors
/// contiguous and of one shape and dtype):
///
///     SGD:          p -= lr * g
///     MomentumSGD:  v = beta1 * v - lr * g; p += v                       (state0 = v)
///     Adam:         m += (1-beta1)(g-m); v += (1-beta2)(g^2-v);
///                   p -= eta * (lr * m / (sqrt(v) + eps) + weight_decay_rate * p)   (state0 = m, state1 = v)
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
/// One Adam step on PARAM with moments M and V, in place (update_ with fixed scalars).
void adam_update_(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const AdamStep& step);
/// One MomentumSGD step on PARAM with velocity V, in place (update_ with fixed scalars).
void momentum_sgd_update_(Tensor& param, const Tensor& grad, Tensor& v, double lr, double momentum);

/// Scales every gradient by min(1, threshold / global norm), as Chainer's GradientClipping; on a
/// GPU without reading the norm on the host.
void clip_grads_by_norm_(std::vector<Tensor>& grads, double threshold);

/// Sum of squares of all elements (double accumulation), read on the host.
double sum_of_squares(const Tensor& a);

}  // namespace chainer::ops
