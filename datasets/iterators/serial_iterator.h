/// @file
/// SerialIterator: reads batches in the calling thread, as Chainer's
/// chainer.iterators.SerialIterator, with the same epoch accounting (see iterator_state.h).
/// With shuffle each epoch visits the examples in a fresh permutation drawn from
/// Generator(seed); without it, in index order.
#pragma once
#include "datasets/iterators/iterator.h"
#include "datasets/iterators/iterator_state.h"

namespace chainer::iterators {

/// An iterator that reads each batch in the calling thread, as `chainer.iterators.SerialIterator`.
class SerialIterator : public Iterator {
 public:
  /// Iterates over DATASET in batches of BATCH_SIZE; SEED fixes the shuffled orders.
  SerialIterator(datasets::DatasetPtr dataset, int64_t batch_size, bool repeat = true, bool shuffle = true,
                 uint64_t seed = 0);

  std::vector<Tensor> next_batch() override;
  std::vector<Example> next() override;
  bool has_next() const override { return state_.has_next(); }

  int64_t epoch() const override { return state_.epoch(); }
  double epoch_detail() const override { return state_.epoch_detail(); }
  std::optional<double> previous_epoch_detail() const override { return state_.previous_epoch_detail(); }
  bool is_new_epoch() const override { return state_.is_new_epoch(); }
  int64_t batch_size() const override { return state_.batch_size(); }
  int64_t current_position() const override { return state_.current_position(); }

  void reset() override { state_.reset(); }
  /// Back to the start, with the orders drawn from Generator(SEED) (IteratorState::reseed).
  void reseed(uint64_t seed) { state_.reseed(seed); }
  void serialize(Serializer& serializer) override { state_.serialize(serializer); }
  /// The current epoch becomes a pass over INDICES (IteratorState::continue_epoch_over).
  void continue_epoch_over(std::vector<int64_t> indices) override { state_.continue_epoch_over(std::move(indices)); }
  /// The indices of the current epoch when continue_epoch_over made it; empty otherwise.
  const std::vector<int64_t>& epoch_indices() const { return state_.epoch_indices(); }

  const datasets::DatasetPtr& dataset() const { return dataset_; }  ///< The dataset iterated over.

 private:
  datasets::DatasetPtr dataset_;
  IteratorState state_;
};

}  // namespace chainer::iterators
