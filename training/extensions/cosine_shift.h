/// @file
/// CosineShift: cosine annealing of an optimizer's hyperparameter, PyTorch's
/// `torch.optim.lr_scheduler.CosineAnnealingLR` as a Chainer-style extension (Chainer has none
/// built in). After t calls the value is
///
///     eta_min + (init - eta_min) * (1 + cos(pi * t / t_max)) / 2
///
/// init at t = 0, eta_min at t = t_max. Past t_max it follows the same closed form, as PyTorch's
/// does: back up to init at 2 * t_max (end training at t_max for a plain decay). It also sets the
/// value when training starts (init, or the last value after a resume), and is serialized as the
/// other shifts (`_t`, `_last_value`). Runs every iteration unless given a trigger:
/// `trainer.extend(std::make_shared<CosineShift>("lr", 100), "", {1, Unit::Epoch})` anneals over 100 epochs.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "training/extensions/hyperparameter_shift.h"

namespace chainer::training::extensions {

/// Anneals an optimizer hyperparameter along a half cosine, as PyTorch's `CosineAnnealingLR`.
class CosineShift : public HyperparameterShift {
 public:
  /// Anneals ATTR of OPTIMIZER (unset: the updater's "main") from INIT (unset: the value at the
  /// start; PyTorch's initial lr) to ETA_MIN in T_MAX (> 0) calls.
  CosineShift(std::string attr, int64_t t_max, double eta_min = 0, std::optional<double> init = std::nullopt,
              std::shared_ptr<Optimizer> optimizer = nullptr);
  std::string default_name() const override { return "CosineShift"; }

 private:
  double value_at(int64_t t, double init) const override;
  int64_t t_max_;
  double eta_min_;
};

}  // namespace chainer::training::extensions
