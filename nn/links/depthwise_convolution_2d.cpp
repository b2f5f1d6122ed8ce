#include "nn/links/depthwise_convolution_2d.h"

#include "nn/functions/convolution_2d.h"

namespace chainer::links {

DepthwiseConvolution2D::DepthwiseConvolution2D(std::optional<int64_t> in_channels, int64_t channel_multiplier,
                                               functions::Pair ksize, functions::Pair stride, functions::Pair pad,
                                               bool nobias, initializers::Initializer initialW,
                                               initializers::Initializer initial_bias)
    : channel_multiplier_(channel_multiplier), ksize_(ksize), stride_(stride), pad_(pad), nobias_(nobias),
      initialW_(std::move(initialW)), initial_bias_(std::move(initial_bias)) {
  if (channel_multiplier <= 0)
    throw Error(str("DepthwiseConvolution2D: channel_multiplier must be positive, got ", channel_multiplier));
  if (ksize.y <= 0 || ksize.x <= 0)
    throw Error(str("DepthwiseConvolution2D: ksize must be positive, got (", ksize.y, ", ", ksize.x, ")"));
  add_param("W");
  if (!nobias) add_param("b");
  if (in_channels) {
    if (*in_channels <= 0)
      throw Error(str("DepthwiseConvolution2D: in_channels must be positive, got ", *in_channels));
    initialize(*in_channels);
  }
}

void DepthwiseConvolution2D::initialize(int64_t in_channels) {
  const Shape shape{channel_multiplier_, in_channels, ksize_.y, ksize_.x};
  // Chainer's HeNormal(scale = 1 / sqrt(2)): sqrt(2 / fan_in) / sqrt(2) = LeCunNormal's sqrt(1 / fan_in).
  W().set_data(initial_value(initialW_ ? initialW_(shape, "DepthwiseConvolution2D: initialW")
                                         : initializers::lecun_normal(shape)));
  if (!nobias_) {
    const Shape b_shape{channel_multiplier_ * in_channels};
    b()->set_data(initial_value(initial_bias_ ? initial_bias_(b_shape, "DepthwiseConvolution2D: initial_bias")
                                              : Tensor::zeros(b_shape)));
  }
  in_channels_ = in_channels;
}

Variable DepthwiseConvolution2D::forward(const Variable& x) {
  if (!W().data().defined()) {
    if (x.ndim() != 4)
      throw Error(str("DepthwiseConvolution2D: the input must be 4-D (batch, channels, height, width), got shape ",
                      shape_str(x.shape())));
    initialize(x.shape()[1]);
  }
  return functions::depthwise_convolution_2d(x, W(), nobias_ ? Variable() : *b(), stride_, pad_);
}

}  // namespace chainer::links
