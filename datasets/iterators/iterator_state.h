/// @file
/// IteratorState: the bookkeeping of Chainer's SerialIterator (chainer/iterators/_statemachine.py)
/// shared by SerialIterator and MultiprocessIterator: which indices the next batch takes, the
/// position in the epoch, the epoch count and the shuffled order of the epoch.
/// A batch that crosses the end of an epoch is completed from the start of the next epoch's
/// order when repeating, and cut short otherwise. With shuffle, a fresh permutation is drawn from
/// a Generator(seed) at construction and at every epoch end, so the orders depend only on the
/// seed and the epoch count; serialize() saves the Generator state too, so a restored state
/// continues bit for bit.
/// continue_epoch_over makes the current epoch a pass over a given list of indices instead (what
/// is left of an epoch that a job of another process count interrupted); after it the epochs
/// are the normal ones again.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/util/random.h"
#include "core/io/serializer.h"

namespace chainer::iterators {

/// The position, epoch and order of an iterator over a dataset of fixed size, without the data.
class IteratorState {
 public:
  /// A state at the start of epoch 0; OWNER names the iterator in error messages.
  IteratorState(std::string owner, size_t dataset_size, int64_t batch_size, bool repeat, bool shuffle,
                uint64_t seed);

  /// Whether another batch follows (Iterator::has_next).
  bool has_next() const { return size_ > 0 && (repeat_ || epoch_ == 0); }
  void check_has_next() const;         ///< Throws StopIteration when `!has_next()`.
  /// The dataset indices of the next batch; advances; throws StopIteration when `!has_next()`.
  std::vector<size_t> next_indices();

  int64_t epoch() const { return epoch_; }  ///< Completed passes over the dataset.
  /// `epoch + position / size` (`/ L` during an epoch over L given indices), as Iterator::epoch_detail.
  double epoch_detail() const;
  std::optional<double> previous_epoch_detail() const;  ///< epoch_detail() before the last batch; none at first.
  bool is_new_epoch() const { return is_new_epoch_; }   ///< Whether the last batch crossed the end of an epoch.
  int64_t current_position() const { return position_; }  ///< Position in the current epoch's order.
  int64_t batch_size() const { return batch_size_; }    ///< Examples per batch.

  /// Makes the current epoch, from its start, a pass over INDICES (dataset indices, in this
  /// order, repeats allowed, at least one): the next batches take them, epoch_detail counts
  /// position / INDICES.size(), and the batch that reaches their end ends the epoch (is_new_epoch)
  /// and goes on into a normal epoch (a fresh order with shuffle). The epoch count is kept.
  /// Throws chainer::Error for an empty list or an index outside the dataset.
  void continue_epoch_over(std::vector<int64_t> indices);
  /// The indices of the current epoch when continue_epoch_over made it; empty otherwise.
  const std::vector<int64_t>& epoch_indices() const;

  void reset();  ///< Back to the state right after construction.
  /// reset(), with every order from now on (and after each reset()) drawn from Generator(SEED):
  /// how chainermn::create_synchronized_iterator gives every rank the same order.
  void reseed(uint64_t seed) {
    seed_ = seed;
    reset();
  }
  /// Saves or restores the state. Keys: current_position, epoch, is_new_epoch, previous_epoch_detail,
  /// order (with shuffle), rng_state, epoch_indices (continue_epoch_over's list, empty when the
  /// epoch is a normal one; a snapshot without the key has a normal epoch).
  void serialize(Serializer& serializer);

 private:
  size_t index_at(int64_t position) const;
  int64_t epoch_length() const { return given_ ? int64_t(given_->size()) : size_; }

  std::string owner_;
  int64_t size_, batch_size_;
  bool repeat_, shuffle_;
  uint64_t seed_;

  int64_t position_ = 0;
  int64_t epoch_ = 0;
  bool is_new_epoch_ = false;
  double previous_epoch_detail_ = -1.0;  // -1: none yet, as Chainer stores it
  std::shared_ptr<const std::vector<int64_t>> order_;  // null without shuffle; shared by copies
  Generator gen_;
  // continue_epoch_over's indices while its epoch lasts; null otherwise. Shared by copies.
  std::shared_ptr<const std::vector<int64_t>> given_;
};

}  // namespace chainer::iterators
