#include "datasets/tuple_dataset.h"

#include <cstring>

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
  std::vector<Tensor> batch;
  batch.reserve(fields_.size());
  for (const Tensor& f : fields_) {
    Shape shape = f.shape();
    shape[0] = int64_t(indices.size());
    Tensor out = Tensor::empty(shape, f.dtype());
    const size_t row_bytes = size_t(shape_numel(Shape(shape.begin() + 1, shape.end()))) * f.itemsize();
    if (row_bytes > 0 && !indices.empty()) {
      const char* src = static_cast<const char*>(f.raw_data());
      char* dst = static_cast<char*>(out.raw_data());
      for (size_t j = 0; j < indices.size(); ++j) std::memcpy(dst + j * row_bytes, src + indices[j] * row_bytes, row_bytes);
    }
    batch.push_back(std::move(out));
  }
  return batch;
}

}  // namespace chainer::datasets
