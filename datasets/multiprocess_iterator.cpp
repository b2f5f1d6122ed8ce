#include "datasets/multiprocess_iterator.h"

namespace chainer::iterators {

namespace {
size_t checked_size(const datasets::DatasetPtr& dataset, const char* owner) {
  if (!dataset) throw Error(str(owner, ": the dataset is null"));
  return dataset->size();
}
}  // namespace

MultiprocessIterator::MultiprocessIterator(datasets::DatasetPtr dataset, int64_t batch_size, bool repeat,
                                           bool shuffle, uint64_t seed, int64_t n_prefetch)
    : dataset_(std::move(dataset)),
      n_prefetch_(n_prefetch),
      state_("MultiprocessIterator", checked_size(dataset_, "MultiprocessIterator"), batch_size, repeat, shuffle,
             seed) {
  if (n_prefetch < 1) throw Error(str("MultiprocessIterator: n_prefetch must be at least 1, got ", n_prefetch));
}

MultiprocessIterator::~MultiprocessIterator() { stop(); }

void MultiprocessIterator::produce(IteratorState state) {
  try {
    while (state.has_next()) {
      {
        std::unique_lock lock(mutex_);
        space_.wait(lock, [&] { return stopping_ || int64_t(queue_.size()) < n_prefetch_; });
        if (stopping_) return;
      }
      std::vector<Tensor> batch = dataset_->get_batch(state.next_indices());
      std::lock_guard lock(mutex_);
      queue_.push_back({std::move(batch), state, nullptr});
      ready_.notify_one();
    }
  } catch (...) {
    std::lock_guard lock(mutex_);
    queue_.push_back({{}, state, std::current_exception()});
    ready_.notify_one();
  }
}

void MultiprocessIterator::stop() {
  if (!worker_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  space_.notify_all();
  worker_.join();
  stopping_ = false;
  queue_.clear();
}

std::vector<Tensor> MultiprocessIterator::next_batch() {
  if (error_) std::rethrow_exception(error_);
  state_.check_has_next();
  if (!worker_.joinable()) worker_ = std::thread(&MultiprocessIterator::produce, this, state_);

  std::unique_lock lock(mutex_);
  ready_.wait(lock, [&] { return !queue_.empty(); });
  Prefetched item = std::move(queue_.front());
  queue_.pop_front();
  lock.unlock();
  space_.notify_one();

  if (item.error) {
    error_ = item.error;
    std::rethrow_exception(error_);
  }
  state_ = std::move(item.state);
  return std::move(item.batch);
}

std::vector<Example> MultiprocessIterator::next() {
  const std::vector<Tensor> batch = next_batch();
  const int64_t n = batch.empty() ? 0 : batch.front().size(0);
  std::vector<Example> examples(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j)
    for (const Tensor& field : batch) examples[size_t(j)].push_back(field[j]);
  return examples;
}

void MultiprocessIterator::reset() {
  stop();
  error_ = nullptr;
  state_.reset();
}

void MultiprocessIterator::reseed(uint64_t seed) {
  stop();  // the prefetched batches follow the old order
  error_ = nullptr;
  state_.reseed(seed);
}

void MultiprocessIterator::serialize(Serializer& serializer) {
  if (!serializer.is_reader()) {
    state_.serialize(serializer);
    return;
  }
  stop();  // the prefetched batches belong to the old position
  state_.serialize(serializer);
  error_ = nullptr;
}

}  // namespace chainer::iterators
