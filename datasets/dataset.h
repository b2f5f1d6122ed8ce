/// @file
/// Dataset: random access to examples, as Chainer's dataset protocol (len + get_example).
/// An Example holds one tensor per field, e.g. {image (784,) float32, label () int32}.
/// get_batch gathers many examples into one tensor per field; the default stacks get_example
/// results, and in-memory datasets override it with a direct row gather. Datasets are immutable
/// and shared as `std::shared_ptr<const Dataset>`, so iterators and subsets can hold them cheaply.
/// A dataset of files may also describe some of its examples in a few bytes (describe), from which
/// another process rebuilds them and reads the files itself (datasets/dataset_description.h).
#pragma once
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor/tensor.h"

namespace chainer::datasets {

/// One example: one tensor per field (e.g. image and label).
using Example = std::vector<Tensor>;

/// An immutable, randomly accessible collection of examples (Chainer's dataset protocol).
class Dataset {
 public:
  virtual ~Dataset() = default;
  /// The number of examples (Python's `len`).
  virtual size_t size() const = 0;
  virtual Example get_example(size_t i) const = 0;  ///< Example `i`; throws chainer::Error when `i >= size()`.
  /// One tensor per field with the examples stacked along a new axis 0, in the order of INDICES.
  /// The default stacks get_example's results (concat_examples) and throws chainer::Error when
  /// their shapes differ (ragged data: see datasets/list_dataset.h).
  virtual std::vector<Tensor> get_batch(const std::vector<size_t>& indices) const;
  /// A description of the examples INDICES, in that order, from which build_dataset makes a
  /// dataset of them on another process (its kind's name, then what that kind's builder reads);
  /// nullopt for a dataset that only its examples describe (the default: tensors in memory, a
  /// transform of unknown code).
  virtual std::optional<std::string> describe(const std::vector<size_t>& indices) const;

 protected:
  void check_index(size_t i) const;  ///< Throws the out-of-range error, naming `i` and size(), when `i >= size()`.
};

/// How datasets are shared: by iterators, subsets and the distributed layer.
using DatasetPtr = std::shared_ptr<const Dataset>;

}  // namespace chainer::datasets
