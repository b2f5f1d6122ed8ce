#include "training/triggers/time_trigger.h"

#include <cmath>

#include "training/trainer.h"

namespace chainer::training {

TimeTrigger::TimeTrigger(double period) : period_(period), next_time_(period) {
  if (!(period > 0) || !std::isfinite(period))
    throw Error(str("TimeTrigger: period must be a positive number of seconds, got ", period));
}

bool TimeTrigger::operator()(const Trainer& trainer) {
  if (next_time_ < trainer.elapsed_time()) {
    next_time_ += period_;
    return true;
  }
  return false;
}

void TimeTrigger::serialize(Serializer& s) { s.value("next_time", next_time_); }

}  // namespace chainer::training
