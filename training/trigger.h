/// @file
/// Triggers decide when extensions run and when training stops, as chainer.training.triggers.
/// IntervalTrigger(1, Unit::Epoch) fires each time the epoch count crosses a multiple of the
/// period, so it fires once even if an epoch ends in the middle of a batch.
#pragma once
#include <cstdint>
#include <string>

#include "core/serializer.h"

namespace chainer::training {

class Trainer;

/// The unit a trigger's period counts in.
enum class Unit { Epoch, Iteration };
Unit parse_unit(const std::string& unit);  ///< The Unit named "epoch" or "iteration"; anything else throws.

/// Fires every PERIOD epochs or iterations, as `chainer.training.triggers.IntervalTrigger`.
class IntervalTrigger {
 public:
  /// A trigger firing every PERIOD units; PERIOD must be positive.
  IntervalTrigger(double period = 1, Unit unit = Unit::Iteration);
  /// Whether training crossed a multiple of the period since the last call.
  bool operator()(const Trainer& trainer);
  /// Where training stands in this trigger's unit (epochs as a fraction, or iterations).
  double position(const Trainer& trainer) const;
  void serialize(Serializer& s);  ///< Saves or restores the position at the last call.
  double period() const { return period_; }  ///< The period, in unit().
  Unit unit() const { return unit_; }  ///< What the period counts.
  std::string str() const;  ///< The trigger in words, e.g. "20 epochs".

 private:
  double period_;
  Unit unit_;
  double previous_ = 0;
};

}  // namespace chainer::training
