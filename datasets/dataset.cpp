#include "datasets/dataset.h"

#include "datasets/concat_examples.h"

namespace chainer::datasets {

std::vector<Tensor> Dataset::get_batch(const std::vector<size_t>& indices) const {
  std::vector<Example> examples;
  examples.reserve(indices.size());
  for (size_t i : indices) examples.push_back(get_example(i));
  if (examples.empty()) return dataset::concat_examples(examples);  // its own error
  try {
    return dataset::concat_examples(examples);
  } catch (const Error& e) {
    // Most likely ragged data (a ListDataset of sentences): say where such batches go instead.
    throw Error(str("get_batch (what Iterator::next_batch calls): the examples cannot be stacked into one array per "
                    "field: ", e.what(), ". For examples of different shapes take batches with Iterator::next() and "
                    "give the updater and the evaluator a converter (concat_examples with a padding, or your own)"));
  }
}

std::optional<std::string> Dataset::describe(const std::vector<size_t>&) const { return std::nullopt; }

void Dataset::check_index(size_t i) const {
  if (i >= size()) throw Error(str("dataset index ", i, " is out of range for a dataset of size ", size()));
}

}  // namespace chainer::datasets
