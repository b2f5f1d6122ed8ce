/// @file
/// MLPConvolution2D, as chainer.links.MLPConvolution2D: Network in Network's "mlpconv" layer, a
/// convolution followed by 1x1 convolutions (a small perceptron applied at every pixel), with
/// the activation between consecutive layers and none after the last. Its children are named
/// "0", "1", ... as the links of Chainer's ChainList. See "Network In Network" (Lin et al., 2013).
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "nn/initializers.h"
#include "nn/link.h"
#include "nn/links/convolution_2d.h"

namespace chainer::links {

/// A convolution followed by 1x1 convolutions (Chainer's `L.MLPConvolution2D`).
class MLPConvolution2D : public Chain {
 public:
  /// An activation between the layers.
  using Activation = std::function<Variable(const Variable&)>;
  /// Chainer's signature: OUT_CHANNELS lists each layer's output channels (one or more); the
  /// first layer has KSIZE, STRIDE and PAD, the others are 1x1. ACTIVATION (empty: relu) is
  /// applied after every layer but the last. CONV_INIT and BIAS_INIT initialize every layer's W
  /// and b. `in_channels = std::nullopt` takes it from the first input.
  MLPConvolution2D(std::optional<int64_t> in_channels, const std::vector<int64_t>& out_channels,
                   functions::Pair ksize, functions::Pair stride = 1, functions::Pair pad = 0,
                   Activation activation = {}, initializers::Initializer conv_init = {},
                   initializers::Initializer bias_init = {});

  /// `layer_n(f(... f(layer_0(x))))` for X (N, in_channels, H, W).
  Variable forward(const Variable& x) override;
  /// The convolutions, first to last.
  const std::vector<std::shared_ptr<Convolution2D>>& layers() const { return layers_; }

 private:
  std::vector<std::shared_ptr<Convolution2D>> layers_;
  Activation activation_;
};

}  // namespace chainer::links
