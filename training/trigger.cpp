#include "training/trigger.h"

#include <cmath>

#include "training/trainer.h"

namespace chainer::training {

Unit parse_unit(const std::string& unit) {
  if (unit == "epoch") return Unit::Epoch;
  if (unit == "iteration") return Unit::Iteration;
  throw Error(str("trigger: unit '", unit, "' is not 'epoch' or 'iteration'"));
}

IntervalTrigger::IntervalTrigger(double period, Unit unit) : period_(period), unit_(unit) {
  if (!(period > 0)) throw Error(chainer::str("trigger: the period must be positive, got ", period));
}

double IntervalTrigger::position(const Trainer& trainer) const {
  const Updater& u = trainer.updater();
  return unit_ == Unit::Epoch ? u.epoch_detail() : double(u.iteration());
}

bool IntervalTrigger::operator()(const Trainer& trainer) {
  const double now = position(trainer);
  // A small tolerance: epoch_detail = iteration * batch / size can land a hair under an integer.
  const bool fire = std::floor(now / period_ + 1e-9) != std::floor(previous_ / period_ + 1e-9);
  previous_ = now;
  return fire;
}

void IntervalTrigger::serialize(Serializer& s) { s.value("previous", previous_); }

std::string TrainingLength::str() const {
  return chainer::str(length, unit == Unit::Epoch ? " epoch" : " iteration", length == 1 ? "" : "s");
}

std::string IntervalTrigger::str() const { return training_length().str(); }

}  // namespace chainer::training
