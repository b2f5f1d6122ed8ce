#include "training/triggers/manual_schedule_trigger.h"

#include <algorithm>
#include <cmath>

#include "training/trainer.h"

namespace chainer::training {

ManualScheduleTrigger::ManualScheduleTrigger(std::vector<double> points, Unit unit)
    : points_(std::move(points)), unit_(unit) {
  if (points_.empty()) throw Error("ManualScheduleTrigger: points is empty; give at least one point");
  for (double p : points_)
    if (!std::isfinite(p)) throw Error(str("ManualScheduleTrigger: the point ", p, " is not a finite number"));
}

bool ManualScheduleTrigger::operator()(const Trainer& trainer) {
  const Updater& u = trainer.updater();
  // A small tolerance, as IntervalTrigger's: epoch_detail = iteration * batch / size can land a
  // hair under a point it has reached. Shifting both ends keeps consecutive calls' ranges
  // (previous, now] from overlapping, so each point fires once.
  const double tolerance = unit_ == Unit::Epoch ? 1e-9 : 0.0;
  const double now = unit_ == Unit::Epoch ? u.epoch_detail() : double(u.iteration());
  const double previous = unit_ == Unit::Epoch ? previous_epoch_detail_ : double(previous_iteration_);
  const bool fire = std::any_of(points_.begin(), points_.end(),
                                [&](double p) { return previous + tolerance < p && p <= now + tolerance; });
  if (fire && now + tolerance >= *std::max_element(points_.begin(), points_.end())) finished_ = true;
  previous_iteration_ = u.iteration();
  previous_epoch_detail_ = u.epoch_detail();
  return fire;
}

void ManualScheduleTrigger::serialize(Serializer& s) {
  s.value("finished", finished_);
  s.value("previous_iteration", previous_iteration_);
  s.value("previous_epoch_detail", previous_epoch_detail_);
}

}  // namespace chainer::training
