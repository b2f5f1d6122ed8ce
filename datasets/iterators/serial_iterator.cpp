#include "datasets/iterators/serial_iterator.h"

namespace chainer::iterators {

namespace {
size_t checked_size(const datasets::DatasetPtr& dataset, const char* owner) {
  if (!dataset) throw Error(str(owner, ": the dataset is null"));
  return dataset->size();
}
}  // namespace

SerialIterator::SerialIterator(datasets::DatasetPtr dataset, int64_t batch_size, bool repeat, bool shuffle,
                               uint64_t seed)
    : dataset_(std::move(dataset)),
      state_("SerialIterator", checked_size(dataset_, "SerialIterator"), batch_size, repeat, shuffle, seed) {}

std::vector<Tensor> SerialIterator::next_batch() { return dataset_->get_batch(state_.next_indices()); }

std::vector<Example> SerialIterator::next() {
  std::vector<Example> batch;
  for (size_t i : state_.next_indices()) batch.push_back(dataset_->get_example(i));
  return batch;
}

}  // namespace chainer::iterators
