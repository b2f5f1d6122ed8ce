// Tests of convolution_2d and depthwise_convolution_2d (nn/functions/convolution_2d.h) over the
// geometries of conv_references.h: values against a direct convolution, finite-difference
// gradients, float32 against float64, each path of core/ops' products, the refusals.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/ops/conv_lowering.h"
#include "core/ops/ops.h"
#include "nn/functions.h"
#include "tests/function_inputs.h"
#include "tests/nn/functions/conv_references.h"

namespace F = chainer::functions;
using namespace chainer;
using namespace chainer::testing;
using Vars = std::vector<Variable>;

TEST_CASE("convolution_2d: forward equals the direct convolution over every geometry, float64 and float32",
          "[convolution]") {
  uint64_t seed = 1;
  for (const ConvCase& k : conv_cases()) {
    INFO("case: " << k.name);
    const Tensor x = uniform({k.n, k.c, k.h, k.w}, seed++), W = uniform({k.c_out, k.c / k.groups, k.kh, k.kw}, seed++);
    const Tensor b = uniform({k.c_out}, seed++);
    const Tensor want = direct_convolution(x, W, b, k);
    const Variable y = F::convolution_2d(Variable(x), Variable(W), Variable(b), k.stride, k.pad, k.cover_all, k.dilate,
                                         k.groups);
    require_close(y.data(), want, 1e-12);
    const Variable y32 = F::convolution_2d(Variable(x.astype(DType::Float32)), Variable(W.astype(DType::Float32)),
                                           Variable(), k.stride, k.pad, k.cover_all, k.dilate, k.groups);
    require_close(y32.data(), direct_convolution(x, W, Tensor(), k), 1e-5);
  }
}

TEST_CASE("convolution_2d: gradients of x, W and b match finite differences over every geometry", "[convolution]") {
  uint64_t seed = 100;
  for (const ConvCase& k : conv_cases()) {
    INFO("case: " << k.name);
    const Tensor x = uniform({k.n, k.c, k.h, k.w}, seed++), W = uniform({k.c_out, k.c / k.groups, k.kh, k.kw}, seed++);
    const Tensor b = uniform({k.c_out}, seed++);
    check([&](const Vars& v) { return F::convolution_2d(v[0], v[1], v[2], k.stride, k.pad, k.cover_all, k.dilate, k.groups); },
          {x, W, b});
    // Without a bias, and with x as data: only W's gradient is computed.
    check([&](const Vars& v) { return F::convolution_2d(v[0], v[1], Variable(), k.stride, k.pad, k.cover_all, k.dilate, k.groups); },
          {x, W}, {.no_grads = {true, false}});
  }
}

TEST_CASE("convolution_2d: float32 forward and gradients equal float64's over every geometry and wide images",
          "[convolution]") {
  // float32 packs the windows straight from the images into the GEMM (core/cpu/conv_implicit.cpp),
  // float64 lowers them: rows longer than a panel's 32 pixels, windows deeper than a slice of the
  // GEMM (32 channels x 3 x 3 = 288), strides and dilations through both.
  std::vector<ConvCase> cases = conv_cases();
  cases.push_back({"wide rows, 288 window rows", 2, 32, 9, 37, 20, 3, 3, 1, 1});
  cases.push_back({"wide rows, stride 2", 2, 5, 11, 40, 7, 3, 3, 2, 1});
  cases.push_back({"wide rows, dilate 2, pad (2, 0), groups 2", 1, 6, 12, 35, 4, 3, 5, 1, {2, 0}, 2, 2});
  // Rows wide beside the window: the columns of the written-out padding (padded_path_pays).
  cases.push_back({"wide rows, dilate (1, 2), pad 2, groups 3", 2, 6, 6, 60, 9, 3, 3, 1, 2, {1, 2}, 3});
  // 128 filters and more per group: the filter gradient in blocks of filters (no partial sums).
  cases.push_back({"160 filters, groups 2", 3, 8, 6, 7, 320, 3, 3, 1, 1, 1, 2});
  uint64_t seed = 300;
  for (const ConvCase& k : cases) {
    INFO("case: " << k.name);
    const Tensor x = uniform({k.n, k.c, k.h, k.w}, seed++), W = uniform({k.c_out, k.c / k.groups, k.kh, k.kw}, seed++);
    const Tensor b = uniform({k.c_out}, seed++);
    const ops::Conv2dParams p = params_of(k);
    const Tensor y = ops::convolution_2d(x, W, b, p), gy = uniform(y.shape(), seed++);
    const auto f32 = [](const Tensor& t) { return t.astype(DType::Float32); };
    require_close(ops::convolution_2d(f32(x), f32(W), f32(b), p), y, 1e-5);
    require_close(ops::convolution_2d_grad_filter(f32(x), f32(gy), k.kh, k.kw, p),
                  ops::convolution_2d_grad_filter(x, gy, k.kh, k.kw, p), 1e-4);
    require_close(ops::convolution_2d_grad_data(f32(gy), f32(W), k.h, k.w, p),
                  ops::convolution_2d_grad_data(gy, W, k.h, k.w, p), 1e-5);
  }
}

TEST_CASE("convolution_2d: several chunks of images give what one chunk gives", "[convolution]") {
  // 48 images whose windows take 48 * 72 * 4096 * 4 bytes: several chunks of kConvLoweredBytes,
  // of unequal sizes, and several partial sums of the filter gradient.
  const ConvCase k{"many images", 48, 8, 64, 64, 4, 3, 3, 1, 1};
  REQUIRE(48 * 72 * 4096 * 4 > 2 * kConvLoweredBytes);
  const Tensor x = uniform({k.n, k.c, k.h, k.w}, 7, -1, 1, DType::Float32);
  const Tensor W = uniform({k.c_out, k.c, k.kh, k.kw}, 8, -1, 1, DType::Float32);
  const ops::Conv2dParams p = params_of(k);
  const Tensor y = ops::convolution_2d(x, W, Tensor(), p);
  const Tensor gy = uniform(y.shape(), 9, -1, 1, DType::Float32);
  const Tensor gW = ops::convolution_2d_grad_filter(x, gy, 3, 3, p);
  const Tensor gx = ops::convolution_2d_grad_data(gy, W, k.h, k.w, {.sy = 1, .sx = 1, .ph = 1, .pw = 1});
  Tensor gW_sum = Tensor::zeros(W.shape());
  for (int64_t i = 0; i < k.n; ++i) {
    const Tensor xi = x.narrow(0, i, 1), gyi = gy.narrow(0, i, 1);
    require_close(ops::convolution_2d(xi, W, Tensor(), p), y.narrow(0, i, 1).contiguous(), 1e-6);
    require_close(ops::convolution_2d_grad_data(gyi, W, k.h, k.w, p), gx.narrow(0, i, 1).contiguous(), 1e-6);
    ops::axpy_(gW_sum, 1.0, ops::convolution_2d_grad_filter(xi, gyi, 3, 3, p));
  }
  require_close(gW, gW_sum, 1e-4);
}

TEST_CASE("convolution_2d: the data gradient of a strided convolution, its general path", "[convolution]") {
  // Stride 2, and padding beyond the dilated window: both take col2im instead of the flipped
  // convolution. The direct convolution's adjoint: <conv(x), gy> = <x, grad_data(gy)>.
  for (const ConvCase& k : {ConvCase{"stride 2", 2, 3, 7, 6, 4, 3, 3, 2, 1}, ConvCase{"pad 3 > k - 1", 1, 2, 4, 3, 3, 2, 2, 1, 3}}) {
    INFO("case: " << k.name);
    const Tensor x = uniform({k.n, k.c, k.h, k.w}, 11), W = uniform({k.c_out, k.c, k.kh, k.kw}, 12);
    const Tensor y = direct_convolution(x, W, Tensor(), k), gy = uniform(y.shape(), 13);
    const Tensor gx = ops::convolution_2d_grad_data(gy, W, k.h, k.w, params_of(k));
    const double lhs = ops::sum(ops::mul(y, gy)).item<double>(), rhs = ops::sum(ops::mul(x, gx)).item<double>();
    CHECK(std::abs(lhs - rhs) < 1e-10 * (1 + std::abs(lhs)));
  }
}

TEST_CASE("depthwise_convolution_2d: convolution_2d with groups = C and W rearranged, and its gradients",
          "[convolution]") {
  const Tensor x = uniform({2, 3, 5, 4}, 21), W = uniform({2, 3, 3, 2}, 22), b = uniform({6}, 23);
  // Output channel c * multiplier + m uses W[m, c].
  Tensor rearranged = Tensor::empty({6, 1, 3, 2}, DType::Float64);
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t m = 0; m < 2; ++m) rearranged[c * 2 + m].copy_(W[m].narrow(0, c, 1));
  const ConvCase k{"depthwise", 2, 3, 5, 4, 6, 3, 2, {2, 1}, 1, 1, 3};
  require_close(F::depthwise_convolution_2d(Variable(x), Variable(W), Variable(b), {2, 1}, 1).data(),
                direct_convolution(x, rearranged, b, k), 1e-12);
  check([](const Vars& v) { return F::depthwise_convolution_2d(v[0], v[1], v[2], {2, 1}, 1); }, {x, W, b});
  REQUIRE_THROWS_WITH(F::depthwise_convolution_2d(Variable(uniform({1, 4, 5, 5}, 1)), Variable(W)),
                      "depthwise_convolution_2d: x has 4 channels but W expects 3 (W has shape (2, 3, 3, 2))");
}

TEST_CASE("convolution_2d and deconvolution_2d: refusals name the function and the values", "[convolution][errors]") {
  const Variable x(uniform({2, 3, 5, 5}, 1)), W(uniform({8, 4, 3, 3}, 2));
  REQUIRE_THROWS_WITH(F::convolution_2d(x, W),
                      "convolution_2d: x has 3 channels but W expects 4 (W has shape (8, 4, 3, 3), groups 1)");
  REQUIRE_THROWS_WITH(F::convolution_2d(x, Variable(uniform({8, 1, 3, 3}, 3)), Variable(), 1, 0, false, 1, 2),
                      "convolution_2d: groups 2 does not divide the 3 channels of x");
  REQUIRE_THROWS_WITH(F::convolution_2d(Variable(uniform({2, 4, 5, 5}, 4)), Variable(uniform({6, 1, 3, 3}, 5)),
                                        Variable(), 1, 0, false, 1, 4),
                      "convolution_2d: groups 4 does not divide the 6 output channels of W (shape (6, 1, 3, 3))");
  REQUIRE_THROWS_WITH(F::convolution_2d(x, Variable(uniform({2, 3, 6, 3}, 6))),
                      "convolution_2d: the kernel (6, 3) with dilate (1, 1) is larger than the padded input (5, 5) "
                      "(x has shape (2, 3, 5, 5), pad (0, 0)): the output would be (0, 3)");
  REQUIRE_THROWS_WITH(F::convolution_2d(x, Variable(uniform({2, 3, 3, 3}, 7)), Variable(), 1, 0, false, {3, 1}),
                      "convolution_2d: the kernel (3, 3) with dilate (3, 1) is larger than the padded input (5, 5) "
                      "(x has shape (2, 3, 5, 5), pad (0, 0)): the output would be (-1, 3)");
  REQUIRE_THROWS_WITH(F::convolution_2d(Variable(uniform({3, 5, 5}, 8)), W),
                      "convolution_2d: x must be 4-D (batch, channels, height, width), got shape (3, 5, 5)");
  REQUIRE_THROWS_WITH(F::convolution_2d(x, Variable(uniform({2, 3, 3}, 9))),
                      "convolution_2d: W must be 4-D (out_channels, in_channels / groups, kh, kw), got shape (2, 3, 3)");
  REQUIRE_THROWS_WITH(F::convolution_2d(x, Variable(uniform({2, 3, 3, 3}, 10)), Variable(uniform({3}, 11))),
                      "convolution_2d: b has shape (3,) but W has 2 output channels (expected (2,))");
  REQUIRE_THROWS_WITH(F::convolution_2d(x, Variable(uniform({2, 3, 3, 3}, 10)), Variable(), {0, 1}),
                      "convolution_2d: stride (0, 1) must be positive");
  REQUIRE_THROWS_WITH(F::convolution_2d(x, Variable(uniform({2, 3, 3, 3}, 10).astype(DType::Float32))),
                      "convolution_2d: dtypes differ (float64 and float32)");

  const Variable W_deconv(uniform({3, 2, 3, 3}, 12));  // (in_channels, out_channels, kh, kw)
  REQUIRE_THROWS_WITH(F::deconvolution_2d(Variable(uniform({2, 4, 5, 5}, 13)), W_deconv),
                      "deconvolution_2d: x has 4 channels but W expects 3 (W has shape (3, 2, 3, 3))");
  REQUIRE_THROWS_WITH(F::deconvolution_2d(x, W_deconv, Variable(), 1, 0, std::nullopt, 1, 2),
                      "deconvolution_2d: groups 2 does not divide the 3 channels of x");
  REQUIRE_THROWS_WITH(F::deconvolution_2d(x, W_deconv, Variable(), 1, 4),
                      "deconvolution_2d: the output size (-1, -1) is not positive (x has shape (2, 3, 5, 5), kernel "
                      "(3, 3), stride (1, 1), pad (4, 4), dilate (1, 1))");
  REQUIRE_THROWS_WITH(F::deconvolution_2d(x, W_deconv, Variable(), 2, 0, F::Pair(14, 11)),
                      "deconvolution_2d: outsize (14, 11) is inconsistent with x of extents (5, 5): a convolution of "
                      "(14, 11) with kernel (3, 3), stride (2, 2), pad (0, 0) and dilate (1, 1) gives (6, 5) to (7, 5)");
  REQUIRE_THROWS_WITH(F::deconvolution_2d(Variable(uniform({5, 5}, 14)), W_deconv),
                      "deconvolution_2d: x must be 4-D (batch, channels, height, width), got shape (5, 5)");
  REQUIRE_THROWS_WITH(F::deconvolution_2d(x, W_deconv, Variable(uniform({3}, 15))),
                      "deconvolution_2d: b has shape (3,) but W gives 2 output channels (expected (2,))");

  // The gradients' own checks, for callers of core/ops/ops.h.
  REQUIRE_THROWS_WITH(ops::convolution_2d_grad_data(uniform({2, 8, 4, 4}, 16), W.data(), 5, 5, {}),
                      "convolution_2d_grad_data: gy has extents (4, 4) but a convolution of (5, 5) with kernel (3, 3), "
                      "stride (1, 1), pad (0, 0) and dilate (1, 1) makes (3, 3)");
  REQUIRE_THROWS_WITH(ops::convolution_2d_grad_filter(x.data(), uniform({3, 8, 3, 3}, 17), 3, 3, {}),
                      "convolution_2d_grad_filter: gy has shape (3, 8, 3, 3) but x has shape (2, 3, 5, 5) (batch sizes "
                      "differ)");
}
