#include "datasets/concat_examples.h"

namespace chainer::dataset {

std::vector<Tensor> concat_examples(const std::vector<Example>& batch) {
  if (batch.empty()) throw Error("concat_examples: the batch is empty");
  const Example& first = batch.front();
  for (size_t j = 1; j < batch.size(); ++j)
    if (batch[j].size() != first.size())
      throw Error(str("concat_examples: example ", j, " has ", batch[j].size(), " fields but example 0 has ",
                      first.size()));

  std::vector<Tensor> out;
  out.reserve(first.size());
  for (size_t k = 0; k < first.size(); ++k) {
    const Tensor& ref = first[k];
    Shape shape{int64_t(batch.size())};
    shape.insert(shape.end(), ref.shape().begin(), ref.shape().end());
    Tensor stacked = Tensor::empty(shape, ref.dtype());
    for (size_t j = 0; j < batch.size(); ++j) {
      const Tensor& x = batch[j][k];
      if (!x.defined()) throw Error(str("concat_examples: field ", k, " of example ", j, " is undefined"));
      if (x.shape() != ref.shape())
        throw Error(str("concat_examples: field ", k, " of example ", j, " has shape ", shape_str(x.shape()),
                        " but example 0 has shape ", shape_str(ref.shape())));
      if (x.dtype() != ref.dtype())
        throw Error(str("concat_examples: field ", k, " of example ", j, " has dtype ", dtype_name(x.dtype()),
                        " but example 0 has dtype ", dtype_name(ref.dtype())));
      stacked[int64_t(j)].copy_(x);
    }
    out.push_back(std::move(stacked));
  }
  return out;
}

}  // namespace chainer::dataset
