/// @file
/// Iterator: hands out mini-batches of a dataset epoch after epoch, as Chainer's
/// chainer.dataset.Iterator. Updaters call next_batch() (the stacked arrays the default converter
/// would make); next() gives Chainer's list of examples, unstacked: how examples of different
/// shapes (ragged data) are read, on which next_batch() throws chainer::Error. Triggers read
/// epoch, epoch_detail and is_new_epoch; snapshots save and restore the position through serialize().
/// One thread consumes an iterator; it is not safe to call it from several threads at once.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "core/util/error.h"
#include "core/io/serializer.h"
#include "datasets/dataset.h"

namespace chainer::iterators {

using datasets::Example;

/// Thrown by next() and next_batch() of a non-repeating iterator after its last batch (Python's
/// StopIteration); has_next() tells in advance.
class StopIteration : public Error {
 public:
  using Error::Error;
};

/// Hands out mini-batches of a dataset epoch after epoch, as `chainer.dataset.Iterator`.
class Iterator {
 public:
  virtual ~Iterator() = default;

  virtual std::vector<Tensor> next_batch() = 0;  ///< The next batch: one tensor per field, batch along axis 0.
  /// The next batch as its examples, of any shapes (Chainer's `next()`).
  virtual std::vector<Example> next() = 0;
  /// Whether another batch follows: false once a non-repeating iterator has handed out its last.
  virtual bool has_next() const = 0;

  virtual int64_t epoch() const = 0;           ///< Completed passes over the dataset.
  virtual double epoch_detail() const = 0;     ///< `epoch + position / size`: 1.5 is half-way through epoch 2.
  /// epoch_detail() before the last batch; none at first.
  virtual std::optional<double> previous_epoch_detail() const = 0;
  virtual bool is_new_epoch() const = 0;       ///< Whether the last batch crossed the end of an epoch.
  virtual int64_t batch_size() const = 0;      ///< Examples per batch (a last, non-repeating batch may have fewer).
  virtual int64_t current_position() const = 0;  ///< Position in the current epoch's order.

  virtual void reset() = 0;  ///< Back to the state right after construction.
  /// Saves or restores the position (epoch, order, random state) for snapshots.
  virtual void serialize(Serializer& serializer) = 0;
  virtual void finalize() {}  ///< Releases threads or other resources; the iterator may be destroyed next.
  /// Makes the current epoch, from its start, a pass over INDICES (dataset indices, repeats
  /// allowed), after which the epochs are the normal ones (IteratorState::continue_epoch_over):
  /// how a checkpoint resumes the interrupted epoch in a job of another process count. This
  /// default throws chainer::Error; SerialIterator and MultiprocessIterator support it.
  virtual void continue_epoch_over(std::vector<int64_t> indices);
};

inline void Iterator::continue_epoch_over(std::vector<int64_t> /*indices*/) {
  throw Error("continue_epoch_over: this iterator cannot run an epoch over given indices (SerialIterator and "
              "MultiprocessIterator can)");
}

}  // namespace chainer::iterators
