/// @file
/// MultiNodeEarlyStoppingTrigger, as chainermn.extensions.MultiNodeEarlyStoppingTrigger: Chainer's
/// EarlyStoppingTrigger on the monitored value averaged over the ranks, so that every rank
/// decides to stop at the same iteration (a rank stopping alone would leave the others waiting
/// in their next collective).
///
/// Each call collects this rank's value of MONITOR, if reported. When CHECK_TRIGGER fires, the
/// mean of every value of every rank since the last check (ObservationAggregator's mean_of_all)
/// is compared with the best so far: better (lower, or higher in mode "max") resets the count
/// of checks without improvement, anything else adds one, and the trigger fires once the count
/// reaches PATIENCE. It also fires when MAX_TRIGGER does, the training's upper bound. A check at
/// which no rank reported MONITOR decides nothing. Mode "auto" is "max" when MONITOR contains
/// "accuracy", else "min".
///
/// Use it as a trainer's stop trigger; every rank calls it at every iteration (collective when
/// CHECK_TRIGGER fires). It can also be called directly on a trainer after an iteration, as the
/// trainer would before the next one.
#pragma once
#include <memory>
#include <string>
#include <utility>

#include "distributed/communicators/communicator.h"
#include "distributed/extensions/observation_aggregator.h"
#include "training/trigger.h"

namespace chainer::training {
class Trainer;
}

namespace chainermn::extensions {

/// Early stopping on a value averaged over the ranks (see above).
class MultiNodeEarlyStoppingTrigger {
 public:
  /// Stops training when MONITOR, averaged over the ranks of COMM at each CHECK_TRIGGER, has not
  /// improved for PATIENCE checks, or at MAX_TRIGGER. MODE: "auto", "min" or "max" (anything else
  /// throws); VERBOSE prints the decisions from rank 0.
  explicit MultiNodeEarlyStoppingTrigger(
      std::shared_ptr<Communicator> comm,
      chainer::training::IntervalTrigger check_trigger = {1, chainer::training::Unit::Epoch},
      std::string monitor = "main/loss", int64_t patience = 3, const std::string& mode = "auto", bool verbose = false,
      chainer::training::IntervalTrigger max_trigger = {100, chainer::training::Unit::Epoch});

  /// Whether training should stop now (collective when CHECK_TRIGGER fires).
  bool operator()(const chainer::training::Trainer& trainer);
  /// Saves or restores the best value, the count, the values not yet checked and the triggers' positions.
  void serialize(chainer::Serializer& s);
  /// MAX_TRIGGER's (period, unit): the longest the training can run, for progress displays.
  chainer::training::TrainingLength training_length() const { return max_trigger_.training_length(); }

  const std::string& monitor() const { return aggregator_.original_key(); }  ///< The key monitored.
  double best() const { return best_; }  ///< The best averaged value so far (+-infinity before the first check).
  int64_t count() const { return count_; }  ///< Checks since the last improvement.
  int64_t patience() const { return patience_; }  ///< Checks without improvement that stop training.
  bool maximizes() const { return greater_; }  ///< Whether higher values are better.

 private:
  std::shared_ptr<Communicator> comm_;
  ObservationAggregator aggregator_;  // its comm trigger is the check trigger
  int64_t patience_;
  bool greater_;
  bool verbose_;
  chainer::training::IntervalTrigger max_trigger_;
  double best_;
  int64_t count_ = 0;
};

}  // namespace chainermn::extensions
