#include "training/triggers/early_stopping_trigger.h"

#include <iostream>
#include <limits>

#include "training/trainer.h"

namespace chainer::training {

EarlyStoppingTrigger::EarlyStoppingTrigger(Trigger check_trigger, std::string monitor, int64_t patience,
                                           std::string mode, bool verbose, Trigger max_trigger)
    : monitor_(std::move(monitor)),
      patience_(patience),
      verbose_(verbose),
      interval_trigger_(std::move(check_trigger)),
      max_trigger_(std::move(max_trigger)) {
  if (mode == "max") maximize_ = true;
  else if (mode == "min") maximize_ = false;
  else if (mode == "auto") maximize_ = monitor_.find("accuracy") != std::string::npos;
  else throw Error(str("EarlyStoppingTrigger: mode '", mode, "' is not 'max', 'min' or 'auto'"));
  if (patience < 0) throw Error(str("EarlyStoppingTrigger: patience must be >= 0, got ", patience));
  best_ = maximize_ ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  if (verbose_) std::cout << "early stopping: operator is " << (maximize_ ? "greater" : "less") << std::endl;
}

bool EarlyStoppingTrigger::operator()(const Trainer& trainer) {
  const Observation& observation = trainer.observation();
  const auto it = observation.find(monitor_);
  if (it != observation.end()) summary_.add({{monitor_, it->second}});
  // Chainer's order: the max trigger first (the check trigger is then not called), and a check
  // point at which the monitored key is missing from this observation is skipped.
  if (max_trigger_(trainer)) return true;
  if (!interval_trigger_(trainer)) return false;
  if (it == observation.end()) {
    if (!warned_) std::cerr << "EarlyStoppingTrigger: warning: '" << monitor_ << "' is not in the observation\n";
    warned_ = true;
    return false;
  }
  const double current = summary_.compute_mean().at(monitor_).value();
  summary_ = DictSummary();
  if (maximize_ ? current > best_ : current < best_) {
    best_ = current;
    count_ = 0;
  } else {
    ++count_;
  }
  if (count_ < patience_) return false;
  if (verbose_) std::cout << "Epoch " << trainer.updater().epoch() << ": early stopping" << std::endl;
  return true;
}

void EarlyStoppingTrigger::serialize(Serializer& s) {
  s.value("count", count_);
  s.value("best", best_);
  Serializer sum = s["_summary"];
  summary_.serialize(sum);
  Serializer check = s["_interval_trigger"];
  interval_trigger_.serialize(check);
  Serializer max = s["_max_trigger"];
  max_trigger_.serialize(max);
}

}  // namespace chainer::training
