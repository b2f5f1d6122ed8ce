/// @file
/// InceptionBN, as chainer.links.InceptionBN: the inception module of the BatchNormalization
/// paper's GoogLeNet. As Inception, but each convolution (without bias) is followed by
/// BatchNormalization and ReLU, the 5x5 path is two 3x3 convolutions (proj33, conv33a, conv33b),
/// the pooling is max or average (3x3, pad 1) and its projection (poolp) optional, and the last
/// layer of each path may stride. With out1 = 0 there is no 1x1 path; without proj_pool the
/// pooled input itself is concatenated. See "Batch Normalization: Accelerating Deep Network
/// Training by Reducing Internal Covariate Shift" (Ioffe and Szegedy, 2015).
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "nn/initializers.h"
#include "nn/link.h"
#include "nn/links/batch_normalization.h"
#include "nn/links/convolution_2d.h"

namespace chainer::links {

/// GoogLeNet-BN's inception module (Chainer's `L.InceptionBN`).
class InceptionBN : public Chain {
 public:
  /// Chainer's signature: POOLTYPE is "max" or "avg"; OUT1 > 0 needs STRIDE 1 and a PROJ_POOL;
  /// CONV_INIT initializes every convolution's W (empty: Convolution2D's default); DTYPE is the
  /// BatchNormalization links'. `in_channels = std::nullopt` takes it from the first input. The
  /// output has `out1 + out3 + out33 + (proj_pool or in_channels)` channels.
  InceptionBN(std::optional<int64_t> in_channels, int64_t out1, int64_t proj3, int64_t out3, int64_t proj33,
              int64_t out33, const std::string& pooltype, std::optional<int64_t> proj_pool = std::nullopt,
              int64_t stride = 1, initializers::Initializer conv_init = {}, DType dtype = DType::Float32);

  /// The concatenation of the paths' outputs for X (N, in_channels, H, W).
  Variable forward(const Variable& x) override;

  int64_t out1() const { return out1_; }                     ///< the 1x1 path's channels (0: none)
  std::optional<int64_t> proj_pool() const { return proj_pool_; }  ///< the pooling projection's channels
  int64_t stride() const { return stride_; }                 ///< the stride of each path's last layer
  const std::string& pooltype() const { return pooltype_; }  ///< "max" or "avg"

  std::shared_ptr<Convolution2D> proj3;         ///< the 3x3 path's 1x1 projection
  std::shared_ptr<Convolution2D> conv3;         ///< its 3x3 convolution (strided)
  std::shared_ptr<Convolution2D> proj33;        ///< the double 3x3 path's 1x1 projection
  std::shared_ptr<Convolution2D> conv33a;       ///< its first 3x3 convolution
  std::shared_ptr<Convolution2D> conv33b;       ///< its second 3x3 convolution (strided)
  std::shared_ptr<BatchNormalization> proj3n;   ///< after proj3
  std::shared_ptr<BatchNormalization> conv3n;   ///< after conv3
  std::shared_ptr<BatchNormalization> proj33n;  ///< after proj33
  std::shared_ptr<BatchNormalization> conv33an; ///< after conv33a
  std::shared_ptr<BatchNormalization> conv33bn; ///< after conv33b
  std::shared_ptr<Convolution2D> conv1;         ///< the 1x1 path; null when out1 is 0
  std::shared_ptr<BatchNormalization> conv1n;   ///< after conv1; null when out1 is 0
  std::shared_ptr<Convolution2D> poolp;         ///< the pooling projection; null without proj_pool
  std::shared_ptr<BatchNormalization> poolpn;   ///< after poolp; null without proj_pool

 private:
  int64_t out1_;
  std::optional<int64_t> proj_pool_;
  int64_t stride_;
  std::string pooltype_;
};

}  // namespace chainer::links
