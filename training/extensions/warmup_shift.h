/// @file
/// WarmupShift, as chainer.training.extensions.WarmupShift: moves an optimizer's hyperparameter
/// evenly from WARMUP_START to INIT over the first WARMUP_ITER calls, then leaves it alone: after
/// t <= warmup_iter calls the value is `(t * init + (warmup_iter - t) * warmup_start) / warmup_iter`.
/// Training's start sets WARMUP_START (when given). Unlike Chainer's, whose resumed run trains at
/// WARMUP_START from then on, a resumed run starts at the value of its restored count.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "nn/optimizer.h"
#include "training/extension.h"

namespace chainer::training::extensions {

/// Warms an optimizer hyperparameter up linearly, as Chainer's `extensions.WarmupShift`.
class WarmupShift : public Extension {
 public:
  /// Moves ATTR of OPTIMIZER (unset: the updater's "main") from WARMUP_START (unset: the value at
  /// the start) to INIT in WARMUP_ITER (> 0) calls.
  WarmupShift(std::string attr, std::optional<double> warmup_start, int64_t warmup_iter, double init,
              std::shared_ptr<Optimizer> optimizer = nullptr);
  /// Sets ATTR to WARMUP_START (reads it instead when unset); after a resume, to the value at the restored count.
  void initialize(Trainer& trainer) override;
  void operator()(Trainer& trainer) override;  ///< Counts a call; within the warm-up, sets ATTR to the value at it.
  std::string default_name() const override { return "WarmupShift"; }
  void serialize(Serializer& s) override;  ///< Saves or restores the call count `_t`.

 private:
  Optimizer& optimizer(Trainer& trainer) const;
  double value_at(int64_t t) const;
  std::string attr_;
  std::optional<double> warmup_start_;
  int64_t warmup_iter_;
  double init_;
  std::shared_ptr<Optimizer> optimizer_;
  int64_t t_ = 0;
};

}  // namespace chainer::training::extensions
