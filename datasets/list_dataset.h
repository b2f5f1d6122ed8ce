/// @file
/// ListDataset: a dataset of examples held as they are, each field of any shape and dtype, as a
/// Python list of tuples of arrays is a Chainer dataset (the seq2seq example's
/// `[(source_ids, target_ids), ...]`, sentences of different lengths). Where TupleDataset needs
/// rows of one array per field, here every example keeps its own tensors: get_example hands them
/// out, and get_batch stacks them only when their shapes agree (concat_examples), so ragged data
/// goes through Iterator::next() and a converter (training/updater.h).
#pragma once
#include <vector>

#include "datasets/dataset.h"

namespace chainer::datasets {

/// An in-memory list of examples of any shapes, as a Python list of tuples of arrays.
class ListDataset : public Dataset {
 public:
  /// A dataset of EXAMPLES. Every tensor must be defined, and every example needs as many fields
  /// as example 0 (the shapes and dtypes of a field may differ between examples).
  explicit ListDataset(std::vector<Example> examples);

  size_t size() const override { return examples_.size(); }
  Example get_example(size_t i) const override;

  const std::vector<Example>& examples() const { return examples_; }  ///< The examples, in order.

 private:
  std::vector<Example> examples_;
};

}  // namespace chainer::datasets
