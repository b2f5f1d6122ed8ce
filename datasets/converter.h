/// @file
/// Converters, as Chainer's `converter=` of StandardUpdater and Evaluator: a function from a
/// list of examples (Iterator::next()) and a device to what the loss function receives.
/// Chainer's converters return a tuple or a dict of arrays, and for ragged data (the seq2seq
/// example) lists of arrays of different lengths; ConvertedBatch carries the same: fields in
/// order, optionally named, each one tensor (the examples stacked, e.g. concat_examples with a
/// padding) or a list of tensors (one per example, any shapes).
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "datasets/dataset.h"

namespace chainer::dataset {

using datasets::Example;

/// What a converter returns: fields in order, optionally named (Chainer's dict), each a stacked
/// tensor or a list of tensors.
class ConvertedBatch {
 public:
  /// One field: one tensor, or one tensor per example.
  using Field = std::variant<Tensor, std::vector<Tensor>>;

  ConvertedBatch() = default;
  /// Every field a tensor (concat_examples's result, Chainer's tuple of arrays).
  ConvertedBatch(std::vector<Tensor> arrays);
  /// Fields of either kind, unnamed (Chainer's tuple).
  explicit ConvertedBatch(std::vector<Field> fields);
  /// Named fields, in order (Chainer's dict: `{{"xs", xs}, {"ys", ys}}`); names must be unique.
  ConvertedBatch(std::vector<std::pair<std::string, Field>> named);

  size_t size() const { return fields_.size(); }  ///< The number of fields.
  const std::vector<Field>& fields() const { return fields_; }  ///< The fields, in order.
  /// The fields' names, in order; empty when the fields are unnamed.
  const std::vector<std::string>& names() const { return names_; }
  bool is_list(size_t k) const;  ///< Whether field K is a list of tensors.

  /// Field K as a tensor; throws chainer::Error naming the field when it is a list (or absent).
  const Tensor& tensor(size_t k) const;
  /// Field K as a list of tensors; throws chainer::Error naming the field when it is one tensor.
  const std::vector<Tensor>& list(size_t k) const;
  const Tensor& tensor(const std::string& name) const;  ///< The field NAME as a tensor (see tensor(k)).
  const std::vector<Tensor>& list(const std::string& name) const;  ///< The field NAME as a list (see list(k)).
  /// Every field as one tensor, in order (what Link::forward_args takes); throws chainer::Error,
  /// naming WHO and the first list field, when a field is a list.
  std::vector<Tensor> tensors(const std::string& who) const;

 private:
  size_t index_of(const std::string& name) const;
  std::string describe(size_t k) const;  // "field 1 ('ys')"

  std::vector<Field> fields_;
  std::vector<std::string> names_;
};

/// Chainer's converter: (examples, device) -> what the loss function receives. The device is
/// the one the updater or evaluator puts batches on.
using Converter = std::function<ConvertedBatch(const std::vector<Example>& batch, Device device)>;

/// Chainer's chainer.dataset.to_device for a list of arrays: XS on DEVICE (unset: left where they
/// are). Arrays of one dtype on the host go to a GPU in one copy (concatenated, then split into
/// views), as the seq2seq example's to_device_batch does, not one copy per sentence.
std::vector<Tensor> to_device(std::optional<Device> device, const std::vector<Tensor>& xs);

}  // namespace chainer::dataset
