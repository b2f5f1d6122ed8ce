// Tests of the CNN functions beside the convolutions: max_pooling_2d, average_pooling_2d,
// unpooling_2d, local_response_normalization, leaky_relu, elu, softplus, flatten, global
// average pooling through F::mean, and batch normalization's axis argument. Forward values come
// from naive references written from Chainer's definitions (windows by their start
// `o * stride - pad`, -inf or 0 padding, get_conv_outsize), over a table of geometries with odd
// sizes, stride != ksize, padding, cover_all both ways, batch 1 and non-square windows; every
// function is checked against finite differences in float64; then the error messages.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "autograd/gradient_check.h"
#include "core/ops/ops.h"
#include "nn/functions.h"
#include "nn/links/batch_normalization.h"
#include "tests/function_inputs.h"

namespace F = chainer::functions;
namespace L = chainer::links;
using namespace chainer;
using namespace chainer::testing;
using Vars = std::vector<Variable>;
using Catch::Contains;

namespace {
const double kInf = std::numeric_limits<double>::infinity();

auto near(const std::vector<double>& want) { return Catch::Matchers::Approx(want).epsilon(1e-12).margin(1e-12); }

// The message of the chainer::Error F throws ("" when it throws none).
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

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

// ---- local_response_normalization ----

namespace {
// Chainer's CPU definition: unit_scale = k + alpha sum over [c - n/2, c + n/2] of x^2.
Tensor naive_lrn(const Tensor& x, int64_t n, double k, double alpha, double beta) {
  const int64_t N = x.size(0), C = x.size(1), S = x.numel() / (N * C);
  const std::vector<double> v = values(x);
  std::vector<double> y(v.size());
  for (int64_t b = 0; b < N; ++b)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t s = 0; s < S; ++s) {
        double sum = 0;
        for (int64_t j = c - n / 2; j <= c + n / 2; ++j)
          if (j >= 0 && j < C) sum += v[size_t((b * C + j) * S + s)] * v[size_t((b * C + j) * S + s)];
        const size_t at = size_t((b * C + c) * S + s);
        y[at] = v[at] * std::pow(k + alpha * sum, -beta);
      }
  return Tensor::from_vector(y, x.shape());
}
}  // namespace

TEST_CASE("local_response_normalization: values equal Chainer's formula, odd and even n, 2-D to 4-D", "[lrn]") {
  struct Case {
    Shape x;
    int64_t n;
    double k, alpha, beta;
  };
  for (const Case& c : std::vector<Case>{{{2, 7, 3, 2}, 5, 2, 1e-4, 0.75},
                                         {{1, 6, 5}, 4, 1, 0.5, 0.6},
                                         {{3, 4}, 3, 0.5, 2.0, 1.5},
                                         {{2, 3, 2, 3}, 1, 2, 1.0, 0.75},
                                         {{2, 2, 3}, 9, 1, 0.3, 0.5}}) {
    INFO("x " << shape_str(c.x) << ", n " << c.n);
    const Tensor x = uniform(c.x, 31, -2, 2);
    CHECK_THAT(values(F::local_response_normalization(Variable(x), c.n, c.k, c.alpha, c.beta)),
               near(values(naive_lrn(x, c.n, c.k, c.alpha, c.beta))));
    check([&](const Vars& v) { return F::local_response_normalization(v[0], c.n, c.k, c.alpha, c.beta); }, {x});
  }
  // Chainer's defaults n=5, k=2, alpha=1e-4, beta=0.75.
  const Tensor x = uniform({2, 6, 2, 2}, 32, -3, 3);
  CHECK_THAT(values(F::local_response_normalization(Variable(x))), near(values(naive_lrn(x, 5, 2, 1e-4, 0.75))));
}

// ---- leaky_relu, elu, softplus ----

TEST_CASE("leaky_relu, elu and softplus: hand-computed values with Chainer's defaults and other parameters",
          "[activation]") {
  const Tensor x = Tensor::from_vector<double>({-2, -0.5, 0, 1.5});
  CHECK_THAT(values(F::leaky_relu(Variable(x))), near({-0.4, -0.1, 0, 1.5}));
  CHECK_THAT(values(F::leaky_relu(Variable(x), 0.5)), near({-1, -0.25, 0, 1.5}));
  CHECK_THAT(values(F::elu(Variable(x))), near({std::expm1(-2.0), std::expm1(-0.5), 0, 1.5}));
  CHECK_THAT(values(F::elu(Variable(x), 2.0)), near({2 * std::expm1(-2.0), 2 * std::expm1(-0.5), 0, 1.5}));
  CHECK_THAT(values(F::softplus(Variable(x))),
             near({std::log1p(std::exp(-2.0)), std::log1p(std::exp(-0.5)), std::log(2.0), std::log1p(std::exp(1.5))}));
  CHECK_THAT(values(F::softplus(Variable(x), 2.0)),
             near({std::log1p(std::exp(-4.0)) / 2, std::log1p(std::exp(-1.0)) / 2, std::log(2.0) / 2,
                   std::log1p(std::exp(3.0)) / 2}));
  // No overflow: softplus(1000) is 1000, softplus(-1000) is 0, in float32 too.
  const Tensor big = Tensor::from_vector<float>({1000, -1000});
  CHECK_THAT(values(F::softplus(Variable(big))), near({1000, 0}));
}

TEST_CASE("leaky_relu, elu and softplus: gradients match finite differences; at 0 they are Chainer's",
          "[activation][gradient]") {
  for (const Shape& shape : {Shape{5, 7}, Shape{3, 1, 4}, Shape{1}}) {
    INFO("x " << shape_str(shape));
    const Tensor x = away_from_zero(shape, 41);
    check([](const Vars& v) { return F::leaky_relu(v[0]); }, {x});
    check([](const Vars& v) { return F::leaky_relu(v[0], -0.3); }, {x});
    check([](const Vars& v) { return F::elu(v[0], 1.7); }, {x});
    check([](const Vars& v) { return F::softplus(v[0]); }, {ops::mul_scalar(x, 3.0)});
    check([](const Vars& v) { return F::softplus(v[0], 0.5); }, {x});
  }
  // At x = 0: leaky_relu's slope is 1 (x >= 0 is the positive side), elu's is alpha (Chainer's
  // backward takes x <= 0), softplus's is sigmoid(0) = 1/2.
  const auto grad_at_zero = [](const std::function<Variable(const Variable&)>& f) {
    Variable x(Tensor::zeros({1}, DType::Float64), true);
    Variable y = f(x);
    y.set_grad(Tensor::ones({1}, DType::Float64));
    y.backward();
    return values(x.grad())[0];
  };
  CHECK(grad_at_zero([](const Variable& x) { return F::leaky_relu(x); }) == 1.0);
  CHECK(grad_at_zero([](const Variable& x) { return F::elu(x, 0.7); }) == Approx(0.7));
  CHECK(grad_at_zero([](const Variable& x) { return F::softplus(x, 3.0); }) == Approx(0.5));
}

// ---- flatten and global average pooling ----

TEST_CASE("flatten: a 1-D array of every element, as Chainer's (the batch axis too), and its gradient",
          "[array]") {
  const Tensor x = uniform({2, 3, 4}, 51);
  const Variable y = F::flatten(Variable(x));
  CHECK(y.shape() == Shape{24});
  CHECK(values(y) == values(x));
  check([](const Vars& v) { return F::flatten(v[0]); }, {uniform({2, 1, 3}, 52)});
  check([](const Vars& v) { return F::flatten(F::transpose(v[0])); }, {uniform({2, 3}, 53)});
}

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

// ---- batch normalization's axis ----

namespace {
// Batch normalization of X over AXES (sorted), gamma/beta of the other axes' extents, in float64.
Tensor naive_batch_norm(const Tensor& x, const std::vector<int64_t>& axes, const Tensor& gamma, const Tensor& beta,
                        double eps = 2e-5) {
  const int64_t nd = x.ndim();
  const std::vector<double> v = values(x), g = values(gamma), b = values(beta);
  const std::vector<int64_t> strides = contiguous_strides(x.shape());
  // The channel of each element: its coordinates on the kept axes, row-major.
  std::vector<size_t> channel(v.size(), 0);
  for (size_t k = 0; k < v.size(); ++k)
    for (int64_t d = 0; d < nd; ++d)
      if (std::find(axes.begin(), axes.end(), d) == axes.end())
        channel[k] = channel[k] * size_t(x.shape()[size_t(d)]) +
                     size_t(int64_t(k) / strides[size_t(d)] % x.shape()[size_t(d)]);
  std::vector<double> mean(g.size(), 0.0), var(g.size(), 0.0), count(g.size(), 0.0);
  for (size_t k = 0; k < v.size(); ++k) mean[channel[k]] += v[k], count[channel[k]] += 1;
  for (size_t c = 0; c < g.size(); ++c) mean[c] /= count[c];
  for (size_t k = 0; k < v.size(); ++k) var[channel[k]] += (v[k] - mean[channel[k]]) * (v[k] - mean[channel[k]]);
  std::vector<double> y(v.size());
  for (size_t k = 0; k < v.size(); ++k) {
    const size_t c = channel[k];
    y[k] = g[c] * (v[k] - mean[c]) / std::sqrt(var[c] / count[c] + eps) + b[c];
  }
  return Tensor::from_vector(y, x.shape());
}

struct AxisCase {
  std::string name;
  Shape x, gamma;
  F::Axes axis;
  std::vector<int64_t> reduced;
};
std::vector<AxisCase> axis_cases() {
  return {
      {"(N, C, H, W), default axis (0, 2, 3)", {3, 4, 3, 2}, {4}, {}, {0, 2, 3}},
      {"(N, C, H, W), axis (0, 2, 3) given", {2, 3, 3, 5}, {3}, F::Axes{0, 2, 3}, {0, 2, 3}},
      {"(N, C, H, W), gamma (C, H, W): default axis 0", {4, 2, 3, 2}, {2, 3, 2}, {}, {0}},
      {"(N, C, H, W), axis 0 given", {3, 2, 2, 3}, {2, 2, 3}, 0, {0}},
      {"(N, C), default axis 0", {5, 3}, {3}, {}, {0}},
      {"(N, C, L), axis (0, 1): channels last", {2, 3, 4}, {4}, F::Axes{0, 1}, {0, 1}},
      {"(N, C, L), axis 1: channels apart (a transposed copy)", {3, 4, 2}, {3, 2}, 1, {1}},
      {"(N, H, W, C), axis (0, 1, 2) with negative axes", {2, 3, 2, 3}, {3}, F::Axes{-4, -3, -2}, {0, 1, 2}},
      {"batch 1, (1, C, H, W)", {1, 3, 2, 3}, {3}, {}, {0, 2, 3}},
  };
}
}  // namespace

TEST_CASE("batch_normalization: axis picks the statistics' axes, as Chainer's; the output equals a naive reference",
          "[batch_normalization][axis]") {
  for (const AxisCase& c : axis_cases()) {
    INFO(c.name);
    const Tensor x = uniform(c.x, 71, -2, 3), gamma = uniform(c.gamma, 72, 0.5, 2), beta = uniform(c.gamma, 73);
    F::BatchNormalizationOptions options;
    options.axis = c.axis;
    CHECK_THAT(values(F::batch_normalization(Variable(x), Variable(gamma), Variable(beta), options)),
               Catch::Matchers::Approx(values(naive_batch_norm(x, c.reduced, gamma, beta))).margin(1e-9));
    // float32 follows: the kernels' float32 path with float64 statistics.
    const Variable y32 = F::batch_normalization(Variable(x.astype(DType::Float32)),
                                                Variable(gamma.astype(DType::Float32)),
                                                Variable(beta.astype(DType::Float32)), options);
    CHECK_THAT(values(y32), Catch::Matchers::Approx(values(naive_batch_norm(x, c.reduced, gamma, beta))).margin(1e-5));
  }
}

TEST_CASE("batch_normalization and fixed_batch_normalization: gradients match finite differences for every axis",
          "[batch_normalization][axis][gradient]") {
  // Channels of as few as 3 values can have a small spread: a step of 1e-4 keeps the central
  // differences of the batch statistics within the tolerance.
  const GradientCheckOptions small_step{.eps = 1e-4};
  for (const AxisCase& c : axis_cases()) {
    INFO(c.name);
    F::BatchNormalizationOptions options;
    options.axis = c.axis;
    check([&](const Vars& v) { return F::batch_normalization(v[0], v[1], v[2], options); },
          {uniform(c.x, 81), uniform(c.gamma, 82, 0.5, 2), uniform(c.gamma, 83)}, small_step);
    check([&](const Vars& v) { return F::fixed_batch_normalization(v[0], v[1], v[2], v[3], v[4], 2e-5, c.axis); },
          {uniform(c.x, 84), uniform(c.gamma, 85, 0.5, 2), uniform(c.gamma, 86), uniform(c.gamma, 87),
           uniform(c.gamma, 88, 0.5, 2)});
  }
}

TEST_CASE("batch_normalization: the running statistics take gamma's shape under axis", "[batch_normalization][axis]") {
  const Tensor x = uniform({4, 3, 2}, 91);
  Tensor mean = Tensor::zeros({3, 2}, DType::Float64), var = Tensor::ones({3, 2}, DType::Float64);
  F::BatchNormalizationOptions options;
  options.running_mean = mean;
  options.running_var = var;
  options.axis = 0;
  F::batch_normalization(Variable(x), Variable(Tensor::ones({3, 2}, DType::Float64)),
                         Variable(Tensor::zeros({3, 2}, DType::Float64)), options);
  // decay 0.9: 0.1 of the batch mean over axis 0.
  const std::vector<double> v = values(x), m = values(mean);
  for (int64_t c = 0; c < 6; ++c)
    CHECK(m[size_t(c)] == Approx(0.1 * (v[size_t(c)] + v[size_t(6 + c)] + v[size_t(12 + c)] + v[size_t(18 + c)]) / 4));
}

TEST_CASE("BatchNormalization link: a tuple size normalizes each element over the batch; axis passes through",
          "[batch_normalization][axis][link]") {
  const Tensor x = uniform({5, 2, 3, 3}, 95, -1, 2, DType::Float32);
  L::BatchNormalization per_element(Shape{2, 3, 3});
  CHECK(per_element.avg_mean().shape() == Shape{2, 3, 3});
  CHECK(per_element.size() == 18);
  const Variable y = per_element.forward(Variable(x));
  const Tensor mean_over_batch = ops::sum(y.data(), {0});
  for (double v : values(mean_over_batch)) CHECK(std::abs(v) < 1e-5);
  // Channels last, as (N, H, W, C) with axis (0, 1, 2).
  L::BatchNormalization channels_last(3, {.axis = F::Axes{0, 1, 2}});
  const Variable z = channels_last.forward(Variable(x));
  CHECK(z.shape() == x.shape());
  for (double v : values(ops::sum(z.data(), {0, 1, 2}))) CHECK(std::abs(v) < 1e-4);
  CHECK(values(channels_last.avg_mean()) != std::vector<double>(3, 0.0));
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
             Contains("max_pooling_2d: x has dtype int32; expected float32 or float64"));
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
             Contains("elu: dtype int32 is not supported (expected float32 or float64)"));
}

TEST_CASE("batch_normalization: errors for axis name the op, the axes and the expected shape",
          "[batch_normalization][axis][errors]") {
  const Variable x(Tensor::zeros({4, 3, 2}));
  F::BatchNormalizationOptions options;
  options.axis = 0;
  CHECK_THAT(error_of([&] { F::batch_normalization(x, Variable(Tensor::ones({3})), Variable(Tensor::zeros({3})),
                                                   options); }),
             Contains("batch_normalization: gamma has shape (3,) but x of shape (4, 3, 2) normalized over axis 0") &&
                 Contains("expected (3, 2)"));
  options.axis = 3;
  CHECK_THAT(error_of([&] { F::batch_normalization(x, Variable(Tensor::ones({3})), Variable(Tensor::zeros({3})),
                                                   options); }),
             Contains("batch_normalization: axis 3 is out of range for an array of 3 dimensions"));
  const Variable g(Tensor::ones({3})), b(Tensor::zeros({3}));
  CHECK_THAT(error_of([&] { F::fixed_batch_normalization(x, g, b, b, g, 2e-5, F::Axes{0, 1}); }),
             Contains("fixed_batch_normalization: gamma has shape (3,) but x of shape (4, 3, 2) normalized over axis "
                      "(0, 1)") &&
                 Contains("expected (2,)"));
}
