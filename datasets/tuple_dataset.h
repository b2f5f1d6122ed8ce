/// @file
/// TupleDataset: a dataset of in-memory arrays that share their first axis, as Chainer's
/// chainer.datasets.TupleDataset. Example i is the row views {fields[0][i], fields[1][i], ...};
/// get_batch copies rows straight into one batch tensor per field, on the fields' device.
/// fields() exposes the arrays so a distributed layer can serialize or scatter the data.
#pragma once
#include <memory>
#include <utility>
#include <vector>

#include "datasets/dataset.h"

namespace chainer::datasets {

/// A dataset of in-memory arrays, one per field, whose rows are the examples.
class TupleDataset : public Dataset {
 public:
  /// A dataset over FIELDS. Every field needs at least one axis, and all need the same length along axis 0.
  explicit TupleDataset(std::vector<Tensor> fields);

  size_t size() const override { return size_; }
  Example get_example(size_t i) const override;
  std::vector<Tensor> get_batch(const std::vector<size_t>& indices) const override;

  const std::vector<Tensor>& fields() const { return fields_; }  ///< The arrays, one per field; contiguous.

 private:
  std::vector<Tensor> fields_;
  size_t size_ = 0;
};

/// A {train, test} pair of in-memory datasets, as get_mnist and get_fashion_mnist return.
using TupleDatasetPair = std::pair<std::shared_ptr<const TupleDataset>, std::shared_ptr<const TupleDataset>>;

/// DATASET with every example gathered into one array per field on DEVICE, once: batches are then
/// gathered there (a GPU run copies MNIST to the device at the start, not a batch every step).
std::shared_ptr<const TupleDataset> to_device(const DatasetPtr& dataset, Device device);

}  // namespace chainer::datasets
