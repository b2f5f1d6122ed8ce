// Tests of deconvolution_2d (nn/functions/deconvolution_2d.h): the transpose of convolution_2d
// over the geometries of conv_references.h, its gradients, its output size and outsize.
#include <catch2/catch.hpp>

#include <optional>

#include "core/ops/ops.h"
#include "nn/functions.h"
#include "tests/function_inputs.h"
#include "tests/nn/functions/conv_references.h"

namespace F = chainer::functions;
using namespace chainer;
using namespace chainer::testing;
using Vars = std::vector<Variable>;

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
