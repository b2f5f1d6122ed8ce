#include "nn/optimizer_hooks.h"

#include <algorithm>
#include <cmath>

#include "core/ops/ops.h"
#include "core/ops/update_ops.h"

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
  std::vector<Tensor> grads;
  for (auto& p : optimizer.target().params())
    if (p.grad().defined()) grads.push_back(p.grad());
  // On one device the norm never leaves it (ops::clip_grads_by_norm_), so a step with this hook
  // is still captured into a CUDA graph; gradients spread over devices are summed on the host.
  const bool one_device = std::all_of(grads.begin(), grads.end(), [&](const Tensor& g) {
    return g.device() == grads[0].device() && g.is_contiguous() && is_floating(g.dtype());
  });
  if (one_device) return ops::clip_grads_by_norm_(grads, threshold);
  double sq = 0;
  for (const Tensor& g : grads) sq += ops::sum_of_squares(g);
  const double norm = std::sqrt(sq);
  if (norm <= threshold) return;
  const double rate = threshold / norm;
  for (Tensor& g : grads) ops::scale_(g, rate);
}

}  // namespace chainer::optimizer_hooks
