/// @file
/// concat_examples: turns a list of examples into one batch tensor per field, as Chainer's
/// chainer.dataset.concat_examples (the default converter of updaters and evaluators).
#pragma once
#include <vector>

#include "datasets/dataset.h"

namespace chainer::dataset {

using datasets::Example;

/// Stacks field k of every example along a new axis 0: shapes `(S...)` become `(len(batch), S...)`.
/// Throws chainer::Error for an empty batch or examples whose field counts, shapes or dtypes differ.
std::vector<Tensor> concat_examples(const std::vector<Example>& batch);

}  // namespace chainer::dataset
