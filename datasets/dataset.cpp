#include "datasets/dataset.h"

#include "datasets/concat_examples.h"

namespace chainer::datasets {

std::vector<Tensor> Dataset::get_batch(const std::vector<size_t>& indices) const {
  std::vector<Example> examples;
  examples.reserve(indices.size());
  for (size_t i : indices) examples.push_back(get_example(i));
  return dataset::concat_examples(examples);
}

std::optional<std::string> Dataset::describe(const std::vector<size_t>&) const { return std::nullopt; }

void Dataset::check_index(size_t i) const {
  if (i >= size()) throw Error(str("dataset index ", i, " is out of range for a dataset of size ", size()));
}

}  // namespace chainer::datasets
