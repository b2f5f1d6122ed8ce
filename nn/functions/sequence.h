/// @file
/// Lists of variable-length sequences, as chainer.functions.transpose_sequence and pad_sequence:
/// the batch-major list a dataset gives (sequence i of shape (L_i, ...)) and the time-major list
/// the recurrent stacks take (step t of shape (B_t, ...)), and the padded array of both.
#pragma once
#include <optional>
#include <vector>

#include "autograd/variable.h"

namespace chainer::functions {

/// The sequences XS (XS[i] of shape (L_i, ...), sorted by length, longest first) turned
/// time-major: result[t] (B_t, ...) holds row t of every sequence longer than t, in XS's order,
/// so B_t never grows. It is its own inverse: transposing the result gives XS back. An error
/// names the first sequence longer than the one before it.
std::vector<Variable> transpose_sequence(const std::vector<Variable>& xs);

/// The sequences XS (XS[i] of shape (L_i, ...), any order) as one array (len(xs), L, ...), each
/// followed by PADDING up to L = LENGTH, or the longest length when not given (LENGTH shorter
/// than a sequence is an error).
Variable pad_sequence(const std::vector<Variable>& xs, std::optional<int64_t> length = std::nullopt,
                      double padding = 0);

}  // namespace chainer::functions
