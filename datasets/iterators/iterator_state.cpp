#include "datasets/iterators/iterator_state.h"

#include <algorithm>

#include "datasets/iterators/iterator.h"

namespace chainer::iterators {

IteratorState::IteratorState(std::string owner, size_t dataset_size, int64_t batch_size, bool repeat,
                             bool shuffle, uint64_t seed)
    : owner_(std::move(owner)), size_(int64_t(dataset_size)), batch_size_(batch_size), repeat_(repeat),
      shuffle_(shuffle), seed_(seed) {
  if (batch_size <= 0) throw Error(str(owner_, ": batch_size must be positive, got ", batch_size));
  if (repeat && dataset_size == 0)
    throw Error(str(owner_, ": the dataset is empty, so a repeating iterator would never yield a batch"));
  reset();
}

void IteratorState::reset() {
  position_ = 0;
  epoch_ = 0;
  is_new_epoch_ = false;
  previous_epoch_detail_ = -1.0;
  given_ = nullptr;
  gen_.seed(seed_);
  order_ = shuffle_ ? std::make_shared<const std::vector<int64_t>>(gen_.permutation(size_)) : nullptr;
}

size_t IteratorState::index_at(int64_t position) const {
  if (given_) return size_t((*given_)[size_t(position)]);
  return size_t(order_ ? (*order_)[size_t(position)] : position);
}

void IteratorState::check_has_next() const {
  if (!has_next())
    throw StopIteration(str(owner_, ": no more batches (repeat is false and the epoch is complete); ",
                            "call reset() to iterate again"));
}

std::vector<size_t> IteratorState::next_indices() {
  check_has_next();
  previous_epoch_detail_ = epoch_detail();
  std::vector<size_t> indices;
  indices.reserve(size_t(batch_size_));
  int64_t i = position_, length = epoch_length();
  int64_t i_end = repeat_ ? i + batch_size_ : std::min(i + batch_size_, length);
  is_new_epoch_ = false;
  while (i_end >= length) {  // the batch reaches the end of the epoch
    for (; i < length; ++i) indices.push_back(index_at(i));
    if (shuffle_) order_ = std::make_shared<const std::vector<int64_t>>(gen_.permutation(size_));
    given_ = nullptr;
    i = 0;
    i_end = repeat_ ? i_end - length : 0;
    length = size_;
    ++epoch_;
    is_new_epoch_ = true;
  }
  for (; i < i_end; ++i) indices.push_back(index_at(i));
  position_ = i_end;
  return indices;
}

double IteratorState::epoch_detail() const {
  const int64_t length = epoch_length();
  return length > 0 ? double(epoch_) + double(position_) / double(length) : double(epoch_);
}

void IteratorState::continue_epoch_over(std::vector<int64_t> indices) {
  if (indices.empty()) throw Error(str(owner_, ".continue_epoch_over: the list of indices is empty"));
  for (int64_t v : indices)
    if (v < 0 || v >= size_)
      throw Error(str(owner_, ".continue_epoch_over: index ", v, " is outside the dataset of size ", size_));
  given_ = std::make_shared<const std::vector<int64_t>>(std::move(indices));
  position_ = 0;
}

const std::vector<int64_t>& IteratorState::epoch_indices() const {
  static const std::vector<int64_t> none;
  return given_ ? *given_ : none;
}

std::optional<double> IteratorState::previous_epoch_detail() const {
  if (previous_epoch_detail_ < 0) return std::nullopt;
  return previous_epoch_detail_;
}

void IteratorState::serialize(Serializer& s) {
  int64_t position = position_, epoch = epoch_;
  bool is_new_epoch = is_new_epoch_;
  double previous = previous_epoch_detail_;
  std::vector<int64_t> order = order_ ? *order_ : std::vector<int64_t>{};
  std::vector<uint64_t> rng = gen_.state();
  std::vector<int64_t> given = epoch_indices();
  s.value("current_position", position);
  s.value("epoch", epoch);
  s.value("is_new_epoch", is_new_epoch);
  s.value("previous_epoch_detail", previous);
  if (shuffle_) s.value("order", order);
  s.value("rng_state", rng);
  if (!s.is_reader() || s.contains("epoch_indices")) s.value("epoch_indices", given);
  else given.clear();
  if (!s.is_reader()) return;

  // Check everything before changing anything, so a bad snapshot leaves the state as it was.
  const int64_t length = given.empty() ? size_ : int64_t(given.size());
  if (position < 0 || position > length || epoch < 0)
    throw Error(str(owner_, ": the snapshot's position ", position, " (epoch ", epoch,
                    ") does not fit ", given.empty() ? "a dataset" : "an epoch over given indices", " of size ",
                    length));
  for (int64_t v : given)
    if (v < 0 || v >= size_)
      throw Error(str(owner_, ": the snapshot's epoch_indices hold ", v, ", outside the dataset of size ", size_));
  if (shuffle_) {
    if (int64_t(order.size()) != size_)
      throw Error(str(owner_, ": the snapshot's order has ", order.size(), " entries but the dataset has ", size_,
                      " examples (a snapshot of another dataset, or of a job with another process count, whose "
                      "scattered shares had other lengths?)"));
    std::vector<bool> seen(order.size(), false);
    for (int64_t v : order) {
      if (v < 0 || v >= size_ || seen[size_t(v)])
        throw Error(str(owner_, ": the snapshot's order is not a permutation of 0..", size_ - 1));
      seen[size_t(v)] = true;
    }
  }
  Generator gen;
  gen.set_state(rng);

  position_ = position;
  epoch_ = epoch;
  is_new_epoch_ = is_new_epoch;
  previous_epoch_detail_ = previous;
  if (shuffle_) order_ = std::make_shared<const std::vector<int64_t>>(std::move(order));
  given_ = given.empty() ? nullptr : std::make_shared<const std::vector<int64_t>>(std::move(given));
  gen_ = gen;
}

}  // namespace chainer::iterators
