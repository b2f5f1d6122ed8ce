#include "datasets/transform_dataset.h"

namespace chainer::datasets {

TransformDataset::TransformDataset(DatasetPtr dataset, Transform transform)
    : dataset_(std::move(dataset)), transform_(std::move(transform)) {
  if (!dataset_) throw Error("TransformDataset: the dataset is null");
  if (!transform_) throw Error("TransformDataset: the transform is empty");
}

Example TransformDataset::get_example(size_t i) const {
  check_index(i);
  return transform_(dataset_->get_example(i));
}

}  // namespace chainer::datasets
