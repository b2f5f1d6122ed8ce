// Tests of the 2-D convolutions (functions::convolution_2d, deconvolution_2d,
// depthwise_convolution_2d, and their links): forward values against a direct convolution
// written here in float64 over a table of geometries (stride, padding, dilation, groups,
// cover_all, odd and non-square sizes, batch 1, 1x1 windows, several chunks of images),
// finite-difference gradients of x, W and b, deconvolution as the transpose of convolution,
// the links' parameters, and the error messages. Each path of core/ops/ops.h has cases: the lowered
// products, the 1x1 products without lowering, the direct depthwise kernels (groups = C), and
// for the data gradient the flipped convolution (stride 1, 16 or more channels per group) and
// col2im.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "autograd/function_node.h"
#include "autograd/gradient_check.h"
#include "core/ops/conv_lowering.h"
#include "core/ops/ops.h"
#include "core/util/random.h"
#include "nn/functions.h"
#include "nn/initializers.h"
#include "nn/links/convolution_2d.h"
#include "nn/links/deconvolution_2d.h"
#include "nn/links/depthwise_convolution_2d.h"
#include "tests/function_inputs.h"

namespace F = chainer::functions;
namespace L = chainer::links;
using namespace chainer;
using namespace chainer::testing;
using Vars = std::vector<Variable>;

namespace {

// One convolution: x (n, c, h, w), W (c_out, c / groups, kh, kw) and the arguments.
struct ConvCase {
  std::string name;
  int64_t n, c, h, w, c_out, kh, kw;
  F::Pair stride = 1, pad = 0, dilate = 1;
  int64_t groups = 1;
  bool cover_all = false;
};

// The geometries every check runs over.
std::vector<ConvCase> conv_cases() {
  return {
      {"3x3, pad 1", 2, 3, 5, 5, 4, 3, 3, 1, 1},
      {"batch 1, one channel, 1x1 output", 1, 1, 3, 3, 2, 3, 3},
      {"non-square image and kernel, stride (2, 1), pad (0, 2)", 2, 2, 7, 4, 3, 3, 2, {2, 1}, {0, 2}},
      {"stride 3 with cover_all", 2, 2, 7, 8, 3, 2, 3, 3, 0, 1, 1, true},
      {"dilate (2, 1), pad 2", 1, 2, 6, 5, 2, 3, 2, 1, 2, {2, 1}},
      {"groups 2", 2, 4, 5, 4, 6, 3, 3, 1, 1, 1, 2},
      {"depthwise: groups 3, multiplier 2", 2, 3, 5, 5, 6, 3, 3, 2, 1, 1, 3},
      {"depthwise, stride (2, 1), pad (1, 2), dilate (1, 2), cover_all", 2, 2, 7, 6, 4, 3, 2, {2, 1}, {1, 2}, {1, 2}, 2,
       true},
      {"1x1, stride 1, no padding (no lowering)", 3, 4, 3, 5, 2, 1, 1},
      {"16 channels, dilate 2, pad (2, 1) (the data gradient as a flipped convolution)", 2, 16, 6, 5, 3, 3, 2, 1,
       {2, 1}, 2},
      {"1x1, stride 2", 2, 3, 5, 5, 2, 1, 1, 2},
      {"kernel as large as the padded input", 2, 2, 3, 2, 2, 5, 4, 1, 1},
      {"pad larger than the kernel", 1, 2, 3, 3, 2, 2, 2, 2, 3},
  };
}

ops::Conv2dParams params_of(const ConvCase& k) {
  return {.sy = k.stride.y, .sx = k.stride.x, .ph = k.pad.y, .pw = k.pad.x, .dy = k.dilate.y, .dx = k.dilate.x,
          .groups = k.groups, .cover_all = k.cover_all};
}

int64_t out_extent(int64_t size, int64_t k, int64_t s, int64_t p, int64_t d, bool cover_all) {
  const int64_t dk = (k - 1) * d + 1;
  return cover_all ? (size + 2 * p - dk + s - 1) / s + 1 : (size + 2 * p - dk) / s + 1;
}

// The convolution by its definition, in float64: y[n, o, oy, ox] = b[o] + the sum over the
// channels c of o's group and the window (i, j) of W[o, c - first, i, j] x[n, c, iy, ix].
Tensor direct_convolution(const Tensor& x, const Tensor& W, const Tensor& b, const ConvCase& k) {
  const int64_t oh = out_extent(k.h, k.kh, k.stride.y, k.pad.y, k.dilate.y, k.cover_all);
  const int64_t ow = out_extent(k.w, k.kw, k.stride.x, k.pad.x, k.dilate.x, k.cover_all);
  const std::vector<double> xv = x.to_vector<double>(), wv = W.to_vector<double>();
  const std::vector<double> bv = b.defined() ? b.to_vector<double>() : std::vector<double>(size_t(k.c_out), 0.0);
  const int64_t cg = k.c / k.groups, og = k.c_out / k.groups;
  std::vector<double> y;
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t o = 0; o < k.c_out; ++o)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          double sum = bv[size_t(o)];
          for (int64_t cc = 0; cc < cg; ++cc)
            for (int64_t i = 0; i < k.kh; ++i)
              for (int64_t j = 0; j < k.kw; ++j) {
                const int64_t iy = oy * k.stride.y - k.pad.y + i * k.dilate.y;
                const int64_t ix = ox * k.stride.x - k.pad.x + j * k.dilate.x;
                if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
                const int64_t c = o / og * cg + cc;
                sum += wv[size_t(((o * cg + cc) * k.kh + i) * k.kw + j)] * xv[size_t(((n * k.c + c) * k.h + iy) * k.w + ix)];
              }
          y.push_back(sum);
        }
  return Tensor::from_vector(y, {k.n, k.c_out, oh, ow});
}

void require_close(const Tensor& got, const Tensor& want, double tol) {
  REQUIRE(shape_str(got.shape()) == shape_str(want.shape()));
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < g.size(); ++i)
    if (!(std::abs(g[i] - w[i]) <= tol * (1 + std::abs(w[i]))) && bad++ == 0) first = i;
  INFO(bad << " of " << g.size() << " elements differ; the first at " << first << ": got "
            << (bad ? g[first] : 0.0) << ", want " << (bad ? w[first] : 0.0));
  CHECK(bad == 0);
}

}  // namespace

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

TEST_CASE("deconvolution_2d: the transpose of convolution_2d, and its gradients", "[convolution]") {
  uint64_t seed = 200;
  for (const ConvCase& k : conv_cases()) {
    if (k.cover_all) continue;  // deconvolution has no cover_all; outsize below covers it
    INFO("case: " << k.name);
    // The convolution's W (C_out, C / groups, kh, kw) is the deconvolution's (its input channels
    // first): deconvolving the convolution's output gives the convolution's data gradient.
    const Tensor W = uniform({k.c_out, k.c / k.groups, k.kh, k.kw}, seed++);
    const Tensor y = direct_convolution(uniform({k.n, k.c, k.h, k.w}, seed++), W, Tensor(), k);
    const Tensor gy = uniform(y.shape(), seed++), b = uniform({k.c}, seed++);
    const ops::Conv2dParams p = params_of(k);
    const Variable z = F::deconvolution_2d(Variable(gy), Variable(W), Variable(b), k.stride, k.pad,
                                           F::Pair(k.h, k.w), k.dilate, k.groups);
    require_close(z.data(), ops::add(ops::convolution_2d_grad_data(gy, W, k.h, k.w, p), b.reshape({1, k.c, 1, 1})),
                  1e-12);
    check([&](const Vars& v) {
            return F::deconvolution_2d(v[0], v[1], v[2], k.stride, k.pad, F::Pair(k.h, k.w), k.dilate, k.groups);
          },
          {gy, W, b});
  }
}

TEST_CASE("deconvolution_2d: output size as get_deconv_outsize, outsize that needs cover_all", "[convolution]") {
  // (5 - 1) * 2 + 3 - 2 * 1 = 9, and (4 - 1) * 3 + (2 - 1) * 2 + 1 = 12.
  const Tensor x = uniform({1, 2, 5, 4}, 31), W = uniform({2, 3, 3, 2}, 32);
  CHECK(F::deconvolution_2d(Variable(x), Variable(W), Variable(), {2, 3}, {1, 0}, std::nullopt, {1, 2}).shape() ==
        Shape{1, 3, 9, 12});
  CHECK(ops::deconv_outsize(5, 3, 2, 1) == 9);
  CHECK(ops::deconv_outsize(5, 3, 2, 1, true) == 8);
  CHECK(ops::conv_outsize(9, 3, 2, 1) == 5);
  CHECK(ops::conv_outsize(10, 3, 2, 1) == 5);
  CHECK(ops::conv_outsize(10, 3, 2, 1, true) == 6);
  // An outsize of 10 rows maps back to 5 rows without cover_all, of 7 columns to 4 only with
  // cover_all: one axis needs cover_all, the other does not; its gradients still check.
  CHECK(ops::conv_outsize(10, 3, 2, 1) == 5);
  CHECK(ops::conv_outsize(7, 2, 2, 0) == 3);
  CHECK(ops::conv_outsize(7, 2, 2, 0, true) == 4);
  check([](const Vars& v) { return F::deconvolution_2d(v[0], v[1], v[2], 2, {1, 0}, F::Pair(10, 7)); },
        {uniform({2, 2, 5, 4}, 33), uniform({2, 3, 3, 2}, 34), uniform({3}, 35)});
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

TEST_CASE("Convolution2D: Chainer's arguments, lazy in_channels, initializers, nobias and parameter names",
          "[convolution][links]") {
  random::seed(0);
  L::Convolution2D conv(3, 8, 3, 1, 1);
  CHECK(conv.W().shape() == Shape{8, 3, 3, 3});
  CHECK(conv.b()->shape() == Shape{8});
  CHECK(values(*conv.b()) == std::vector<double>(8, 0.0));
  std::vector<std::string> names;
  for (auto& [name, p] : conv.namedparams()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"/W", "/b"});
  const Variable x(uniform({2, 3, 6, 5}, 1, -1, 1, DType::Float32));
  const Variable y = conv(x);
  CHECK(y.shape() == Shape{2, 8, 6, 5});
  require_close(y.data(), F::convolution_2d(x, conv.W(), *conv.b(), 1, 1).data(), 0);

  // Convolution2D(out_channels, ksize): in_channels from the first input; groups and dilate.
  L::Convolution2D lazy(6, {3, 2});
  CHECK_FALSE(lazy.W().data().defined());
  CHECK(lazy.in_channels() == 0);
  L::Convolution2D grouped(std::nullopt, 6, 3, 2, 1, true, {}, {}, 2, 3);
  CHECK(lazy(x).shape() == Shape{2, 6, 4, 4});
  CHECK(lazy.W().shape() == Shape{6, 3, 3, 2});
  CHECK(lazy.in_channels() == 3);
  CHECK(grouped(x).shape() == Shape{2, 6, 2, 2});
  CHECK(grouped.W().shape() == Shape{6, 1, 3, 3});
  CHECK(grouped.b() == nullptr);
  CHECK(grouped.namedparams().size() == 1);

  // LeCunNormal: standard deviation sqrt(1 / fan_in), fan_in = 16 * 3 * 3.
  L::Convolution2D wide(16, 64, 3);
  const std::vector<double> w = wide.W().data().to_vector<double>();
  double sq = 0;
  for (double v : w) sq += v * v;
  CHECK(std::sqrt(sq / double(w.size())) == Approx(std::sqrt(1.0 / 144)).epsilon(0.05));

  // initialW and initial_bias: a function, a scalar, an array.
  L::Convolution2D given(2, 4, 1, 1, 0, false, [](const Shape& s) { return initializers::constant(s, 0.5); }, 0.25);
  CHECK(values(given.W()) == std::vector<double>(8, 0.5));
  CHECK(values(*given.b()) == std::vector<double>(4, 0.25));
  const Tensor array = Tensor::arange(8).reshape({4, 2, 1, 1});
  L::Convolution2D from_array(2, 4, 1, 1, 0, true, array);
  CHECK(values(from_array.W()) == values(array));
  REQUIRE_THROWS_WITH(L::Convolution2D(2, 4, 3, 1, 0, true, array),
                      "Convolution2D: initialW: the initializer gave shape (4, 2, 1, 1) (expected (4, 2, 3, 3))");
  REQUIRE_THROWS_WITH(L::Convolution2D(3, 4, 3, 1, 0, false, {}, {}, 1, 2),
                      "Convolution2D: groups 2 does not divide in_channels 3");
  REQUIRE_THROWS_WITH(L::Convolution2D(3, 0, 3), "Convolution2D: out_channels must be positive, got 0");

  // Gradients reach W and b.
  F::sum(conv(x)).backward();
  CHECK(conv.W().grad().shape() == Shape{8, 3, 3, 3});
  CHECK(conv.b()->grad().shape() == Shape{8});
}

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

TEST_CASE("Convolution2D and Deconvolution2D: a lazily sized link takes in_channels from a loaded W, and refuses a "
          "wrong one", "[convolution][links]") {
  const std::string path = (std::filesystem::temp_directory_path() / "chainer_test_convolution.npz").string();
  L::Convolution2D conv(3, 8, {3, 2}, 1, 0, false, {}, {}, 1, 1);
  save_npz(path, conv);
  L::Convolution2D lazy(8, {3, 2});
  load_npz(path, lazy);
  CHECK(lazy.in_channels() == 3);
  CHECK(values(lazy.W()) == values(conv.W()));
  L::Convolution2D wrong(8, 3);
  REQUIRE_THROWS_WITH(load_npz(path, wrong), Catch::Contains("Convolution2D: the loaded W") &&
                                                 Catch::Contains("(8, 3, 3, 2)") && Catch::Contains("(8, any, 3, 3)"));
  L::Deconvolution2D deconv(3, 8, 2);
  save_npz(path, deconv);
  L::Deconvolution2D lazy_deconv(8, 2);
  load_npz(path, lazy_deconv);
  CHECK(lazy_deconv.in_channels() == 3);
  std::filesystem::remove(path);
}
