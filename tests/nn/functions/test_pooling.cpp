// Tests of max_pooling_2d, average_pooling_2d and unpooling_2d (nn/functions/pooling.h): values
// against naive references from Chainer's definitions over a table of geometries, gradients
// against finite differences, global average pooling through F::mean, the errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/ops/ops.h"
#include "nn/functions.h"
#include "tests/function_inputs.h"
#include "tests/nn/functions/reference_checks.h"

namespace F = chainer::functions;
using namespace chainer;
using namespace chainer::testing;
using Vars = std::vector<Variable>;
using Catch::Contains;

namespace {
const double kInf = std::numeric_limits<double>::infinity();

// One pooling geometry: input (N, C, H, W), window, stride, pad, cover_all.
struct Geometry {
  std::string name;
  Shape x;
  F::Pair ksize, stride, pad;
  bool cover_all;
};
std::vector<Geometry> geometries() {
  return {
      {"28x28, k2 (the reference network)", {2, 3, 28, 28}, 2, 2, 0, true},
      {"odd 7x5, k2, cover_all (a partial last window)", {2, 2, 7, 5}, 2, 2, 0, true},
      {"odd 7x5, k2, no cover_all (the last row dropped)", {2, 2, 7, 5}, 2, 2, 0, false},
      {"k3 stride 2 pad 1 (overlapping windows)", {1, 2, 6, 7}, 3, 2, 1, true},
      {"k3 stride 1 pad 1, no cover_all", {2, 1, 5, 5}, 3, 1, 1, false},
      {"non-square k (3, 2), stride (2, 1), pad (1, 0)", {1, 3, 7, 6}, {3, 2}, {2, 1}, {1, 0}, true},
      {"stride above ksize: k2 stride 3 pad 1 (windows of padding alone)", {1, 1, 5, 5}, 2, 3, 1, true},
      {"batch 1, one channel, 1x1 window", {1, 1, 3, 4}, 1, 1, 0, true},
      {"window larger than the image: k4 on 3x3 pad 1", {2, 1, 3, 3}, 4, 1, 1, false},
  };
}

// get_conv_outsize, with Python's floor division.
int64_t out_size(int64_t size, int64_t k, int64_t s, int64_t p, bool cover_all) {
  const int64_t num = size + 2 * p - k + (cover_all ? s - 1 : 0);
  return int64_t(std::floor(double(num) / double(s))) + 1;
}

// Naive max (IS_MAX) or average pooling of X, padding -inf or 0 and windows past the padded
// image (cover_all) counted as padding; the average divides by kh * kw.
Tensor naive_pool(const Tensor& x, const Geometry& g, bool is_max) {
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const bool cover = is_max && g.cover_all;
  const int64_t oh = out_size(H, g.ksize.y, g.stride.y, g.pad.y, cover);
  const int64_t ow = out_size(W, g.ksize.x, g.stride.x, g.pad.x, cover);
  const std::vector<double> v = values(x);
  std::vector<double> y;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          double acc = is_max ? -kInf : 0.0;
          for (int64_t ky = 0; ky < g.ksize.y; ++ky)
            for (int64_t kx = 0; kx < g.ksize.x; ++kx) {
              const int64_t iy = oy * g.stride.y - g.pad.y + ky, ix = ox * g.stride.x - g.pad.x + kx;
              const bool inside = iy >= 0 && iy < H && ix >= 0 && ix < W;
              const double e = inside ? v[size_t(((n * C + c) * H + iy) * W + ix)] : (is_max ? -kInf : 0.0);
              acc = is_max ? std::max(acc, e) : acc + e;
            }
          y.push_back(is_max ? acc : acc / double(g.ksize.y * g.ksize.x));
        }
  return Tensor::from_vector(y, {N, C, oh, ow});
}

// Naive unpooling (Chainer's col2im of x tiled over each window) into OUT_H x OUT_W.
Tensor naive_unpool(const Tensor& x, const Geometry& g, int64_t out_h, int64_t out_w) {
  const int64_t N = x.size(0), C = x.size(1), h = x.size(2), w = x.size(3);
  const std::vector<double> v = values(x);
  std::vector<double> y(size_t(N * C * out_h * out_w), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < h; ++i)
        for (int64_t j = 0; j < w; ++j)
          for (int64_t ky = 0; ky < g.ksize.y; ++ky)
            for (int64_t kx = 0; kx < g.ksize.x; ++kx) {
              const int64_t oy = i * g.stride.y - g.pad.y + ky, ox = j * g.stride.x - g.pad.x + kx;
              if (oy >= 0 && oy < out_h && ox >= 0 && ox < out_w)
                y[size_t(((n * C + c) * out_h + oy) * out_w + ox)] += v[size_t(((n * C + c) * h + i) * w + j)];
            }
  return Tensor::from_vector(y, {N, C, out_h, out_w});
}

std::string describe(const Geometry& g) {
  return str(g.name, ": x ", shape_str(g.x), ", ksize (", g.ksize.y, ", ", g.ksize.x, "), stride (", g.stride.y, ", ",
             g.stride.x, "), pad (", g.pad.y, ", ", g.pad.x, "), cover_all ", g.cover_all);
}
}  // namespace

// ---- max_pooling_2d ----

TEST_CASE("max_pooling_2d: a 4x4 plane pooled by 2x2 windows, hand-computed, and its gradient", "[pooling]") {
  const Tensor x = Tensor::from_vector<double>({1, 5, 2, 0,   //
                                                3, 4, 8, 1,   //
                                                -1, -2, 0, 6, //
                                                -3, -4, 7, 2},
                                               {1, 1, 4, 4});
  Variable xv(x, true);
  Variable y = F::max_pooling_2d(xv, 2);
  CHECK(y.shape() == Shape{1, 1, 2, 2});
  CHECK_THAT(values(y), near({5, 8, -1, 7}));
  y.set_grad(Tensor::from_vector<double>({10, 20, 30, 40}, {1, 1, 2, 2}));
  y.backward();
  CHECK_THAT(values(xv.grad()), near({0, 10, 0, 0, 0, 0, 20, 0, 30, 0, 0, 0, 0, 0, 40, 0}));
}

TEST_CASE("max_pooling_2d: output sizes are Chainer's get_conv_outsize, cover_all by default", "[pooling]") {
  const Variable x(Tensor::zeros({1, 1, 5, 5}));
  CHECK(F::max_pooling_2d(x, 2).shape() == Shape{1, 1, 3, 3});  // (5 - 2 + 1) / 2 + 1
  CHECK(F::max_pooling_2d(x, 2, std::nullopt, 0, false).shape() == Shape{1, 1, 2, 2});
  CHECK(F::max_pooling_2d(x, 3, 1, 1).shape() == Shape{1, 1, 5, 5});
  CHECK(F::max_pooling_2d(x, {3, 2}, F::Pair{2, 1}, {1, 0}).shape() == Shape{1, 1, 3, 4});
  CHECK(F::max_pooling_2d(Variable(Tensor::zeros({100, 32, 28, 28})), 2).shape() == Shape{100, 32, 14, 14});
}

TEST_CASE("max_pooling_2d: values equal a naive reference over every geometry, float32 and float64", "[pooling]") {
  for (const Geometry& g : geometries()) {
    INFO(describe(g));
    const Tensor x = uniform(g.x, 11);
    CHECK_THAT(values(F::max_pooling_2d(Variable(x), g.ksize, g.stride, g.pad, g.cover_all)),
               near(values(naive_pool(x, g, true))));
    const Tensor x32 = x.astype(DType::Float32);
    const Variable y32 = F::max_pooling_2d(Variable(x32), g.ksize, g.stride, g.pad, g.cover_all);
    CHECK(y32.data().dtype() == DType::Float32);
    CHECK_THAT(values(y32), near(values(naive_pool(x32.astype(DType::Float64), g, true))));
  }
}

TEST_CASE("max_pooling_2d: the padding never wins; a window of padding alone gives -inf and no gradient",
          "[pooling]") {
  // All values negative: a zero padding would win every border window.
  const Tensor x = ops::add_scalar(uniform({1, 1, 3, 3}, 3), -5.0);
  const Variable y = F::max_pooling_2d(Variable(x), 3, 1, 1);
  for (double v : values(y)) CHECK(v < -3.0);
  // k2 stride 3 pad 1 over 5: windows start at -1, 2 and 5; the last holds rows 5 and 6 only.
  Variable xv(uniform({1, 1, 5, 5}, 4), true);
  Variable z = F::max_pooling_2d(xv, 2, 3, 1);
  REQUIRE(z.shape() == Shape{1, 1, 3, 3});
  const std::vector<double> zv = values(z);
  for (int64_t i = 0; i < 3; ++i) CHECK(zv[size_t(2 * 3 + i)] == -kInf);
  z.set_grad(Tensor::ones(z.shape(), DType::Float64));
  z.backward();
  double total = 0;
  for (double g : values(xv.grad())) total += g;
  CHECK(total == 4.0);  // nine windows, five of padding alone (the last row and the last column)
}

TEST_CASE("max_pooling_2d: ties go to the window's first maximum, and a NaN wins its window", "[pooling]") {
  Variable x(Tensor::from_vector<double>({2, 2, 2, 2}, {1, 1, 2, 2}), true);
  Variable y = F::max_pooling_2d(x, 2);
  y.set_grad(Tensor::ones({1, 1, 1, 1}, DType::Float64));
  y.backward();
  CHECK_THAT(values(x.grad()), near({1, 0, 0, 0}));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Variable z = F::max_pooling_2d(Variable(Tensor::from_vector<double>({1, nan, 3, 0}, {1, 1, 2, 2})), 2);
  CHECK(std::isnan(values(z)[0]));
}

TEST_CASE("max_pooling_2d: gradients match finite differences over every geometry", "[pooling][gradient]") {
  for (const Geometry& g : geometries()) {
    INFO(describe(g));
    // A window of padding alone gives a constant -inf, whose finite differences are NaN (its
    // gradient, none, is tested above).
    const Tensor y = F::max_pooling_2d(Variable(spaced(g.x, 21)), g.ksize, g.stride, g.pad, g.cover_all).data();
    if (values(ops::amax(ops::neg(y), {}))[0] == kInf) continue;
    // Distinct values 0.1 apart: no two within a finite-difference step of each other.
    check([&](const Vars& v) { return F::max_pooling_2d(v[0], g.ksize, g.stride, g.pad, g.cover_all); },
          {spaced(g.x, 21)});
  }
}

// ---- average_pooling_2d ----

TEST_CASE("average_pooling_2d: the padding counts as zeros in a divisor of kh * kw, as Chainer's", "[pooling]") {
  const Tensor x = Tensor::from_vector<double>({1, 2, 3, 4}, {1, 1, 2, 2});
  // k2 stride 1 pad 1 over 2x2: nine windows, each divided by 4.
  CHECK_THAT(values(F::average_pooling_2d(Variable(x), 2, 1, 1)),
             near({0.25, 0.75, 0.5, 1.0, 2.5, 1.5, 0.75, 1.75, 1.0}));
  CHECK_THAT(values(F::average_pooling_2d(Variable(x), 2)), near({2.5}));
}

TEST_CASE("average_pooling_2d: values equal a naive reference over every geometry (never cover_all)", "[pooling]") {
  for (const Geometry& g : geometries()) {
    INFO(describe(g));
    // Chainer's average pooling has no cover_all: windows of padding alone cannot arise.
    const int64_t oh = out_size(g.x[2], g.ksize.y, g.stride.y, g.pad.y, false);
    const int64_t ow = out_size(g.x[3], g.ksize.x, g.stride.x, g.pad.x, false);
    if (oh < 1 || ow < 1) continue;
    const Tensor x = uniform(g.x, 12);
    CHECK_THAT(values(F::average_pooling_2d(Variable(x), g.ksize, g.stride, g.pad)),
               near(values(naive_pool(x, g, false))));
  }
}

TEST_CASE("average_pooling_2d: gradients match finite differences over every geometry", "[pooling][gradient]") {
  for (const Geometry& g : geometries()) {
    INFO(describe(g));
    check([&](const Vars& v) { return F::average_pooling_2d(v[0], g.ksize, g.stride, g.pad); }, {uniform(g.x, 22)});
  }
}

// ---- unpooling_2d ----

TEST_CASE("unpooling_2d: each value fills its window; the default size is Chainer's get_deconv_outsize",
          "[pooling]") {
  const Tensor x = Tensor::from_vector<double>({1, 2, 3, 4}, {1, 1, 2, 2});
  // k2, cover_all=False: 2 (2 - 1) + 2 = 4; each value copied into a 2x2 block.
  CHECK_THAT(values(F::unpooling_2d(Variable(x), 2, std::nullopt, 0, std::nullopt, false)),
             near({1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
  // cover_all=True (the default): 2 (2 - 1) + 2 - 2 + 1 = 3, the last row and column cut.
  CHECK_THAT(values(F::unpooling_2d(Variable(x), 2)), near({1, 1, 2, 1, 1, 2, 3, 3, 4}));
  // Overlapping windows add: k3 stride 1 over 2x2 gives 4x4, the middle holding all four values.
  const Variable y = F::unpooling_2d(Variable(x), 3, 1, 0, std::nullopt, false);
  CHECK(y.shape() == Shape{1, 1, 4, 4});
  CHECK(values(y)[5] == 10.0);
  // An explicit outsize that pools back to x's size.
  CHECK(F::unpooling_2d(Variable(x), 2, std::nullopt, 0, F::Pair{4, 4}).shape() == Shape{1, 1, 4, 4});
}

TEST_CASE("unpooling_2d: values equal a naive col2im over every geometry", "[pooling]") {
  for (const Geometry& g : geometries()) {
    INFO(describe(g));
    const Tensor x = uniform({g.x[0], g.x[1], 3, 4}, 13);
    const Variable y = F::unpooling_2d(Variable(x), g.ksize, g.stride, g.pad, std::nullopt, g.cover_all);
    CHECK_THAT(values(y), near(values(naive_unpool(x, g, y.shape()[2], y.shape()[3]))));
  }
}

TEST_CASE("unpooling_2d: gradients match finite differences over every geometry", "[pooling][gradient]") {
  for (const Geometry& g : geometries()) {
    INFO(describe(g));
    check([&](const Vars& v) {
      return F::unpooling_2d(v[0], g.ksize, g.stride, g.pad, std::nullopt, g.cover_all);
    }, {uniform({g.x[0], g.x[1], 3, 2}, 23)});
  }
  check([](const Vars& v) { return F::unpooling_2d(v[0], 2, std::nullopt, 0, F::Pair{5, 4}); },
        {uniform({2, 1, 3, 2}, 24)});
}

// ---- global average pooling ----

TEST_CASE("global average pooling: F::mean over axes (2, 3) of NCHW, values and gradients", "[pooling]") {
  const Tensor x = uniform({2, 3, 4, 5}, 61);
  const Variable y = F::mean(Variable(x), {2, 3});
  REQUIRE(y.shape() == Shape{2, 3});
  const std::vector<double> v = values(x), got = values(y);
  for (int64_t p = 0; p < 6; ++p) {
    double s = 0;
    for (int64_t i = 0; i < 20; ++i) s += v[size_t(p * 20 + i)];
    CHECK(got[size_t(p)] == Approx(s / 20));
  }
  // The average pooling with a window of the whole plane is the same thing.
  CHECK_THAT(values(F::average_pooling_2d(Variable(x), {4, 5})), near(got));
  check([](const Vars& v) { return F::mean(v[0], {2, 3}); }, {uniform({2, 3, 3, 5}, 62)});
  check([](const Vars& v) { return F::mean(v[0], {-1, -2}, true); }, {uniform({1, 2, 1, 3}, 63)});
}

// ---- errors ----

TEST_CASE("pooling: errors name the op, the value and what was expected", "[pooling][errors]") {
  const Variable x(Tensor::zeros({2, 3, 4, 4}));
  CHECK_THAT(error_of([&] { F::max_pooling_2d(Variable(Tensor::zeros({3, 4, 4})), 2); }),
             Contains("max_pooling_2d: x has shape (3, 4, 4); expected 4 dimensions (N, C, H, W)"));
  CHECK_THAT(error_of([&] { F::max_pooling_2d(x, 0); }), Contains("max_pooling_2d: ksize (0, 0) must be at least 1"));
  CHECK_THAT(error_of([&] { F::max_pooling_2d(x, 2, F::Pair{1, 0}); }),
             Contains("max_pooling_2d: stride (1, 0) must be at least 1"));
  CHECK_THAT(error_of([&] { F::average_pooling_2d(x, 2, 2, {0, -1}); }),
             Contains("average_pooling_2d: pad (0, -1) must not be negative"));
  CHECK_THAT(error_of([&] { F::average_pooling_2d(x, 5); }),
             Contains("average_pooling_2d: the output would be 0x0 for x of shape (2, 3, 4, 4) with ksize (5, 5)") &&
                 Contains("the height and width must be positive"));
  CHECK_THAT(error_of([&] { F::max_pooling_2d(Variable(Tensor::zeros({2, 3, 4, 4}, DType::Int32)), 2); }),
             Contains("max_pooling_2d: x has dtype int32; expected float32, float64, float16 or bfloat16"));
  CHECK_THAT(error_of([&] { F::max_pooling_2d(Variable(Tensor::zeros({0, 3, 4, 4})), 2); }),
             Contains("max_pooling_2d: x of shape (0, 3, 4, 4) is empty"));
  CHECK_THAT(error_of([&] { F::unpooling_2d(x, 2, std::nullopt, 0, F::Pair{5, 9}, false); }),
             Contains("unpooling_2d: outsize (5, 9) pools back to 2x4") && Contains("but x is 4x4"));
  CHECK_THAT(error_of([&] { F::unpooling_2d(x, 1, 1, 3); }),
             Contains("unpooling_2d: the output would be -2x-2 for x of shape (2, 3, 4, 4)"));
  CHECK_THAT(error_of([&] { F::local_response_normalization(Variable(Tensor::zeros({3}))); }),
             Contains("local_response_normalization: x has shape (3,); expected (N, C, ...)"));
  CHECK_THAT(error_of([&] { F::local_response_normalization(x, 0); }),
             Contains("local_response_normalization: n is 0; the channel window must hold at least 1 channel"));
  CHECK_THAT(error_of([&] { F::softplus(x, 0.0); }), Contains("softplus: beta must not be 0"));
  CHECK_THAT(error_of([&] { F::elu(Variable(Tensor::zeros({2}, DType::Int32))); }),
             Contains("elu: dtype int32 is not supported (expected a floating dtype"));
}
