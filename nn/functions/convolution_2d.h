/// @file
/// Two-dimensional convolution, as chainer.functions.convolution_2d: x (N, C, H, W) convolved
/// with filters W (C_out, C / groups, kh, kw) plus b (C_out,) per output channel, y (N, C_out,
/// out_h, out_w) with out_h = (H + 2 pad.y - (kh - 1) dilate.y - 1) / stride.y + 1 (rounded down;
/// cover_all rounds up, so that the last windows cover every pixel), as Chainer's
/// conv.get_conv_outsize. GROUPS splits the channels of x and y into that many groups, each
/// convolved with its own C_out / groups filters. Computed by lowering to matrix products
/// (core/ops/ops.h); backward gives x, W and b their gradients.
#pragma once
#include "autograd/variable.h"
#include "nn/functions/pair.h"

namespace chainer::functions {

/// The convolution of X with filters W, plus B per output channel when defined (Chainer's
/// keyword arguments dilate and groups come last, in that order).
Variable convolution_2d(const Variable& x, const Variable& W, const Variable& b = Variable(), Pair stride = 1,
                        Pair pad = 0, bool cover_all = false, Pair dilate = 1, int64_t groups = 1);

/// Depthwise convolution, as chainer.functions.depthwise_convolution_2d: W (channel_multiplier,
/// C, kh, kw) gives each input channel c its own channel_multiplier filters, whose outputs are
/// channels c * channel_multiplier + m; b has C * channel_multiplier entries. It is
/// convolution_2d with groups = C and W rearranged to (C * channel_multiplier, 1, kh, kw).
Variable depthwise_convolution_2d(const Variable& x, const Variable& W, const Variable& b = Variable(),
                                  Pair stride = 1, Pair pad = 0);

}  // namespace chainer::functions
