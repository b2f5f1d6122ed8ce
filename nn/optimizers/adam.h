// Adam, as chainer.optimizers.Adam (alpha 0.001, beta1 0.9, beta2 0.999, eps 1e-8) with the
// bias-corrected step lr = alpha * sqrt(1 - beta2^t) / (1 - beta1^t), eps outside the sqrt,
// and optional decoupled weight decay (AdamW's weight_decay_rate) and schedule multiplier eta.
#pragma once
#include "nn/optimizer.h"

namespace chainer::optimizers {

class Adam : public Optimizer {
 public:
  explicit Adam(double alpha = 0.001, double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-8, double eta = 1.0,
                double weight_decay_rate = 0.0);
  double alpha, beta1, beta2, eps, eta, weight_decay_rate;
  double lr() const;             // the bias-corrected step at the current t()
  double lr_at(int64_t t) const;  // ... after T steps (a parameter's own count, param_t())

 protected:
  std::optional<UpdateRule> update_rule() const override { return UpdateRule::Adam; }
  UpdateScalars update_scalars(int64_t param_t) const override;
  std::vector<std::string> state_names() const override { return {"m", "v"}; }
};

}  // namespace chainer::optimizers
