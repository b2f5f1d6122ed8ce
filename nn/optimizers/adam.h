/// @file
/// Adam, as chainer.optimizers.Adam (alpha 0.001, beta1 0.9, beta2 0.999, eps 1e-8) with the
/// bias-corrected step `lr = alpha * sqrt(1 - beta2^t) / (1 - beta1^t)`, eps outside the sqrt,
/// optional decoupled weight decay (AdamW's weight_decay_rate) and schedule multiplier eta, and
/// the AMSGrad variant (amsgrad: the step divides by the running maximum `vhat` of `v`, a third
/// state, instead of by `v`).
#pragma once
#include "nn/optimizer.h"

namespace chainer::optimizers {

/// The Adam optimizer (Chainer's `chainer.optimizers.Adam`), with AdamW's decoupled weight decay.
class Adam : public Optimizer {
 public:
  /// An Adam optimizer with Chainer's defaults.
  explicit Adam(double alpha = 0.001, double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-8, double eta = 1.0,
                double weight_decay_rate = 0.0, bool amsgrad = false);
  double alpha;              ///< The step size before bias correction.
  double beta1;              ///< The decay rate of the first moment average `m`.
  double beta2;              ///< The decay rate of the second moment average `v`.
  double eps;                ///< Added to `sqrt(v)` in the denominator.
  double eta;                ///< The schedule multiplier of the whole step, weight decay included.
  double weight_decay_rate;  ///< The decoupled weight decay rate (AdamW's).
  bool amsgrad;              ///< AMSGrad: divide by `sqrt(vhat)`, `vhat` the running maximum of `v`.
  double lr() const;              ///< The bias-corrected step at the current t().
  double lr_at(int64_t t) const;  ///< The bias-corrected step after T steps (a parameter's own count, param_t()).

  /// One step, as Optimizer::update(); throws first when eps rounds to 0 in a parameter's dtype.
  void update() override;
  using Optimizer::update;

 protected:
  /// alpha, beta1, beta2, eps, eta, weight_decay_rate, and lr, derived (read only: set alpha).
  std::vector<Hyperparam> hyperparams() override {
    return {{"alpha", &alpha}, {"beta1", &beta1}, {"beta2", &beta2}, {"eps", &eps}, {"eta", &eta},
            {"weight_decay_rate", &weight_decay_rate}, {"lr", nullptr, [this] { return lr(); }, "alpha"}};
  }
  std::optional<UpdateRule> update_rule() const override { return amsgrad ? UpdateRule::AMSGrad : UpdateRule::Adam; }
  UpdateScalars update_scalars(int64_t param_t) const override;
  std::vector<std::string> state_names() const override {
    return amsgrad ? std::vector<std::string>{"m", "v", "vhat"} : std::vector<std::string>{"m", "v"};
  }
};

}  // namespace chainer::optimizers
