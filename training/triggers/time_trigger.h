/// @file
/// TimeTrigger, as chainer.training.triggers.TimeTrigger: fires at the first iteration whose
/// Trainer::elapsed_time() is past the next multiple of PERIOD seconds. As Chainer's, it moves
/// the next time on by one period per firing, so after a pause longer than a period it fires at
/// several consecutive iterations to catch up. The next time goes into snapshots (`next_time`),
/// and the trainer's elapsed time counts the seconds before a resume, so a resumed trigger keeps
/// its schedule.
#pragma once
#include "training/trigger.h"

namespace chainer::training {

/// Fires every PERIOD seconds of training time, as Chainer's `TimeTrigger`.
class TimeTrigger {
 public:
  /// A trigger firing every PERIOD (> 0) seconds.
  explicit TimeTrigger(double period);
  /// Whether the trainer's elapsed time is past the next time (which then moves on one period).
  bool operator()(const Trainer& trainer);
  void serialize(Serializer& s);  ///< Saves or restores `next_time`.
  double period() const { return period_; }  ///< The period, in seconds.
  double next_time() const { return next_time_; }  ///< The elapsed time it fires after next.

 private:
  double period_;
  double next_time_;
};

}  // namespace chainer::training
