// IteratorState: the bookkeeping of Chainer's SerialIterator (chainer/iterators/_statemachine.py)
// shared by SerialIterator and MultiprocessIterator: which indices the next batch takes, the
// position in the epoch, the epoch count and the shuffled order of the epoch.
// A batch that crosses the end of an epoch is completed from the start of the next epoch's
// order when repeating, and cut short otherwise. With shuffle, a fresh permutation is drawn from
// a Generator(seed) at construction and at every epoch end, so the orders depend only on the
// seed and the epoch count; serialize() saves the Generator state too, so a restored state
// continues bit for bit.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/random.h"
#include "core/serializer.h"

namespace chainer::iterators {

class IteratorState {
 public:
  // OWNER names the iterator in error messages.
  IteratorState(std::string owner, size_t dataset_size, int64_t batch_size, bool repeat, bool shuffle,
                uint64_t seed);

  bool has_next() const { return size_ > 0 && (repeat_ || epoch_ == 0); }
  void check_has_next() const;         // throws StopIteration when !has_next()
  std::vector<size_t> next_indices();  // advances; throws StopIteration when !has_next()

  int64_t epoch() const { return epoch_; }
  double epoch_detail() const;
  std::optional<double> previous_epoch_detail() const;
  bool is_new_epoch() const { return is_new_epoch_; }
  int64_t current_position() const { return position_; }
  int64_t batch_size() const { return batch_size_; }

  void reset();
  // reset(), with every order from now on (and after each reset()) drawn from Generator(SEED):
  // how chainermn::create_synchronized_iterator gives every rank the same order.
  void reseed(uint64_t seed) {
    seed_ = seed;
    reset();
  }
  // Keys: current_position, epoch, is_new_epoch, previous_epoch_detail, order (with shuffle), rng_state.
  void serialize(Serializer& serializer);

 private:
  size_t index_at(int64_t position) const;

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
};

}  // namespace chainer::iterators
