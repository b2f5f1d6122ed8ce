#include <catch2/catch.hpp>

#include <cmath>

#include "core/random.h"
#include "core/ops.h"
#include "core/update_ops.h"
#include "nn/functions.h"
#include "nn/links/linear.h"
#include "nn/optimizer_hooks.h"
#include "nn/optimizers/adam.h"
#include "nn/optimizers/momentum_sgd.h"
#include "nn/optimizers/sgd.h"

using namespace chainer;
namespace F = chainer::functions;

namespace {
// One float64 parameter vector, its gradient set by hand.
struct Param : Link {
  explicit Param(std::vector<double> v) { add_param("w", Tensor::from_vector(v)); }
};

const std::vector<std::vector<double>> kGrads = {{0.1, -0.2}, {0.3, 0.1}, {-0.2, 0.05}};

std::vector<double> run(Optimizer& opt, std::vector<double> start = {1.0, -0.5}) {
  auto link = std::make_shared<Param>(start);
  opt.setup(link);
  for (const auto& g : kGrads) {
    link->param("w").set_grad(Tensor::from_vector(g));
    opt.update();
  }
  return link->param("w").data().to_vector<double>();
}

// Least squares y = x A^T + c on a fixed random problem; returns the final loss.
double fit(Optimizer& opt, int steps) {
  Generator gen(7);
  Tensor x = random::normal({64, 5}, 0, 1, DType::Float32, &gen);
  Tensor A = random::normal({3, 5}, 0, 1, DType::Float32, &gen);
  Tensor y = F::linear(Variable(x), Variable(A)).data();
  random::seed(1);
  auto model = std::make_shared<links::Linear>(5, 3);
  opt.setup(model);
  double loss = 0;
  for (int i = 0; i < steps; ++i) {
    opt.update([&] {
      Variable l = F::mean_squared_error((*model)(Variable(x)), Variable(y));
      loss = l.item();
      return l;
    });
  }
  return loss;
}
}  // namespace

TEST_CASE("optimizers: three steps equal hand-computed values") {
  SECTION("Adam (Chainer's defaults, bias-corrected step)") {
    optimizers::Adam adam;
    auto w = run(adam);
    REQUIRE(adam.t() == 3);
    REQUIRE(w[0] == Approx(0.9978243193740721).epsilon(1e-12));
    REQUIRE(w[1] == Approx(-0.49867227614028903).epsilon(1e-12));
    REQUIRE(adam.state("/w").at("m").to_vector<double>()[0] == Approx(0.0151).epsilon(1e-12));
    REQUIRE(adam.state("/w").at("v").to_vector<double>()[0] == Approx(0.00013989001).epsilon(1e-9));
  }
  SECTION("MomentumSGD") {
    optimizers::MomentumSGD msgd(0.1, 0.9);
    auto w = run(msgd);
    REQUIRE(w[0] == Approx(0.9359).epsilon(1e-12));
    REQUIRE(w[1] == Approx(-0.4698).epsilon(1e-12));
  }
  SECTION("SGD") {
    optimizers::SGD sgd(0.5);
    auto w = run(sgd);
    REQUIRE(w[0] == Approx(1.0 - 0.5 * 0.2).epsilon(1e-12));
    REQUIRE(w[1] == Approx(-0.5 - 0.5 * -0.05).epsilon(1e-12));
  }
}

TEST_CASE("optimizers: Adam's float32 step is the exact step to within a few ulp") {
  // float32 computes sqrt and the division from refined hardware estimates; float64 runs the
  // formula as written. 1000 elements (vector body and tail), with zero second moments and
  // zero gradients among them, weight decay on.
  const int64_t n = 1000;
  Generator gen(3);
  // Parameters as small as the step, so float32's own rounding of them does not hide an error
  // in the step (an unrefined estimate, 14 bits, would fail by far).
  Tensor p = random::normal({n}, 0, 1e-3, DType::Float32, &gen), g = random::normal({n}, 0, 1e-2, DType::Float32, &gen);
  Tensor m = random::normal({n}, 0, 1e-2, DType::Float32, &gen), v = ops::mul(g, g);
  for (int64_t i = 0; i < n; i += 7) {
    g.data<float>()[i] = 0.f;
    v.data<float>()[i] = 0.f;
  }
  Tensor p64 = p.astype(DType::Float64), g64 = g.astype(DType::Float64), m64 = m.astype(DType::Float64),
         v64 = v.astype(DType::Float64);
  const std::vector<double> before = p64.to_vector<double>();
  const ops::AdamStep step{1e-3, 0.9, 0.999, 1e-8, 1.0, 1e-4};
  ops::adam_update_(p, g, m, v, step);
  ops::adam_update_(p64, g64, m64, v64, step);
  const auto got = p.to_vector<double>(), want = p64.to_vector<double>();
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float w = float(want[i]);
    const double ulp = double(std::nextafter(std::abs(w), INFINITY)) - double(std::abs(w));
    off += std::abs(got[i] - want[i]) > 1e-6 * std::abs(want[i] - before[i]) + 1.5 * ulp;
  }
  CHECK(off == 0);
  CHECK(m.to_vector<double>()[0] == Approx(m64.to_vector<double>()[0]).epsilon(1e-6));
}

TEST_CASE("optimizers: state is created lazily, parameters without grads get zeros") {
  optimizers::Adam adam;
  auto link = std::make_shared<Param>(std::vector<double>{1, 2});
  adam.setup(link);
  REQUIRE(adam.state("/w").empty());
  adam.update();  // no gradient: Chainer fills zeros, so the parameter stays put
  REQUIRE(adam.state("/w").size() == 2);
  REQUIRE(link->param("w").data().to_vector<double>() == std::vector<double>{1, 2});
}

TEST_CASE("optimizers: hooks") {
  SECTION("WeightDecay adds rate * w to the gradient") {
    optimizers::SGD sgd(1.0);
    sgd.add_hook(std::make_shared<optimizer_hooks::WeightDecay>(0.1));
    auto link = std::make_shared<Param>(std::vector<double>{1, -2});
    sgd.setup(link);
    sgd.add_hook(std::make_shared<optimizer_hooks::GradientClipping>(100.0));
    link->param("w").set_grad(Tensor::from_vector<double>({0.5, 0.5}));
    sgd.update();
    REQUIRE(link->param("w").data().to_vector<double>() == std::vector<double>{1 - 0.6, -2 - 0.3});
    REQUIRE_THROWS_WITH(sgd.add_hook(std::make_shared<optimizer_hooks::WeightDecay>(0.1)),
                        Catch::Contains("WeightDecay"));
  }
  SECTION("GradientClipping rescales to the threshold norm") {
    optimizers::SGD sgd(1.0);
    auto link = std::make_shared<Param>(std::vector<double>{0, 0});
    sgd.setup(link);
    sgd.add_hook(std::make_shared<optimizer_hooks::GradientClipping>(1.0));
    link->param("w").set_grad(Tensor::from_vector<double>({3, 4}));
    sgd.update();
    auto w = link->param("w").data().to_vector<double>();
    REQUIRE(w[0] == Approx(-0.6));
    REQUIRE(w[1] == Approx(-0.8));
  }
  REQUIRE_THROWS_WITH(optimizer_hooks::WeightDecay(-1), Catch::Contains("-1"));
  REQUIRE_THROWS_WITH(optimizers::Adam(0.001, 1.5), Catch::Contains("beta1") && Catch::Contains("1.5"));
}

TEST_CASE("optimizers: each converges on a least-squares problem") {
  optimizers::SGD sgd(0.1);
  optimizers::MomentumSGD msgd(0.05, 0.9);
  optimizers::Adam adam(0.05);
  double initial;
  {
    optimizers::SGD probe(1e-12);
    initial = fit(probe, 1);
  }
  REQUIRE(initial > 1.0);
  CHECK(fit(sgd, 300) < 1e-4 * initial);
  CHECK(fit(msgd, 300) < 1e-4 * initial);
  CHECK(fit(adam, 300) < 1e-3 * initial);
}

TEST_CASE("optimizers: a parameter added after the first updates counts its own steps (Adam's bias correction)") {
  // As Chainer's UpdateRule.t: after 3 updates of w, a new parameter u takes Adam's FIRST step,
  // m_hat = g and v_hat = g^2, so it moves by alpha * g / (|g| + eps), about alpha, not by the
  // ~0.58 alpha that the optimizer's global t = 4 would give.
  struct Two : Link {
    explicit Two(bool with_u) {
      add_param("w", Tensor::from_vector<double>({1.0, -1.0}));
      if (with_u) add_param("u", Tensor::from_vector<double>({0.0, 0.0}));
    }
  };
  optimizers::Adam adam(0.01);
  auto link = std::make_shared<Two>(false);
  adam.setup(link);
  for (int i = 0; i < 3; ++i) {
    link->param("w").set_grad(Tensor::from_vector<double>({0.5, 0.5}));
    adam.update();
  }
  link->add_param("u", Tensor::from_vector<double>({0.0, 0.0}));
  link->param("w").set_grad(Tensor::from_vector<double>({0.5, 0.5}));
  link->param("u").set_grad(Tensor::from_vector<double>({2.0, -3.0}));
  adam.update();
  REQUIRE(adam.t() == 4);
  const auto u = link->param("u").data().to_vector<double>();
  CHECK(u[0] == Approx(-0.01 * 2.0 / (2.0 + 1e-8)));
  CHECK(u[1] == Approx(0.01 * 3.0 / (3.0 + 1e-8)));
  // The counts are saved per parameter ("u/t", "w/t") and restored: the next steps match.
  Serializer w = Serializer::writer();
  adam.serialize(w);
  REQUIRE(w.entries().count("u/t") == 1);
  REQUIRE(w.entries().at("u/t").item<int64_t>() == 1);
  REQUIRE(w.entries().at("w/t").item<int64_t>() == 4);
  optimizers::Adam resumed(0.01);
  auto copy = std::make_shared<Two>(true);
  for (const char* n : {"w", "u"}) copy->param(n).data().copy_(link->param(n).data());
  resumed.setup(copy);
  Serializer r = Serializer::reader(w.entries());
  resumed.serialize(r);
  for (auto* l : {link.get(), copy.get()}) {
    l->param("w").set_grad(Tensor::from_vector<double>({0.1, -0.2}));
    l->param("u").set_grad(Tensor::from_vector<double>({-1.0, 0.5}));
  }
  adam.update();
  resumed.update();
  for (const char* n : {"w", "u"})
    CHECK(link->param(n).data().to_vector<double>() == copy->param(n).data().to_vector<double>());
}

TEST_CASE("optimizers: state survives serialization") {
  optimizers::Adam a, b;
  auto la = std::make_shared<Param>(std::vector<double>{1.0, -0.5});
  a.setup(la);
  la->param("w").set_grad(Tensor::from_vector<double>({0.1, 0.2}));
  a.update();
  Serializer w = Serializer::writer();
  a.serialize(w);
  REQUIRE(w.entries().count("w/m") == 1);
  auto lb = std::make_shared<Param>(std::vector<double>{1.0, -0.5});
  b.setup(lb);
  Serializer r = Serializer::reader(w.entries());
  b.serialize(r);
  REQUIRE(b.t() == 1);
  for (auto* l : {la.get(), lb.get()}) l->param("w").set_grad(Tensor::from_vector<double>({0.3, -0.1}));
  lb->param("w").data().copy_(la->param("w").data());
  a.update();
  b.update();
  REQUIRE(la->param("w").data().to_vector<double>() == lb->param("w").data().to_vector<double>());
}
