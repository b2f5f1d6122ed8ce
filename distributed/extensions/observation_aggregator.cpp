#include "distributed/extensions/observation_aggregator.h"

#include <utility>

#include "nn/reporter.h"
#include "training/trainer.h"

namespace chainermn::extensions {

using chainer::Error;
using chainer::str;

double mean_of_all(const std::vector<std::vector<double>>& values) {
  double sum = 0;
  size_t count = 0;
  for (const std::vector<double>& rank : values)
    for (double v : rank) sum += v, ++count;
  if (count == 0) throw Error("ObservationAggregator: the mean of no values (no rank reported the key)");
  return sum / double(count);
}

ObservationAggregator::ObservationAggregator(std::shared_ptr<Communicator> comm, std::string original_key,
                                             std::string aggregated_key, chainer::training::IntervalTrigger comm_trigger,
                                             Aggregator aggregator)
    : comm_(std::move(comm)),
      original_key_(std::move(original_key)),
      aggregated_key_(aggregated_key.empty() ? original_key_ : std::move(aggregated_key)),
      comm_trigger_(comm_trigger),
      aggregator_(aggregator ? std::move(aggregator) : Aggregator(mean_of_all)) {
  if (!comm_) throw Error("ObservationAggregator: the communicator is null");
  if (original_key_.empty()) throw Error("ObservationAggregator: the original key is empty; name an observation key such as 'main/loss'");
}

std::optional<double> ObservationAggregator::compute_summary(const chainer::training::Trainer& trainer) {
  const chainer::Observation& observation = trainer.observation();
  if (auto it = observation.find(original_key_); it != observation.end()) history_.push_back(it->second.value());
  if (!comm_trigger_(trainer)) return std::nullopt;

  const std::vector<std::vector<double>> gathered = comm_->gather_obj(history_, 0);
  history_.clear();
  // Rank 0 aggregates and broadcasts (value, error): an aggregator that throws there makes every
  // rank throw, instead of leaving the others waiting in the broadcast. has = 0: no value anywhere.
  double result = 0;
  int64_t has = 0;
  std::string error;
  if (comm_->rank() == 0) {
    for (const std::vector<double>& rank : gathered) has += rank.empty() ? 0 : 1;
    if (has > 0) {
      try {
        result = aggregator_(gathered);
      } catch (const std::exception& e) {
        error = e.what();
      }
    }
  }
  const auto [answer, message] = comm_->bcast_obj(std::make_pair(std::make_pair(has, result), error), 0);
  if (!message.empty())
    throw Error(str("ObservationAggregator: the aggregator of '", original_key_, "' threw on rank 0: ", message));
  if (answer.first == 0) return std::nullopt;
  return answer.second;
}

void ObservationAggregator::operator()(chainer::training::Trainer& trainer) {
  // The reporter scope Trainer::run opens around each iteration holds trainer.observation(); a
  // report without an observer lands under the key as it is.
  if (const std::optional<double> summary = compute_summary(trainer)) chainer::report({{aggregated_key_, *summary}});
}

void ObservationAggregator::serialize(chainer::Serializer& s) {
  chainer::Serializer trigger = s["comm_trigger"];
  comm_trigger_.serialize(trigger);
  // A reader gets an undefined tensor to fill: the saved history has a length of its own.
  chainer::Tensor history = s.is_reader() ? chainer::Tensor() : chainer::Tensor::from_vector(history_);
  s.tensor("observation_history", history);
  if (s.is_reader()) history_ = history.to_vector<double>();
}

}  // namespace chainermn::extensions
