/// @file
/// 2-D pooling over NCHW arrays, as chainer.functions.max_pooling_2d, average_pooling_2d and
/// unpooling_2d. KSIZE, STRIDE and PAD are Chainer's int or pair of ints (Pair: `2` or `{3, 2}`,
/// height then width); STRIDE unset (Chainer's None) is KSIZE, and a pair for it is written
/// `Pair{2, 1}`. Windows start at `o * stride - pad` and are clipped to the image: max pooling's
/// padding never wins (Chainer pads with -inf), average pooling's is 0 and still counted in the
/// divisor `kh * kw` (Chainer's pooling). Output extents are Chainer's get_conv_outsize; COVER_ALL
/// adds the last, partly outside window so that every element is pooled (max pooling's default).
/// The kernels keep one pass per output (core/cpu/pooling.cpp): the forward and backward of a
/// pooling layer cost no more than a copy of its input.
#pragma once
#include <optional>

#include "autograd/variable.h"
#include "nn/functions/pair.h"

namespace chainer::functions {

/// The maximum of each KSIZE window of X (N, C, H, W); the gradient goes to each window's first
/// maximum only. A window wholly in the padding (possible with cover_all) gives -inf.
Variable max_pooling_2d(const Variable& x, Pair ksize, std::optional<Pair> stride = std::nullopt, Pair pad = 0,
                        bool cover_all = true);

/// The mean of each KSIZE window of X (N, C, H, W), padding counted as zeros (the sum divided by
/// kh * kw). Chainer's average pooling has no cover_all: windows never run past the padding.
Variable average_pooling_2d(const Variable& x, Pair ksize, std::optional<Pair> stride = std::nullopt, Pair pad = 0);

/// Pooling's inverse (Chainer's unpooling_2d): each element of X (N, C, h, w) is copied into its
/// KSIZE window of the output, overlapping windows adding up, and the gradient sums each window.
/// OUTSIZE (height, width) defaults to Chainer's get_deconv_outsize of h and w; a given one must
/// pool back to (h, w) with the same window and COVER_ALL.
Variable unpooling_2d(const Variable& x, Pair ksize, std::optional<Pair> stride = std::nullopt, Pair pad = 0,
                      std::optional<Pair> outsize = std::nullopt, bool cover_all = true);

}  // namespace chainer::functions
