#include "datasets/list_dataset.h"

namespace chainer::datasets {

ListDataset::ListDataset(std::vector<Example> examples) : examples_(std::move(examples)) {
  for (size_t i = 0; i < examples_.size(); ++i) {
    if (examples_[i].size() != examples_.front().size())
      throw Error(str("ListDataset: example ", i, " has ", examples_[i].size(), " fields but example 0 has ",
                      examples_.front().size()));
    for (size_t k = 0; k < examples_[i].size(); ++k)
      if (!examples_[i][k].defined()) throw Error(str("ListDataset: field ", k, " of example ", i, " is undefined"));
  }
}

Example ListDataset::get_example(size_t i) const {
  check_index(i);
  return examples_[i];
}

}  // namespace chainer::datasets
