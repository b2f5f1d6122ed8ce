/// @file
/// SubDataset: a view of examples [start, finish) of a base dataset, optionally through a
/// permutation ORDER of the base's indices, as Chainer's chainer.datasets.SubDataset.
/// split_dataset / split_dataset_random cut a dataset in two such views (e.g. train/validation)
/// without copying any data.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "datasets/dataset.h"

namespace chainer::datasets {

/// A view of a contiguous range of another dataset's examples, optionally reordered.
class SubDataset : public Dataset {
 public:
  /// Example i is `base[order[start + i]]` (`base[start + i]` when ORDER is empty). ORDER, when
  /// given, must have one entry per base example, each in `[0, base->size())`.
  SubDataset(DatasetPtr base, size_t start, size_t finish, std::vector<int64_t> order = {});

  size_t size() const override { return finish_ - start_; }
  Example get_example(size_t i) const override;
  std::vector<Tensor> get_batch(const std::vector<size_t>& indices) const override;
  /// The base's description of the examples INDICES are here (nullopt when it has none).
  std::optional<std::string> describe(const std::vector<size_t>& indices) const override;

 private:
  size_t base_index(size_t i) const;
  std::vector<size_t> base_indices(const std::vector<size_t>& indices) const;
  DatasetPtr base_;
  size_t start_, finish_;
  std::vector<int64_t> order_;
};

/// Two datasets, as split_dataset returns them.
using DatasetPair = std::pair<DatasetPtr, DatasetPtr>;

/// {examples `[0, first_size)`, examples `[first_size, size)`}, taken through ORDER when given.
DatasetPair split_dataset(const DatasetPtr& dataset, size_t first_size, std::vector<int64_t> order = {});
/// split_dataset through a random permutation drawn from `chainer::Generator(seed)`.
DatasetPair split_dataset_random(const DatasetPtr& dataset, size_t first_size, uint64_t seed);

}  // namespace chainer::datasets
