// Tests of links::BatchNormalization (nn/links/batch_normalization.h): parameters and persistents,
// training and test mode, fine-tuning, serialization, tuple sizes and axis. The multi-node link is
// checked in tests/distributed/test_multi_node_links.cpp.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "core/io/serializer.h"
#include "core/ops/ops.h"
#include "core/util/config.h"
#include "nn/functions.h"
#include "nn/links/batch_normalization.h"
#include "tests/function_inputs.h"
#include "tests/nn/functions/batch_norm_references.h"
#include "tests/nn/functions/reference_checks.h"

namespace F = chainer::functions;
namespace L = chainer::links;
using namespace chainer;
using namespace chainer::testing;

TEST_CASE("BatchNormalization link: gamma and beta are parameters, avg_mean and avg_var persistents, as Chainer's",
          "[batch_normalization][link]") {
  L::BatchNormalization bn(3);
  std::vector<std::string> names;
  for (auto& [name, p] : bn.namedparams()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"/beta", "/gamma"});
  CHECK(values(bn.gamma()->data()) == std::vector<double>{1, 1, 1});
  CHECK(values(bn.beta()->data()) == std::vector<double>{0, 0, 0});
  CHECK(values(bn.avg_mean()) == std::vector<double>{0, 0, 0});
  CHECK(values(bn.avg_var()) == std::vector<double>{1, 1, 1});
  CHECK(bn.gamma()->data().dtype() == DType::Float32);

  L::BatchNormalization fixed_affine(2, {.dtype = DType::Float64, .use_gamma = false, .initial_beta = 0.5});
  names.clear();
  for (auto& [name, p] : fixed_affine.namedparams()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"/beta"});
  CHECK(fixed_affine.gamma() == nullptr);
  CHECK(values(fixed_affine.beta()->data()) == std::vector<double>{0.5, 0.5});
  // Without gamma the output is x_hat + beta.
  const Tensor x = uniform({4, 2}, 80);
  const Variable y = fixed_affine(Variable(x));
  expect_close(values(y.data()), reference(x, {1, 1}, {0.5, 0.5}, batch_means(x), batch_vars(x)), 1e-12);
  CHECK_THAT(error_of([] { L::BatchNormalization(0); }),
             Catch::Contains("BatchNormalization: size must be positive, got 0"));
}

TEST_CASE("BatchNormalization link: training uses the batch and updates the averages; test mode uses the averages",
          "[batch_normalization][link]") {
  L::BatchNormalization bn(3, {.decay = 0.8, .dtype = DType::Float64});
  bn.gamma()->data().copy_(uniform({3}, 90, 0.5, 2));
  bn.beta()->data().copy_(uniform({3}, 91));
  const std::vector<double> gamma = values(bn.gamma()->data()), beta = values(bn.beta()->data());
  std::vector<double> want_mean{0, 0, 0}, want_var{1, 1, 1};
  for (uint64_t t = 0; t < 2; ++t) {
    const Tensor x = normal({4, 3, 2}, 92 + t, 1.0, 2.0);  // m = 8
    Variable xv(x, true);
    const Variable y = bn(xv);
    expect_close(values(y.data()), reference(x, gamma, beta, batch_means(x), batch_vars(x)), 1e-12);
    F::sum(y * y).backward();
    CHECK(bn.gamma()->grad().defined());
    CHECK(xv.grad().defined());
    bn.cleargrads();
    const auto mean = batch_means(x), var = batch_vars(x);
    for (size_t c = 0; c < 3; ++c) {
      want_mean[c] = 0.8 * want_mean[c] + 0.2 * mean[c];
      want_var[c] = 0.8 * want_var[c] + 0.2 * var[c] * 8.0 / 7.0;
    }
    expect_close(values(bn.avg_mean()), want_mean, 1e-14);
    expect_close(values(bn.avg_var()), want_var, 1e-14);
  }
  config::TrainScope test_mode(false);
  const Tensor x = normal({1, 3, 2}, 99);  // one example is fine in test mode
  const Variable y = bn(Variable(x));
  expect_close(values(y.data()), reference(x, gamma, beta, want_mean, want_var), 1e-12);
  expect_close(values(bn.avg_mean()), want_mean, 1e-14);  // unchanged
  expect_close(values(bn.avg_var()), want_var, 1e-14);
  CHECK(bn.N() == 0);
}

TEST_CASE("BatchNormalization link: fine-tuning averages the batch statistics since start_finetuning",
          "[batch_normalization][link]") {
  L::BatchNormalization bn(2, {.dtype = DType::Float64});
  bn(Variable(normal({5, 2}, 100, 4.0)));  // a plain step first: fine-tuning starts over
  std::vector<double> sum_mean{0, 0}, sum_var{0, 0};
  for (uint64_t t = 0; t < 3; ++t) {
    const Tensor x = normal({5, 2}, 101 + t, double(t), 1.0 + double(t));
    bn.forward(Variable(x), true);
    CHECK(bn.N() == int64_t(t) + 1);
    const auto mean = batch_means(x), var = batch_vars(x);
    for (size_t c = 0; c < 2; ++c) sum_mean[c] += mean[c], sum_var[c] += var[c] * 5.0 / 4.0;
  }
  expect_close(values(bn.avg_mean()), {sum_mean[0] / 3, sum_mean[1] / 3}, 1e-14);
  expect_close(values(bn.avg_var()), {sum_var[0] / 3, sum_var[1] / 3}, 1e-14);
  bn.start_finetuning();
  CHECK(bn.N() == 0);
  // A rejected input does not count.
  CHECK_FALSE(error_of([&] { bn.forward(Variable(Tensor::zeros({1, 2}, DType::Float64)), true); }).empty());
  CHECK(bn.N() == 0);
}

TEST_CASE("BatchNormalization link: serialize saves gamma, beta, avg_mean, avg_var and N, and loads them back",
          "[batch_normalization][link]") {
  L::BatchNormalization a(3);
  a.gamma()->data().copy_(uniform({3}, 110, 0.5, 2));
  a.forward(Variable(normal({4, 3}, 111, 1.0, 3.0, DType::Float32)), true);
  a.forward(Variable(normal({4, 3}, 112, 1.0, 3.0, DType::Float32)), true);
  Serializer writer = Serializer::writer();
  a.serialize(writer);
  std::vector<std::string> keys;
  for (const auto& [key, t] : writer.entries()) keys.push_back(key);
  CHECK(keys == std::vector<std::string>{"N", "avg_mean", "avg_var", "beta", "gamma"});

  L::BatchNormalization b(3);
  Serializer reader = Serializer::reader(writer.entries());
  b.serialize(reader);
  CHECK(b.N() == 2);
  CHECK(values(b.gamma()->data()) == values(a.gamma()->data()));
  CHECK(values(b.beta()->data()) == values(a.beta()->data()));
  CHECK(values(b.avg_mean()) == values(a.avg_mean()));
  CHECK(values(b.avg_var()) == values(a.avg_var()));
  CHECK(values(b.avg_mean()) != std::vector<double>{0, 0, 0});
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
