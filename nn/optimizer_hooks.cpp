#include "nn/optimizer_hooks.h"

#include <cmath>

#include "core/ops.h"
#include "core/update_ops.h"

namespace chainer::optimizer_hooks {

WeightDecay::WeightDecay(double r) : rate(r) {
  if (!(r >= 0)) throw Error(str("WeightDecay: rate must be >= 0, got ", r));
}

void WeightDecay::operator()(Optimizer& optimizer) {
  for (auto& p : optimizer.target().params()) {
    if (!p.data().defined() || !p.grad().defined()) continue;
    Tensor g = p.grad();
    ops::axpy_(g, rate, p.data());
  }
}

GradientClipping::GradientClipping(double t) : threshold(t) {
  if (!(t > 0)) throw Error(str("GradientClipping: threshold must be > 0, got ", t));
}

void GradientClipping::operator()(Optimizer& optimizer) {
  double sq = 0;
  auto params = optimizer.target().params();
  for (auto& p : params)
    if (p.grad().defined()) sq += ops::sum_of_squares(p.grad());
  const double norm = std::sqrt(sq);
  if (norm <= threshold) return;
  const double rate = threshold / norm;
  for (auto& p : params)
    if (p.grad().defined()) {
      Tensor g = p.grad();
      ops::scale_(g, rate);
    }
}

}  // namespace chainer::optimizer_hooks
