/// @file
/// Inception, as chainer.links.Inception: GoogLeNet's module. Four paths over the same input, a
/// 1x1 convolution (conv1), a 1x1 projection then a 3x3 convolution (proj3, conv3), a 1x1
/// projection then a 5x5 convolution (proj5, conv5), and 3x3 max pooling (stride 1) then a 1x1
/// projection (projp), padded so that each keeps the input's height and width; their outputs are
/// concatenated along the channels and passed through ReLU. See "Going Deeper with Convolutions"
/// (Szegedy et al., 2014).
#pragma once
#include <memory>
#include <optional>

#include "nn/link.h"
#include "nn/links/convolution_2d.h"

namespace chainer::links {

/// GoogLeNet's inception module (Chainer's `L.Inception`).
class Inception : public Chain {
 public:
  /// Chainer's signature; `in_channels = std::nullopt` takes it from the first input (Chainer's
  /// None). The output has `out1 + out3 + out5 + proj_pool` channels.
  Inception(std::optional<int64_t> in_channels, int64_t out1, int64_t proj3, int64_t out3, int64_t proj5,
            int64_t out5, int64_t proj_pool);

  /// `relu(concat(conv1(x), conv3(relu(proj3(x))), conv5(relu(proj5(x))),
  /// projp(max_pooling_2d(x, 3, 1, 1))))` for X (N, in_channels, H, W): (N, out channels, H, W).
  Variable forward(const Variable& x) override;

  std::shared_ptr<Convolution2D> conv1;  ///< the 1x1 path
  std::shared_ptr<Convolution2D> proj3;  ///< the 3x3 path's 1x1 projection
  std::shared_ptr<Convolution2D> conv3;  ///< the 3x3 convolution (pad 1)
  std::shared_ptr<Convolution2D> proj5;  ///< the 5x5 path's 1x1 projection
  std::shared_ptr<Convolution2D> conv5;  ///< the 5x5 convolution (pad 2)
  std::shared_ptr<Convolution2D> projp;  ///< the 1x1 projection after the max pooling
};

}  // namespace chainer::links
