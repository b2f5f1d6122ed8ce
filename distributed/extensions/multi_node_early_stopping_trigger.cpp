#include "distributed/extensions/multi_node_early_stopping_trigger.h"

#include <iostream>
#include <limits>

#include "training/trainer.h"

namespace chainermn::extensions {

using chainer::Error;
using chainer::str;

namespace {
bool parse_mode(const std::string& mode, const std::string& monitor) {
  if (mode == "max") return true;
  if (mode == "min") return false;
  if (mode == "auto") return monitor.find("accuracy") != std::string::npos;
  throw Error(str("MultiNodeEarlyStoppingTrigger: mode must be 'auto', 'min' or 'max', got '", mode, "'"));
}
}  // namespace

MultiNodeEarlyStoppingTrigger::MultiNodeEarlyStoppingTrigger(std::shared_ptr<Communicator> comm,
                                                             chainer::training::IntervalTrigger check_trigger,
                                                             std::string monitor, int64_t patience,
                                                             const std::string& mode, bool verbose,
                                                             chainer::training::IntervalTrigger max_trigger)
    : comm_(comm),
      aggregator_(comm, monitor, monitor, check_trigger),
      patience_(patience),
      greater_(parse_mode(mode, monitor)),
      verbose_(verbose),
      max_trigger_(max_trigger),
      best_(greater_ ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity()) {
  if (patience < 0) throw Error(str("MultiNodeEarlyStoppingTrigger: patience must be >= 0, got ", patience));
  // Printed by rank 0 only: every rank decides alike, and N copies of each line say nothing more.
  if (verbose_ && comm_->rank() == 0)
    std::cout << "early stopping: operator is " << (greater_ ? "greater" : "less") << std::endl;
}

bool MultiNodeEarlyStoppingTrigger::operator()(const chainer::training::Trainer& trainer) {
  // The aggregator goes first at every call, as ChainerMN's: it collects this iteration's value
  // and advances the check trigger even when MAX_TRIGGER ends the training now.
  const std::optional<double> current = aggregator_.compute_summary(trainer);
  if (max_trigger_(trainer)) return true;
  if (!current) return false;
  if (greater_ ? *current > best_ : *current < best_) {
    best_ = *current;
    count_ = 0;
  } else {
    ++count_;
  }
  if (verbose_ && comm_->rank() == 0)
    std::cout << "early stopping: current " << *current << ", best " << best_ << ", count " << count_ << std::endl;
  if (count_ < patience_) return false;
  if (verbose_ && comm_->rank() == 0)
    std::cout << "Epoch " << trainer.updater().epoch() << ": early stopping" << std::endl;
  return true;
}

void MultiNodeEarlyStoppingTrigger::serialize(chainer::Serializer& s) {
  chainer::Serializer aggregator = s["aggregator"];
  aggregator_.serialize(aggregator);
  chainer::Serializer max_trigger = s["max_trigger"];
  max_trigger_.serialize(max_trigger);
  s.value("best", best_);
  s.value("count", count_);
}

}  // namespace chainermn::extensions
