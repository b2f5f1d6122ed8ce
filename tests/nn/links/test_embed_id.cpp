// Tests of the EmbedID link (nn/links/embed_id.h): Chainer's parameter shape and default
// initializer, initialW, ignore_label passed to embed_id, and the errors.
#include <catch2/catch.hpp>

#include <cmath>

#include "nn/functions.h"
#include "nn/links/embed_id.h"

using namespace chainer;
namespace L = chainer::links;

TEST_CASE("EmbedID: W (in_size, out_size) from Normal(1.0), as Chainer's", "[links][embed_id]") {
  L::EmbedID embed(500, 40);
  const auto params = embed.namedparams();
  REQUIRE(params.size() == 1);
  CHECK(params[0].first == "/W");
  REQUIRE(embed.W().shape() == Shape{500, 40});
  const std::vector<double> w = embed.W().data().to_vector<double>();
  double sum = 0, squares = 0;
  for (double v : w) sum += v, squares += v * v;
  const double mean = sum / double(w.size()), stddev = std::sqrt(squares / double(w.size()) - mean * mean);
  CHECK(std::abs(mean) < 0.03);  // 20000 draws: the mean's deviation is 0.007
  CHECK(stddev == Approx(1.0).epsilon(0.03));
}

TEST_CASE("EmbedID: forward is embed_id with the link's ignore_label; initialW sets the table",
          "[links][embed_id]") {
  L::EmbedID embed(3, 2, Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2}), 0);
  CHECK(embed.ignore_label() == 0);
  const Variable y = embed(Variable(Tensor::from_vector<int32_t>({2, 0, 1})));
  CHECK(y.data().to_vector<float>() == std::vector<float>{5, 6, 0, 0, 3, 4});
  CHECK_THROWS_WITH(L::EmbedID(0, 2), Catch::Contains("EmbedID: in_size and out_size must be positive, got 0 and 2"));
  CHECK_THROWS_WITH(L::EmbedID(3, 2, Tensor::zeros({2, 2})), Catch::Contains("EmbedID: initialW"));
}
