/// @file
/// DepthwiseConvolution2D link, as chainer.links.DepthwiseConvolution2D:
/// functions::depthwise_convolution_2d with filters W (channel_multiplier, in_channels, kh, kw)
/// -- Chainer's layout; each input channel c has its own channel_multiplier filters, giving
/// output channels c * channel_multiplier + m -- and bias b (in_channels * channel_multiplier,).
/// W is drawn from Chainer's default HeNormal(1 / sqrt(2)), which is LeCunNormal over that
/// shape (standard deviation sqrt(1 / (in_channels kh kw))); b is zeros. With in_channels =
/// std::nullopt both are created at the first call.
#pragma once
#include <optional>

#include "nn/functions/pair.h"
#include "nn/initializers.h"
#include "nn/link.h"

namespace chainer::links {

/// A depthwise 2-D convolution layer (Chainer's `L.DepthwiseConvolution2D`).
class DepthwiseConvolution2D : public Link {
 public:
  /// Chainer's arguments; `in_channels = std::nullopt` infers it, as Chainer's None.
  DepthwiseConvolution2D(std::optional<int64_t> in_channels, int64_t channel_multiplier, functions::Pair ksize,
                         functions::Pair stride = 1, functions::Pair pad = 0, bool nobias = false,
                         initializers::Initializer initialW = {}, initializers::Initializer initial_bias = {});

  /// The depthwise convolution of X (N, in_channels, H, W); the first call of a lazily sized
  /// link creates W and b.
  Variable forward(const Variable& x) override;

  int64_t in_channels() const { return in_channels_; }  ///< the input channels; 0 until known
  int64_t channel_multiplier() const { return channel_multiplier_; }  ///< the filters per input channel
  functions::Pair ksize() const { return ksize_; }  ///< the kernel size (kh, kw)
  functions::Pair stride() const { return stride_; }  ///< the stride
  functions::Pair pad() const { return pad_; }  ///< the padding
  /// The filters, (channel_multiplier, in_channels, kh, kw); undefined until in_channels is known.
  Variable& W() { return param("W"); }
  /// The bias, (in_channels * channel_multiplier,); null without one (nobias), undefined until
  /// in_channels is known.
  Variable* b() { return nobias_ ? nullptr : &param("b"); }

 private:
  void initialize(int64_t in_channels);
  int64_t in_channels_ = 0, channel_multiplier_;
  functions::Pair ksize_, stride_, pad_;
  bool nobias_;
  initializers::Initializer initialW_, initial_bias_;
};

}  // namespace chainer::links
