/// @file
/// MultiprocessIterator: the role of Chainer's chainer.iterators.MultiprocessIterator, loading
/// batches ahead of the training loop. Here one background std::thread computes up to
/// n_prefetch batches in advance and hands them over through a bounded queue. Its batches are
/// those of a SerialIterator with the same arguments and seed, in the same order.
/// The thread starts at the first batch requested; an exception in it is rethrown by next();
/// finalize(), reset(), restoring from a snapshot and the destructor stop it cleanly.
#pragma once
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "datasets/iterator.h"
#include "datasets/iterator_state.h"

namespace chainer::iterators {

/// An iterator whose batches a background thread prepares ahead, up to `n_prefetch` of them.
class MultiprocessIterator : public Iterator {
 public:
  /// Iterates over DATASET as a SerialIterator with the same arguments would, prefetching N_PREFETCH batches.
  MultiprocessIterator(datasets::DatasetPtr dataset, int64_t batch_size, bool repeat = true, bool shuffle = true,
                       uint64_t seed = 0, int64_t n_prefetch = 2);
  ~MultiprocessIterator() override;  ///< Stops the background thread.
  MultiprocessIterator(const MultiprocessIterator&) = delete;
  MultiprocessIterator& operator=(const MultiprocessIterator&) = delete;

  std::vector<Tensor> next_batch() override;
  std::vector<Example> next() override;  ///< Row views of the prefetched batch.
  bool has_next() const override { return state_.has_next(); }

  int64_t epoch() const override { return state_.epoch(); }
  double epoch_detail() const override { return state_.epoch_detail(); }
  std::optional<double> previous_epoch_detail() const override { return state_.previous_epoch_detail(); }
  bool is_new_epoch() const override { return state_.is_new_epoch(); }
  int64_t batch_size() const override { return state_.batch_size(); }
  int64_t current_position() const override { return state_.current_position(); }

  void reset() override;
  /// Back to the start, with the orders drawn from Generator(SEED) (IteratorState::reseed).
  void reseed(uint64_t seed);
  void serialize(Serializer& serializer) override;
  void finalize() override { stop(); }  ///< Stops the background thread; the next batch starts it again.

  const datasets::DatasetPtr& dataset() const { return dataset_; }  ///< The dataset iterated over.

 private:
  struct Prefetched {
    std::vector<Tensor> batch;
    IteratorState state;  // after this batch
    std::exception_ptr error;
  };
  void produce(IteratorState state);  // the background thread
  void stop();

  datasets::DatasetPtr dataset_;
  int64_t n_prefetch_;
  IteratorState state_;  // after the last batch handed out
  std::exception_ptr error_;

  std::thread worker_;
  std::mutex mutex_;
  std::condition_variable ready_, space_;
  std::deque<Prefetched> queue_;  // guarded by mutex_, as is stopping_
  bool stopping_ = false;
};

}  // namespace chainer::iterators
