/// @file
/// MaxValueTrigger and MinValueTrigger, as chainer.training.triggers (BestValueTrigger): between
/// check points (an inner trigger, every epoch by default) they sum the reported values of one
/// key; at each check point they take the mean and fire when it is the best so far (the first
/// check point always fires). A snapshot taken with MaxValueTrigger("validation/main/accuracy")
/// keeps the best model. The sums and the best value are saved in snapshots.
#pragma once
#include <functional>
#include <optional>
#include <string>

#include "nn/reporter.h"
#include "training/trigger.h"

namespace chainer::training {

/// Fires at a check point when the mean of KEY since the previous one is better than every
/// earlier mean, as `chainer.training.triggers.BestValueTrigger`.
class BestValueTrigger {
 public:
  /// Whether VALUE is better than BEST.
  using Compare = std::function<bool(double best, double value)>;
  /// Compares the mean of KEY at each firing of TRIGGER with COMPARE.
  BestValueTrigger(std::string key, Compare compare, Trigger trigger = {1, Unit::Epoch});
  /// Adds this iteration's KEY (when reported) to the sum; at a check point, whether the mean is
  /// the best so far. A check point with no KEY reported since the previous one throws.
  bool operator()(const Trainer& trainer);
  /// Saves or restores the best value, the sum since the last check point and the inner trigger.
  void serialize(Serializer& s);
  const std::string& key() const { return key_; }  ///< The key compared.
  std::optional<double> best_value() const { return best_; }  ///< The best mean so far; unset before the first check.

 protected:
  /// The same, naming itself NAME in error messages (MaxValueTrigger, MinValueTrigger).
  BestValueTrigger(std::string name, std::string key, Compare compare, Trigger trigger);

 private:
  std::string name_, key_;
  Compare compare_;
  Trigger interval_trigger_;
  DictSummary summary_;
  std::optional<double> best_;
};

/// Fires when the mean of KEY becomes the largest so far, as `chainer.training.triggers.MaxValueTrigger`.
class MaxValueTrigger : public BestValueTrigger {
 public:
  /// Compares the mean of KEY at each firing of TRIGGER.
  explicit MaxValueTrigger(std::string key, Trigger trigger = {1, Unit::Epoch});
};

/// Fires when the mean of KEY becomes the smallest so far, as `chainer.training.triggers.MinValueTrigger`.
class MinValueTrigger : public BestValueTrigger {
 public:
  /// Compares the mean of KEY at each firing of TRIGGER.
  explicit MinValueTrigger(std::string key, Trigger trigger = {1, Unit::Epoch});
};

}  // namespace chainer::training
