/// @file
/// Softmax cross entropy, as chainer.functions.softmax_cross_entropy: x (N, C) logits, t (N,)
/// int32 labels. Fused and stable: `loss_i = logsumexp(x_i) - x_i[t_i]`, and backward is
/// `(softmax(x) - onehot(t)) * coefficient` in one pass. Examples labelled IGNORE_LABEL contribute
/// nothing. REDUCE "mean" averages over the non-ignored examples (over all N when NORMALIZE is
/// false); "no" returns the (N,) per-example losses (0 where ignored).
#pragma once
#include <cstdint>
#include <string>

#include "autograd/variable.h"

namespace chainer::functions {

/// The cross entropy of `softmax(x)` against labels T, reduced as REDUCE says.
Variable softmax_cross_entropy(const Variable& x, const Variable& t, bool normalize = true,
                               int64_t ignore_label = -1, const std::string& reduce = "mean");

}  // namespace chainer::functions
