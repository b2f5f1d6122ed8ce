// Triggers decide when extensions run and when training stops, as chainer.training.triggers.
// IntervalTrigger(1, Unit::Epoch) fires each time the epoch count crosses a multiple of the
// period, so it fires once even if an epoch ends in the middle of a batch.
#pragma once
#include <cstdint>
#include <string>

#include "core/serializer.h"

namespace chainer::training {

class Trainer;

enum class Unit { Epoch, Iteration };
Unit parse_unit(const std::string& unit);  // "epoch" / "iteration"; anything else throws

class IntervalTrigger {
 public:
  IntervalTrigger(double period = 1, Unit unit = Unit::Iteration);
  bool operator()(const Trainer& trainer);
  // Where training stands in this trigger's unit (epochs as a fraction, or iterations).
  double position(const Trainer& trainer) const;
  void serialize(Serializer& s);
  double period() const { return period_; }
  Unit unit() const { return unit_; }
  std::string str() const;  // "20 epochs"

 private:
  double period_;
  Unit unit_;
  double previous_ = 0;
};

}  // namespace chainer::training
