/// @file
/// Two-dimensional deconvolution (transposed convolution), as
/// chainer.functions.deconvolution_2d: the adjoint of convolution_2d. x (N, C, H, W) with
/// filters W (C, C_out / groups, kh, kw) -- Chainer's layout: the input channels first -- plus b
/// (C_out,) gives y (N, C_out, out_h, out_w) with out_h = stride.y (H - 1) + (kh - 1) dilate.y + 1
/// - 2 pad.y, as Chainer's conv.get_deconv_outsize. An OUTSIZE given instead must be one that a
/// convolution with these arguments maps back to (H, W) (the strides leave a choice).
#pragma once
#include <optional>

#include "autograd/variable.h"
#include "nn/functions/pair.h"

namespace chainer::functions {

/// The deconvolution of X with filters W, plus B per output channel when defined; OUTSIZE
/// (out_h, out_w) fixes the output extents (Chainer's keyword arguments dilate and groups come
/// last, in that order).
Variable deconvolution_2d(const Variable& x, const Variable& W, const Variable& b = Variable(), Pair stride = 1,
                          Pair pad = 0, std::optional<Pair> outsize = std::nullopt, Pair dilate = 1,
                          int64_t groups = 1);

}  // namespace chainer::functions
