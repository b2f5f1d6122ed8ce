#include "datasets/tuple_dataset.h"

#include "core/ops/ops.h"

namespace chainer::datasets {

TupleDataset::TupleDataset(std::vector<Tensor> fields) : fields_(std::move(fields)) {
  if (fields_.empty()) throw Error("TupleDataset: no fields were given");
  for (size_t k = 0; k < fields_.size(); ++k) {
    Tensor& f = fields_[k];
    if (!f.defined()) throw Error(str("TupleDataset: field ", k, " is undefined"));
    if (f.ndim() == 0) throw Error(str("TupleDataset: field ", k, " is a scalar; every field needs an axis 0"));
    if (f.size(0) != fields_[0].size(0))
      throw Error(str("TupleDataset: all fields must have the same length, but field 0 has length ",
                      fields_[0].size(0), " and field ", k, " has length ", f.size(0)));
    f = f.contiguous();
  }
  size_ = size_t(fields_[0].size(0));
}

Example TupleDataset::get_example(size_t i) const {
  check_index(i);
  Example example;
  example.reserve(fields_.size());
  for (const Tensor& f : fields_) example.push_back(f[int64_t(i)]);
  return example;
}

std::vector<Tensor> TupleDataset::get_batch(const std::vector<size_t>& indices) const {
  for (size_t i : indices) check_index(i);
  const std::vector<int64_t> rows(indices.begin(), indices.end());
  std::vector<Tensor> batch;
  batch.reserve(fields_.size());
  for (const Tensor& f : fields_) batch.push_back(ops::take_rows(f, rows));
  return batch;
}

std::shared_ptr<const TupleDataset> to_device(const DatasetPtr& dataset, Device device) {
  if (!dataset) throw Error("to_device: the dataset is null");
  std::vector<Tensor> fields;
  if (auto tuple = std::dynamic_pointer_cast<const TupleDataset>(dataset)) {
    fields = tuple->fields();
  } else {
    if (dataset->size() == 0) throw Error("to_device: the dataset is empty");
    std::vector<size_t> all(dataset->size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    fields = dataset->get_batch(all);
  }
  for (Tensor& f : fields) f = f.to(device);
  return std::make_shared<const TupleDataset>(std::move(fields));
}

}  // namespace chainer::datasets
