// Tests of links::Convolution2D (nn/links/convolution_2d.h): Chainer's arguments, lazy in_channels
// (also from a loaded W, for Deconvolution2D too), initializers, nobias, groups, dilate, names.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "core/util/random.h"
#include "nn/functions.h"
#include "nn/initializers.h"
#include "nn/links/convolution_2d.h"
#include "nn/links/deconvolution_2d.h"
#include "tests/function_inputs.h"
#include "tests/nn/functions/conv_references.h"

namespace F = chainer::functions;
namespace L = chainer::links;
using namespace chainer;
using namespace chainer::testing;

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
