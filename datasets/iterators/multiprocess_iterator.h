/// @file
/// MultiprocessIterator: Chainer's chainer.iterators.MultiprocessIterator, loading batches ahead
/// of the training loop. Its batches are those of a SerialIterator with the same arguments and
/// seed, in the same order, whatever the number of workers.
///
/// Workers are threads, not processes: a worker's work (decoding images, augmenting them) runs
/// outside the training thread's locks, the examples need no pickling or shared-memory buffers,
/// and an exception travels to the training thread as it is. Up to N_PREFETCH batches are
/// planned ahead, each cut into one chunk of examples per worker (dataset->get_batch of the
/// chunk; a chunk per batch with one worker); a worker takes the earliest chunk not taken, and a
/// batch is handed out when all its chunks are done, in order. The workers start at the first
/// batch requested; a worker's exception is rethrown by next() when its batch is reached (the
/// batches before it are handed out first); finalize(), reset(), restoring from a snapshot and
/// the destructor stop them cleanly. The dataset's get_batch runs on several threads at once:
/// it must allow concurrent calls (the library's datasets do).
///
/// Ragged data (examples of different shapes, a ListDataset of sentences) is read with next():
/// from the first next() on, the workers gather each chunk's examples with get_example instead
/// of stacking them, and next() hands them out as they are (next_batch() switches back).
#pragma once
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "datasets/iterators/iterator.h"
#include "datasets/iterators/iterator_state.h"

namespace chainer::iterators {

/// An iterator whose batches a background thread prepares ahead, up to `n_prefetch` of them.
class MultiprocessIterator : public Iterator {
 public:
  /// Iterates over DATASET as a SerialIterator with the same arguments would, N_PROCESSES worker
  /// threads (0, Chainer's None: chainer::num_threads()) preparing up to N_PREFETCH batches
  /// ahead. SHARED_MEM, Chainer's size of the shared-memory buffer per example, must be at least
  /// 0 and changes nothing: threads share memory.
  MultiprocessIterator(datasets::DatasetPtr dataset, int64_t batch_size, bool repeat = true, bool shuffle = true,
                       uint64_t seed = 0, int64_t n_prefetch = 2, int64_t n_processes = 0, int64_t shared_mem = 0);
  ~MultiprocessIterator() override;  ///< Stops the background thread.
  MultiprocessIterator(const MultiprocessIterator&) = delete;
  MultiprocessIterator& operator=(const MultiprocessIterator&) = delete;

  std::vector<Tensor> next_batch() override;
  /// The prefetched batch's examples: row views of stacked chunks, or, once next() is the call
  /// in use, the examples as get_example gave them (of any shapes).
  std::vector<Example> next() override;
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
  /// The current epoch becomes a pass over INDICES (IteratorState::continue_epoch_over); the
  /// batches prefetched for the old order are dropped.
  void continue_epoch_over(std::vector<int64_t> indices) override;
  /// The indices of the current epoch when continue_epoch_over made it; empty otherwise.
  const std::vector<int64_t>& epoch_indices() const { return state_.epoch_indices(); }
  void finalize() override { stop(); }  ///< Stops the workers; the next batch starts them again.

  const datasets::DatasetPtr& dataset() const { return dataset_; }  ///< The dataset iterated over.
  int64_t n_processes() const { return n_processes_; }              ///< The number of worker threads.
  /// The seconds the calling thread has spent in next_batch so far (waiting for the workers, then
  /// joining a batch's chunks): the training loop's data time, which loader workers should make
  /// small beside its step time.
  double data_seconds() const { return data_seconds_; }

 private:
  // A batch planned ahead: its examples cut into chunks, each computed by one worker.
  struct Planned {
    std::vector<size_t> indices;
    IteratorState state;  // after this batch
    bool as_examples = false;  // chunks gathered with get_example (for next()), not stacked
    std::vector<std::vector<Tensor>> chunks;
    std::vector<std::vector<Example>> example_chunks;  // as_examples: per chunk
    std::vector<std::exception_ptr> errors;  // per chunk
    size_t taken = 0;                        // chunks handed to workers
    size_t done = 0;                         // chunks finished
  };
  void work();  // a worker thread
  void stop();
  // The next planned batch once its chunks are done (as it was planned: stacked or as
  // examples); batches planned from now on are gathered AS_EXAMPLES. Rethrows a worker's error.
  Planned take(bool as_examples);

  datasets::DatasetPtr dataset_;
  int64_t n_prefetch_, n_processes_;
  IteratorState state_;  // after the last batch handed out
  std::exception_ptr error_;
  double data_seconds_ = 0;

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable ready_, work_;
  // Guarded by mutex_: the planned batches in order, the state after the last one, stopping_.
  std::deque<Planned> planned_;
  IteratorState ahead_;
  bool stopping_ = false;
  bool as_examples_ = false;  // how workers gather the batches they plan: for next() or next_batch()
};

}  // namespace chainer::iterators
