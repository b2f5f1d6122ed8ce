/// @file
/// TransformDataset: a dataset whose examples are another's passed through a function, computed
/// when read, as Chainer's chainer.datasets.TransformDataset (augmentation, preprocessing).
#pragma once
#include <functional>

#include "datasets/dataset.h"

namespace chainer::datasets {

/// Example i is `transform(base[i])`; the size is the base's.
class TransformDataset : public Dataset {
 public:
  /// The function applied to each example as it is read. It may be called from several threads
  /// at once (prefetching iterators), so it must not change shared state unguarded.
  using Transform = std::function<Example(const Example&)>;
  /// DATASET's examples through TRANSFORM.
  TransformDataset(DatasetPtr dataset, Transform transform);

  size_t size() const override { return dataset_->size(); }
  Example get_example(size_t i) const override;

  const DatasetPtr& dataset() const { return dataset_; }  ///< the base dataset

 private:
  DatasetPtr dataset_;
  Transform transform_;
};

}  // namespace chainer::datasets
