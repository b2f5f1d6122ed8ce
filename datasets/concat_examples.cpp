#include "datasets/concat_examples.h"

#include <algorithm>

namespace chainer::dataset {

namespace {

void check_field_counts(const std::vector<Example>& batch) {
  if (batch.empty()) throw Error("concat_examples: the batch is empty");
  for (size_t j = 1; j < batch.size(); ++j)
    if (batch[j].size() != batch.front().size())
      throw Error(str("concat_examples: example ", j, " has ", batch[j].size(), " fields but example 0 has ",
                      batch.front().size()));
}

// Field K of every example, checked to be defined and of example 0's dtype.
void check_field(const std::vector<Example>& batch, size_t k) {
  const Tensor& ref = batch.front()[k];
  for (size_t j = 0; j < batch.size(); ++j) {
    const Tensor& x = batch[j][k];
    if (!x.defined()) throw Error(str("concat_examples: field ", k, " of example ", j, " is undefined"));
    if (x.dtype() != ref.dtype())
      throw Error(str("concat_examples: field ", k, " of example ", j, " has dtype ", dtype_name(x.dtype()),
                      " but example 0 has dtype ", dtype_name(ref.dtype())));
  }
}

// Field K stacked on WHERE: every example's shape must be example 0's.
Tensor stack_field(const std::vector<Example>& batch, size_t k, Device where, bool padding_possible) {
  const Tensor& ref = batch.front()[k];
  Shape shape{int64_t(batch.size())};
  shape.insert(shape.end(), ref.shape().begin(), ref.shape().end());
  Tensor stacked = Tensor::empty(shape, ref.dtype(), where);
  for (size_t j = 0; j < batch.size(); ++j) {
    const Tensor& x = batch[j][k];
    if (!x.defined()) throw Error(str("concat_examples: field ", k, " of example ", j, " is undefined"));
    if (x.shape() != ref.shape())
      throw Error(str("concat_examples: field ", k, " of example ", j, " has shape ", shape_str(x.shape()),
                      " but example 0 has shape ", shape_str(ref.shape()),
                      padding_possible ? "; give a padding to stack examples of different shapes" : ""));
    if (x.dtype() != ref.dtype())
      throw Error(str("concat_examples: field ", k, " of example ", j, " has dtype ", dtype_name(x.dtype()),
                      " but example 0 has dtype ", dtype_name(ref.dtype())));
    stacked[int64_t(j)].copy_(x);
  }
  return stacked;
}

// Field K padded with VALUE to the largest extent of every axis (Chainer's
// _concat_arrays_with_padding): filled once, then each example copied into its leading corner.
Tensor pad_field(const std::vector<Example>& batch, size_t k, double value) {
  check_field(batch, k);  // before reading example 0's dtype and device
  const Tensor& ref = batch.front()[k];
  Shape largest = ref.shape();
  for (size_t j = 1; j < batch.size(); ++j) {
    const Shape& s = batch[j][k].shape();
    if (s.size() != largest.size())
      throw Error(str("concat_examples: field ", k, " of example ", j, " has shape ", shape_str(s), " but example 0 has ",
                      "shape ", shape_str(ref.shape()), "; padding needs the same number of axes"));
    for (size_t d = 0; d < s.size(); ++d) largest[d] = std::max(largest[d], s[d]);
  }
  Shape shape{int64_t(batch.size())};
  shape.insert(shape.end(), largest.begin(), largest.end());
  Tensor out = Tensor::full(shape, value, ref.dtype(), ref.device());
  for (size_t j = 0; j < batch.size(); ++j) {
    const Tensor& x = batch[j][k];
    Tensor corner = out[int64_t(j)];
    for (int64_t d = 0; d < x.ndim(); ++d) corner = corner.narrow(d, 0, x.size(d));
    corner.copy_(x);
  }
  return out;
}

}  // namespace

std::vector<Tensor> concat_examples(const std::vector<Example>& batch) {
  check_field_counts(batch);
  std::vector<Tensor> out;
  out.reserve(batch.front().size());
  for (size_t k = 0; k < batch.front().size(); ++k) out.push_back(stack_field(batch, k, Device::cpu(), false));
  return out;
}

std::optional<double> Padding::of_field(size_t k, size_t n_fields) const {
  if (!is_per_field_) return all_;
  if (per_field_.size() != n_fields)
    throw Error(str("concat_examples: the padding has ", per_field_.size(), " values (one per field) but the examples "
                    "have ", n_fields, " fields"));
  return per_field_[k];
}

std::vector<Tensor> concat_examples(const std::vector<Example>& batch, std::optional<Device> device,
                                    const Padding& padding) {
  check_field_counts(batch);
  const size_t n_fields = batch.front().size();
  std::vector<Tensor> out;
  out.reserve(n_fields);
  for (size_t k = 0; k < n_fields; ++k) {
    const std::optional<double> pad = padding.of_field(k, n_fields);
    const Tensor& first = batch.front()[k];
    const Device where = first.defined() ? first.device() : Device::cpu();
    Tensor field = pad ? pad_field(batch, k, *pad) : stack_field(batch, k, where, true);
    // Stacked where the examples are, then moved in one copy (not one per example).
    out.push_back(device ? field.to(*device) : std::move(field));
  }
  return out;
}

}  // namespace chainer::dataset
