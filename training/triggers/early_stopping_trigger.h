/// @file
/// EarlyStoppingTrigger, as chainer.training.triggers.EarlyStoppingTrigger: a stop trigger that
/// ends training when the monitored value has not improved for PATIENCE check points in a row,
/// or at MAX_TRIGGER. Between check points it sums the monitored value; at each check point it
/// compares the mean with the best so far. Mode "auto" maximizes a key containing "accuracy"
/// and minimizes any other. As a stop trigger it is called before each iteration, so it sees
/// what the previous iteration (and its extensions: an Evaluator) reported.
#pragma once
#include <string>

#include "nn/reporter.h"
#include "training/trigger.h"

namespace chainer::training {

/// Stops training when MONITOR stops improving, as `chainer.training.triggers.EarlyStoppingTrigger`.
class EarlyStoppingTrigger {
 public:
  /// Compares the mean of MONITOR at each firing of CHECK_TRIGGER; stops after PATIENCE checks
  /// without improvement (MODE "max", "min" or "auto"), or when MAX_TRIGGER fires. VERBOSE
  /// prints the comparison mode and the stop on stdout, as Chainer's.
  explicit EarlyStoppingTrigger(Trigger check_trigger = {1, Unit::Epoch}, std::string monitor = "main/loss",
                                int64_t patience = 3, std::string mode = "auto", bool verbose = false,
                                Trigger max_trigger = {100, Unit::Epoch});
  /// Whether training should stop now.
  bool operator()(const Trainer& trainer);
  /// Saves or restores the count, the best value, the sum since the last check and both triggers.
  void serialize(Serializer& s);
  /// MAX_TRIGGER's training length, as Chainer's `get_training_length()` (ProgressBar's bar).
  std::optional<TrainingLength> training_length() const { return max_trigger_.training_length(); }

  int64_t count() const { return count_; }  ///< Check points in a row without improvement.
  double best() const { return best_; }  ///< The best mean so far (an infinity before the first check).
  bool maximizes() const { return maximize_; }  ///< Whether larger values are better.
  const std::string& monitor() const { return monitor_; }  ///< The key monitored.
  int64_t patience() const { return patience_; }  ///< Check points without improvement that stop training.

 private:
  std::string monitor_;
  int64_t patience_;
  bool verbose_;
  Trigger interval_trigger_, max_trigger_;
  bool maximize_;
  double best_;
  int64_t count_ = 0;
  DictSummary summary_;
  bool warned_ = false;
};

}  // namespace chainer::training
