/// @file
/// Embeddings, as chainer.functions.embed_id: the rows of a matrix W picked by integer ids.
#pragma once
#include <optional>

#include "autograd/variable.h"

namespace chainer::functions {

/// `W[x]`: for integer ids X (int32 or int64, any shape) and W (n, D), an array of shape
/// x.shape + (D,) holding row x[...] of W. An id equal to IGNORE_LABEL gives a row of zeros and
/// no gradient; every other id must lie in [0, n) (checked where X is on the CPU; on a GPU an id
/// out of range is reported at the next host read). Only W gets a gradient.
Variable embed_id(const Variable& x, const Variable& W, std::optional<int64_t> ignore_label = std::nullopt);

}  // namespace chainer::functions
