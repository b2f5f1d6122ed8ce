/// @file
/// concat_examples: turns a list of examples into one batch tensor per field, as Chainer's
/// chainer.dataset.concat_examples (the default converter of updaters and evaluators). With a
/// padding value, examples of different shapes (sentences of different lengths) are stacked
/// into a batch of the largest extent along every axis, the rest filled with the value.
#pragma once
#include <initializer_list>
#include <optional>
#include <vector>

#include "datasets/dataset.h"

namespace chainer::dataset {

using datasets::Example;

/// Stacks field k of every example along a new axis 0: shapes `(S...)` become `(len(batch), S...)`.
/// Throws chainer::Error for an empty batch or examples whose field counts, shapes or dtypes differ.
std::vector<Tensor> concat_examples(const std::vector<Example>& batch);

/// Chainer's `padding=` of concat_examples: none (the shapes must agree), one value for every
/// field, or one per field (nullopt: that field is not padded), as Chainer's tuple of paddings.
class Padding {
 public:
  Padding() = default;  ///< No padding: the examples' shapes must agree.
  Padding(double value) : all_(value) {}  ///< Every field padded with VALUE.
  /// Field k padded with PER_FIELD[k]; needs one entry per field.
  Padding(std::vector<std::optional<double>> per_field) : per_field_(std::move(per_field)), is_per_field_(true) {}
  /// `{0, -1}`: field 0 padded with 0, field 1 with -1 (a single `{v}` is one field's value).
  Padding(std::initializer_list<std::optional<double>> per_field) : Padding(std::vector(per_field)) {}

  /// The padding of field K of examples with N_FIELDS fields; throws chainer::Error when a
  /// per-field padding has another number of entries.
  std::optional<double> of_field(size_t k, size_t n_fields) const;

 private:
  std::optional<double> all_;
  std::vector<std::optional<double>> per_field_;
  bool is_per_field_ = false;
};

/// Chainer's concat_examples(batch, device, padding): field k of every example stacked along a
/// new axis 0 and moved to DEVICE (unset: left where the examples are). A field without padding
/// needs equal shapes (an error names the field, the example and both shapes); a padded field
/// gets, along every axis, the largest extent of the batch, the examples in the leading corner
/// and PADDING elsewhere (the fields need the same number of axes). The examples of a field must
/// share their dtype.
std::vector<Tensor> concat_examples(const std::vector<Example>& batch, std::optional<Device> device,
                                    const Padding& padding = {});

}  // namespace chainer::dataset
