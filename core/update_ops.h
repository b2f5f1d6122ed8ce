// In-place parameter updates used by optimizers, fused into one pass over memory each: the
// update is memory-bound, so reading param, grad and state once is what makes it fast.
#pragma once
#include "core/tensor.h"

namespace chainer::ops {

struct AdamStep {
  double lr;            // alpha * sqrt(1 - beta2^t) / (1 - beta1^t): the bias-corrected step
  double beta1, beta2, eps;
  double eta = 1.0;     // schedule multiplier
  double weight_decay_rate = 0.0;
};
// m += (1-b1)(g-m); v += (1-b2)(g^2-v); p -= eta * (lr * m / (sqrt(v) + eps) + wd * p).
void adam_update_(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const AdamStep& step);
// v = momentum * v - lr * g; p += v.
void momentum_sgd_update_(Tensor& param, const Tensor& grad, Tensor& v, double lr, double momentum);
// Sum of squares of all elements (double accumulation), for gradient clipping.
double sum_of_squares(const Tensor& a);

}  // namespace chainer::ops
