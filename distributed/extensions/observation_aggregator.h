/// @file
/// ObservationAggregator, as chainermn.extensions.ObservationAggregator: collects the values
/// one key of the observation takes at every iteration on every rank, and each time its
/// communication trigger fires reports one number made from all of them (by default their
/// mean) under another key, the same on every rank. So a per-rank value such as "main/loss"
/// becomes a global one that LogReport, PrintReport or an early-stopping trigger can read.
///
/// It runs every iteration (its trigger; a value not reported at some iteration is simply not
/// collected) with PRIORITY_EDITOR, after the writers and before the readers. When COMM_TRIGGER
/// fires, rank 0 gathers every rank's values since the last firing, applies the aggregator to
/// them (one list per rank, in rank order) and broadcasts the result, which every rank reports
/// under the aggregated key. If no rank holds any value, nothing is called and nothing is
/// reported (ChainerMN's mean would divide by zero). An aggregator that throws makes every rank
/// throw, naming the key. Collective at the iterations COMM_TRIGGER fires: every rank runs the
/// same triggers.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "distributed/communicators/communicator.h"
#include "training/extension.h"
#include "training/trigger.h"

namespace chainermn::extensions {

/// Makes one number of every rank's values since the last communication: `values[r]` holds
/// rank r's, in the order they were reported (a list may be empty).
using Aggregator = std::function<double(const std::vector<std::vector<double>>& values)>;

/// The default aggregator: the mean of all values of all ranks (ChainerMN's _average_2d).
double mean_of_all(const std::vector<std::vector<double>>& values);

/// Aggregates one observation key over the iterations and the ranks (see above).
class ObservationAggregator : public chainer::training::Extension {
 public:
  /// Aggregates ORIGINAL_KEY over the ranks of COMM each time COMM_TRIGGER fires, with
  /// AGGREGATOR (mean_of_all when empty), and reports the result under AGGREGATED_KEY
  /// (ORIGINAL_KEY when empty, which overwrites this rank's value).
  ObservationAggregator(std::shared_ptr<Communicator> comm, std::string original_key, std::string aggregated_key = "",
                        chainer::training::IntervalTrigger comm_trigger = {1, chainer::training::Unit::Iteration},
                        Aggregator aggregator = {});

  /// Collects this iteration's value and, when COMM_TRIGGER fires, reports the aggregated one.
  void operator()(chainer::training::Trainer& trainer) override;
  /// What operator() computes, without reporting it: collects the value of the original key in
  /// TRAINER's observation and, when COMM_TRIGGER fires, returns the aggregated value (nullopt
  /// when it did not fire or no rank held a value). Collective when the trigger fires.
  std::optional<double> compute_summary(const chainer::training::Trainer& trainer);

  /// "ObservationAggregator".
  std::string default_name() const override { return "ObservationAggregator"; }
  /// Every iteration, so that every reported value is collected.
  chainer::training::Trigger default_trigger() const override {
    return chainer::training::IntervalTrigger(1, chainer::training::Unit::Iteration);
  }
  /// PRIORITY_EDITOR: after the writers (evaluators), before the readers (LogReport).
  int priority() const override { return chainer::training::PRIORITY_EDITOR; }
  /// Saves or restores the values collected since the last communication and COMM_TRIGGER's position.
  void serialize(chainer::Serializer& s) override;

  const std::string& original_key() const { return original_key_; }      ///< The key collected.
  const std::string& aggregated_key() const { return aggregated_key_; }  ///< The key reported.

 private:
  std::shared_ptr<Communicator> comm_;
  std::string original_key_, aggregated_key_;
  chainer::training::IntervalTrigger comm_trigger_;
  Aggregator aggregator_;
  std::vector<double> history_;  // this rank's values since the last communication
};

}  // namespace chainermn::extensions
