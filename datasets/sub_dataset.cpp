#include "datasets/sub_dataset.h"

#include "core/util/random.h"

namespace chainer::datasets {

SubDataset::SubDataset(DatasetPtr base, size_t start, size_t finish, std::vector<int64_t> order)
    : base_(std::move(base)), start_(start), finish_(finish), order_(std::move(order)) {
  if (!base_) throw Error("SubDataset: the base dataset is null");
  const size_t n = base_->size();
  if (start_ > finish_ || finish_ > n)
    throw Error(str("SubDataset: the range [", start_, ", ", finish_, ") does not fit a base dataset of size ", n));
  if (!order_.empty()) {
    if (order_.size() != n)
      throw Error(str("SubDataset: the order must have one entry per base example, but it has ", order_.size(),
                      " entries and the base dataset has ", n, " examples"));
    for (size_t j = 0; j < n; ++j)
      if (order_[j] < 0 || uint64_t(order_[j]) >= n)
        throw Error(str("SubDataset: order[", j, "] = ", order_[j], " is not an index of a base dataset of size ", n));
  }
}

size_t SubDataset::base_index(size_t i) const {
  check_index(i);
  const size_t j = start_ + i;
  return order_.empty() ? j : size_t(order_[j]);
}

Example SubDataset::get_example(size_t i) const { return base_->get_example(base_index(i)); }

std::vector<size_t> SubDataset::base_indices(const std::vector<size_t>& indices) const {
  std::vector<size_t> out;
  out.reserve(indices.size());
  for (size_t i : indices) out.push_back(base_index(i));
  return out;
}

std::vector<Tensor> SubDataset::get_batch(const std::vector<size_t>& indices) const {
  return base_->get_batch(base_indices(indices));
}

std::optional<std::string> SubDataset::describe(const std::vector<size_t>& indices) const {
  return base_->describe(base_indices(indices));
}

DatasetPair split_dataset(const DatasetPtr& dataset, size_t first_size, std::vector<int64_t> order) {
  if (!dataset) throw Error("split_dataset: the dataset is null");
  const size_t n = dataset->size();
  if (first_size > n)
    throw Error(str("split_dataset: first_size ", first_size, " exceeds the dataset size ", n));
  return {std::make_shared<SubDataset>(dataset, 0, first_size, order),
          std::make_shared<SubDataset>(dataset, first_size, n, std::move(order))};
}

DatasetPair split_dataset_random(const DatasetPtr& dataset, size_t first_size, uint64_t seed) {
  if (!dataset) throw Error("split_dataset_random: the dataset is null");
  Generator gen(seed);
  return split_dataset(dataset, first_size, gen.permutation(int64_t(dataset->size())));
}

}  // namespace chainer::datasets
