/// @file
/// ManualScheduleTrigger, as chainer.training.triggers.ManualScheduleTrigger: fires at the
/// iteration at which training reaches or passes each of the given points, counted in epochs
/// (fractions allowed) or iterations. A point is passed between two calls when
/// `previous < point <= now`, so a point at 0 never fires and a point inside a batch fires at the
/// iteration that crosses it.
#pragma once
#include <vector>

#include "training/trigger.h"

namespace chainer::training {

/// Fires when training reaches each of POINTS, in epochs or iterations.
class ManualScheduleTrigger {
 public:
  /// Fires once at each of POINTS (not empty) of UNIT; epochs may be fractions.
  ManualScheduleTrigger(std::vector<double> points, Unit unit);
  /// Fires once at POINT of UNIT.
  ManualScheduleTrigger(double point, Unit unit) : ManualScheduleTrigger(std::vector<double>{point}, unit) {}
  /// Whether a point lies after the position at the last call and at or before the current one.
  bool operator()(const Trainer& trainer);
  /// Saves or restores `finished` and the position at the last call, under Chainer's keys
  /// ("finished", "previous_iteration", "previous_epoch_detail").
  void serialize(Serializer& s);
  /// Whether the last point has fired: the trigger will not fire again (the trainer then skips
  /// the extension's initialize() after a resume, as Chainer's does).
  bool finished() const { return finished_; }
  const std::vector<double>& points() const { return points_; }  ///< The points, as given.
  Unit unit() const { return unit_; }  ///< What the points count.

 private:
  std::vector<double> points_;
  Unit unit_;
  bool finished_ = false;
  int64_t previous_iteration_ = 0;
  double previous_epoch_detail_ = 0;
};

}  // namespace chainer::training
