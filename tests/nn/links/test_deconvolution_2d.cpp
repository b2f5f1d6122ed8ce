// Tests of links::Deconvolution2D and DepthwiseConvolution2D (nn/links/deconvolution_2d.h,
// depthwise_convolution_2d.h): Chainer's shapes of W and b, lazy in_channels, outsize, outputs.
#include <catch2/catch.hpp>

#include <optional>

#include "core/util/random.h"
#include "nn/functions.h"
#include "nn/links/deconvolution_2d.h"
#include "nn/links/depthwise_convolution_2d.h"
#include "tests/function_inputs.h"
#include "tests/nn/functions/conv_references.h"

namespace F = chainer::functions;
namespace L = chainer::links;
using namespace chainer;
using namespace chainer::testing;

TEST_CASE("Deconvolution2D and DepthwiseConvolution2D: Chainer's shapes of W and b", "[convolution][links]") {
  random::seed(1);
  const Variable x(uniform({2, 4, 5, 5}, 2, -1, 1, DType::Float32));
  L::Deconvolution2D deconv(4, 6, 3, 2, 1, false, std::nullopt, {}, {}, 1, 2);
  CHECK(deconv.W().shape() == Shape{4, 3, 3, 3});  // (in_channels, out_channels / groups, kh, kw)
  CHECK(deconv.b()->shape() == Shape{6});
  CHECK(deconv(x).shape() == Shape{2, 6, 9, 9});
  L::Deconvolution2D lazy(5, 2);
  CHECK(lazy(x).shape() == Shape{2, 5, 6, 6});
  CHECK(lazy.W().shape() == Shape{4, 5, 2, 2});
  L::Deconvolution2D sized(4, 3, 3, 2, 0, true, F::Pair(12, 11));
  CHECK(sized(x).shape() == Shape{2, 3, 12, 11});

  // DepthwiseConvolution2D(in_channels, channel_multiplier, ksize, ...): W (multiplier, in_channels, kh, kw).
  L::DepthwiseConvolution2D depthwise(4, 2, 3, 1, 1);
  CHECK(depthwise.W().shape() == Shape{2, 4, 3, 3});
  CHECK(depthwise.b()->shape() == Shape{8});
  const Variable y = depthwise(x);
  CHECK(y.shape() == Shape{2, 8, 5, 5});
  require_close(y.data(), F::depthwise_convolution_2d(x, depthwise.W(), *depthwise.b(), 1, 1).data(), 0);
  L::DepthwiseConvolution2D lazy_depthwise(std::nullopt, 3, 3);
  CHECK_FALSE(lazy_depthwise.W().data().defined());
  CHECK(lazy_depthwise(x).shape() == Shape{2, 12, 3, 3});
  CHECK(lazy_depthwise.W().shape() == Shape{3, 4, 3, 3});
  CHECK(lazy_depthwise.b()->shape() == Shape{12});
}
