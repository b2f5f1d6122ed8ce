// Loss scaling and float32 master weights (nn/loss_scaler.h, Optimizer::loss_scaling and
// use_fp32_update), on float32 and float64 models with gradients set by hand: an inf or a NaN is
// injected where a float16 model would overflow. Scales are powers of two where an exact
// comparison with the unscaled run is made (dividing by them is exact).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "core/util/config.h"
#include "core/util/random.h"
#include "nn/functions.h"
#include "nn/links/linear.h"
#include "nn/loss_scaler.h"
#include "nn/optimizer_hooks.h"
#include "nn/optimizers/adam.h"
#include "nn/optimizers/sgd.h"

using namespace chainer;
namespace F = chainer::functions;

namespace {
const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// One parameter vector "w" of DTYPE.
struct Param : Link {
  Param(std::vector<double> v, DType dtype) { add_param("w", Tensor::from_vector(v).astype(dtype)); }
};

std::vector<double> values(const Tensor& t) { return t.astype(DType::Float64).to_vector<double>(); }

// Sets w's gradient to G (in w's dtype) and updates.
void step(Optimizer& opt, Link& link, const std::vector<double>& g) {
  Variable& w = link.param("w");
  w.set_grad(Tensor::from_vector(g).astype(w.dtype()));
  opt.update();
}

// Records the gradients the hooks see.
struct Recorder : OptimizerHook {
  std::vector<std::vector<double>> seen;
  std::string name() const override { return "Recorder"; }
  void operator()(Optimizer& opt) override { seen.push_back(values(opt.target().param("w").grad())); }
};
}  // namespace

TEST_CASE("loss scaling: backward starts from loss_scale times the initial gradient") {
  Variable x(Tensor::from_vector<double>({3.0}), true);
  F::sum(F::square(x)).backward({.loss_scale = 8.0});
  REQUIRE(values(x.grad()) == std::vector<double>{48.0});  // 8 * 2x
  x.cleargrad();
  Variable y = F::square(x);
  y.set_grad(Tensor::from_vector<double>({0.5}));
  y.backward({.loss_scale = 4.0});
  REQUIRE(values(x.grad()) == std::vector<double>{3.0});  // 0.5 * 2x: a set gradient is used as it is, as Chainer's
  REQUIRE_THROWS_WITH(F::square(x).backward({.loss_scale = 0.0}),
                      Catch::Contains("backward") && Catch::Contains("loss_scale") && Catch::Contains("0"));
  REQUIRE_THROWS_WITH(F::square(x).backward({.loss_scale = kInf}), Catch::Contains("loss_scale"));
}

TEST_CASE("loss scaling: GradScaler's dynamic scale grows after growth_interval good steps and backs off at a skip") {
  LossScaler s = LossScaler::dynamic({.init_scale = 1024, .growth_factor = 2, .backoff_factor = 0.5, .growth_interval = 3});
  s.step_done(false);
  s.step_done(false);
  REQUIRE(s.scale() == 1024);
  REQUIRE(s.good_steps() == 2);
  s.step_done(false);  // the third good step in a row
  REQUIRE(s.scale() == 2048);
  REQUIRE(s.good_steps() == 0);
  s.step_done(false);
  s.step_done(false);
  s.step_done(true);  // a skip resets the count
  REQUIRE(s.scale() == 1024);
  REQUIRE(s.good_steps() == 0);
  REQUIRE(s.overflowed_ever());
  for (int i = 0; i < 2; ++i) s.step_done(false);
  REQUIRE(s.scale() == 1024);
  s.step_done(false);
  REQUIRE(s.scale() == 2048);

  LossScaler fixed = LossScaler::fixed(128);
  fixed.step_done(true);
  REQUIRE(fixed.scale() == 128);
  REQUIRE_FALSE(fixed.is_dynamic());

  REQUIRE_THROWS_WITH(LossScaler::fixed(-1), Catch::Contains("scale") && Catch::Contains("-1"));
  REQUIRE_THROWS_WITH(LossScaler::dynamic({.backoff_factor = 1.5}), Catch::Contains("backoff_factor") && Catch::Contains("1.5"));
  REQUIRE_THROWS_WITH(LossScaler::dynamic({.growth_interval = 0}), Catch::Contains("growth_interval"));
  REQUIRE_THROWS_WITH(LossScaler::chainer_dynamic(0), Catch::Contains("interval") && Catch::Contains("0"));
}

TEST_CASE("loss scaling: Chainer's dynamic scale doubles until the first skip, then doubles over `interval` steps") {
  const int64_t interval = 4;
  LossScaler s = LossScaler::chainer_dynamic(interval);
  REQUIRE(s.scale() == 1);
  for (int i = 0; i < 5; ++i) s.step_done(false);
  REQUIRE(s.scale() == 32);
  s.step_done(true);
  REQUIRE(s.scale() == 16);
  const double m = std::pow(2.0, 1.0 / interval);
  double expected = 16;
  for (int i = 0; i < interval; ++i) {
    s.step_done(false);
    expected *= m;  // the same arithmetic, so equal exactly
    REQUIRE(s.scale() == expected);
  }
  REQUIRE(s.scale() == Approx(32).epsilon(1e-12));
  // Bounds [1, 65504], as Chainer's.
  for (int i = 0; i < 20; ++i) s.step_done(true);
  REQUIRE(s.scale() == 1);
  LossScaler up = LossScaler::chainer_dynamic(1);
  for (int i = 0; i < 40; ++i) up.step_done(false);
  REQUIRE(up.scale() == 65504);
}

TEST_CASE("loss scaling: update(lossfun) backpropagates the scaled loss and the step sees the true gradients") {
  for (const bool dynamic : {false, true}) {
    auto run = [&](bool scaled) {
      optimizers::SGD sgd(0.1);
      auto link = std::make_shared<Param>(std::vector<double>{1.0, -2.0}, DType::Float32);
      sgd.setup(link);
      if (scaled && dynamic) sgd.loss_scaling({.init_scale = 1024, .growth_interval = 1});
      else if (scaled) sgd.loss_scaling(1000, 1024.0);
      std::vector<double> grads;
      for (int i = 0; i < 3; ++i) {
        sgd.update([&] { return F::sum(F::square(Variable(link->param("w")))); });
        grads = values(link->param("w").grad());
      }
      return std::pair{values(link->param("w").data()), grads};
    };
    const auto [plain, plain_grad] = run(false);
    const auto [scaled, scaled_grad] = run(true);
    REQUIRE(scaled == plain);             // powers of two: dividing them out is exact
    REQUIRE(scaled_grad == plain_grad);  // what the parameters hold after update() is unscaled
  }
  optimizers::SGD sgd;
  REQUIRE(sgd.loss_scale() == 1);
  sgd.set_loss_scale(8);
  REQUIRE(sgd.loss_scale() == 8);
  REQUIRE_FALSE(sgd.loss_scaler()->is_dynamic());
  REQUIRE_FALSE(sgd.capturable());  // the scale is read on the host at every step
  sgd.loss_scaling();
  REQUIRE(sgd.loss_scale() == 1);  // Chainer's dynamic scaling starts at 1
  REQUIRE(sgd.loss_scaler()->is_dynamic());
  REQUIRE_THROWS_WITH(sgd.loss_scaling(1000, 0.0), Catch::Contains("scale") && Catch::Contains("0"));
}

TEST_CASE("loss scaling: a step with an inf or a NaN gradient is skipped: parameters, state and step counts stay") {
  for (const double bad : {kInf, -kInf, kNaN}) {
    CAPTURE(bad);
    optimizers::Adam adam(0.01);
    auto link = std::make_shared<Param>(std::vector<double>{1.0, -2.0, 0.5}, DType::Float32);
    adam.setup(link);
    adam.loss_scaling({.init_scale = 256, .growth_interval = 2});
    step(adam, *link, {25.6, -12.8, 2.56});  // 256 times {0.1, -0.05, 0.01}
    REQUIRE_FALSE(adam.last_update_skipped());
    const std::vector<double> w = values(link->param("w").data());
    const std::vector<double> m = values(adam.state("/w").at("m")), v = values(adam.state("/w").at("v"));
    REQUIRE(adam.loss_scale() == 256);  // one good step of two

    step(adam, *link, {1.0, bad, 1.0});
    REQUIRE(adam.last_update_skipped());
    REQUIRE(adam.skipped_updates() == 1);
    REQUIRE(values(link->param("w").data()) == w);
    REQUIRE(values(adam.state("/w").at("m")) == m);
    REQUIRE(values(adam.state("/w").at("v")) == v);
    REQUIRE(adam.step_counts().params.at("/w") == 1);  // Adam's bias correction did not advance
    REQUIRE(adam.t() == 2);                            // as Chainer's: t counts the skipped update
    REQUIRE(adam.loss_scale() == 128);
    REQUIRE(adam.loss_scaler()->good_steps() == 0);

    step(adam, *link, {12.8, -6.4, 1.28});  // finite again: Adam's second step
    REQUIRE_FALSE(adam.last_update_skipped());
    REQUIRE(adam.step_counts().params.at("/w") == 2);
    REQUIRE(values(link->param("w").data()) != w);
  }
}

TEST_CASE("loss scaling: a static scale checks nothing and skips nothing, as Chainer's") {
  optimizers::SGD sgd(1.0);
  auto link = std::make_shared<Param>(std::vector<double>{1.0, 2.0}, DType::Float64);
  sgd.setup(link);
  sgd.loss_scaling(1000, 4.0);
  step(sgd, *link, {4.0, kInf});
  REQUIRE_FALSE(sgd.last_update_skipped());
  REQUIRE(values(link->param("w").data())[0] == 0.0);  // 1 - 4/4
  REQUIRE(std::isinf(values(link->param("w").data())[1]));
}

TEST_CASE("loss scaling: WeightDecay and GradientClipping see the unscaled gradients") {
  auto run = [](bool scaled) {
    optimizers::SGD sgd(1.0);
    auto link = std::make_shared<Param>(std::vector<double>{1.0, -2.0}, DType::Float64);
    sgd.setup(link);
    auto recorder = std::make_shared<Recorder>();
    sgd.add_hook(std::make_shared<optimizer_hooks::WeightDecay>(0.1));
    sgd.add_hook(recorder);
    sgd.add_hook(std::make_shared<optimizer_hooks::GradientClipping>(1.0));
    const double s = scaled ? 1024 : 1;
    if (scaled) sgd.loss_scaling({.init_scale = s});
    step(sgd, *link, {3.0 * s, 4.0 * s});
    return std::pair{values(link->param("w").data()), recorder->seen.at(0)};
  };
  const auto [w, seen] = run(true);
  REQUIRE(seen == std::vector<double>{3.0 + 0.1 * 1.0, 4.0 + 0.1 * -2.0});  // true gradient plus decay
  // Clipped to norm 1: w -= g / |g|.
  const double norm = std::hypot(3.1, 3.8);
  REQUIRE(w[0] == Approx(1.0 - 3.1 / norm));
  REQUIRE(w[1] == Approx(-2.0 - 3.8 / norm));
  REQUIRE(w == run(false).first);
}

TEST_CASE("loss scaling: the scale, the good-step count and the overflow flag survive a snapshot") {
  optimizers::SGD a(0.1), b(0.1);
  auto la = std::make_shared<Param>(std::vector<double>{1.0}, DType::Float32);
  auto lb = std::make_shared<Param>(std::vector<double>{1.0}, DType::Float32);
  a.setup(la);
  b.setup(lb);
  a.loss_scaling({.init_scale = 64, .growth_interval = 3});
  b.loss_scaling({.init_scale = 64, .growth_interval = 3});
  step(a, *la, {kNaN});
  step(a, *la, {1.0});
  Serializer w = Serializer::writer();
  a.serialize(w);
  REQUIRE(w.entries().count("loss_scaling/scale") == 1);
  Serializer r = Serializer::reader(w.entries());
  b.serialize(r);
  REQUIRE(b.loss_scale() == 32);
  REQUIRE(b.loss_scaler()->good_steps() == 1);
  REQUIRE(b.loss_scaler()->overflowed_ever());
  // Without loss scaling nothing is written, and a snapshot without it leaves the setting alone.
  optimizers::SGD c(0.1);
  c.setup(std::make_shared<Param>(std::vector<double>{1.0}, DType::Float32));
  Serializer wc = Serializer::writer();
  c.serialize(wc);
  REQUIRE(wc.entries().count("loss_scaling/scale") == 0);
  Serializer rc = Serializer::reader(wc.entries());
  b.serialize(rc);
  REQUIRE(b.loss_scale() == 32);
}

TEST_CASE("fp32 update: a half parameter without use_fp32_update is refused, naming it and the remedy") {
  for (const DType half : {DType::Float16, DType::BFloat16}) {
    optimizers::SGD sgd;
    auto link = std::make_shared<Param>(std::vector<double>{1.0}, half);
    sgd.setup(link);
    REQUIRE_THROWS_WITH(step(sgd, *link, {1.0}), Catch::Contains("/w") && Catch::Contains(dtype_name(half)) &&
                                                     Catch::Contains("use_fp32_update()"));
  }
}

TEST_CASE("fp32 update: half parameters step a float32 master, and steps too small for half accumulate there") {
  for (const DType half : {DType::Float16, DType::BFloat16}) {
    CAPTURE(dtype_name(half));
    optimizers::SGD sgd(1e-4);
    auto link = std::make_shared<Param>(std::vector<double>{1.0, -3.0}, half);
    sgd.setup(link);
    sgd.use_fp32_update();
    sgd.loss_scaling({.init_scale = 1024});
    // Each step moves w by 1e-4, far below half an ulp of 1 in float16 (2^-11) and bfloat16 (2^-8):
    // a step in half precision would leave w where it is.
    float expected = 1.0f;
    for (int i = 0; i < 200; ++i) {
      step(sgd, *link, {1024.0, 0.0});
      expected -= float(1e-4);  // float32 arithmetic, as the master's
    }
    const Tensor master = sgd.fp32_param("/w");
    REQUIRE(master.dtype() == DType::Float32);
    REQUIRE(values(master)[0] == Approx(expected).epsilon(1e-6));
    REQUIRE(values(master)[0] == Approx(0.98).epsilon(1e-5));
    // The half parameter is the master rounded, and it moved.
    REQUIRE(link->param("w").dtype() == half);
    REQUIRE(values(link->param("w").data()) == values(master.astype(half)));
    REQUIRE(values(link->param("w").data())[0] < 1.0);
    // The half gradient is left as it was (scaled), as Chainer's.
    REQUIRE(values(link->param("w").grad()) == std::vector<double>{1024.0, 0.0});
  }
}

TEST_CASE("fp32 update: a skipped step leaves the half parameter and its master alone") {
  optimizers::SGD sgd(0.5);
  auto link = std::make_shared<Param>(std::vector<double>{1.0}, DType::Float16);
  sgd.setup(link);
  sgd.use_fp32_update();
  sgd.loss_scaling({.init_scale = 2});
  step(sgd, *link, {1.0});
  REQUIRE(values(sgd.fp32_param("/w")) == std::vector<double>{0.75});
  step(sgd, *link, {kInf});  // float16's overflow, as a too-large scale produces
  REQUIRE(sgd.last_update_skipped());
  REQUIRE(values(sgd.fp32_param("/w")) == std::vector<double>{0.75});
  REQUIRE(values(link->param("w").data()) == std::vector<double>{0.75});
  REQUIRE(sgd.loss_scale() == 1);
}

TEST_CASE("fp32 update: the masters are saved in snapshots and a restart continues bit for bit") {
  auto make = [] {
    auto link = std::make_shared<Param>(std::vector<double>{0.3, -0.7, 1.1}, DType::BFloat16);
    auto adam = std::make_shared<optimizers::Adam>(0.003);
    adam->setup(link);
    adam->use_fp32_update();
    adam->loss_scaling(10);
    return std::pair{link, adam};
  };
  const std::vector<std::vector<double>> grads = {{0.1, -0.2, 0.3}, {0.05, 0.1, -0.1}, {-0.3, 0.2, 0.01}};
  auto [la, a] = make();
  for (int i = 0; i < 4; ++i) step(*a, *la, grads[i % 3]);
  Serializer w = Serializer::writer();
  la->serialize(w);
  a->serialize(w);
  REQUIRE(w.entries().count("w/fp32_param") == 1);
  auto [lb, b] = make();
  Serializer r = Serializer::reader(w.entries());
  lb->serialize(r);
  b->serialize(r);
  REQUIRE(b->loss_scale() == a->loss_scale());
  for (int i = 0; i < 5; ++i) {
    // The gradients are scaled by each optimizer's current scale, as backward would make them.
    step(*a, *la, {grads[i % 3][0] * a->loss_scale(), grads[i % 3][1] * a->loss_scale(), grads[i % 3][2] * a->loss_scale()});
    step(*b, *lb, {grads[i % 3][0] * b->loss_scale(), grads[i % 3][1] * b->loss_scale(), grads[i % 3][2] * b->loss_scale()});
  }
  REQUIRE(values(a->fp32_param("/w")) == values(b->fp32_param("/w")));
  REQUIRE(values(la->param("w").data()) == values(lb->param("w").data()));
  REQUIRE(a->loss_scale() == b->loss_scale());
}

TEST_CASE("fp32 update: a float16 model (config::dtype float16) trains with Chainer's dynamic loss scaling") {
  config::DtypeScope float16(config::Dtype::Float16);
  random::seed(3);
  auto model = std::make_shared<links::Linear>(3, 1);
  REQUIRE(model->W().dtype() == DType::Float16);
  std::vector<float> xs, ts;
  for (int i = 0; i < 32; ++i) {
    const float a = float(i % 5) / 5 - 0.4f, b = float(i % 7) / 7 - 0.4f, c = float(i % 3) / 3 - 0.3f;
    xs.insert(xs.end(), {a, b, c});
    ts.push_back(a - 2 * b + 0.5f * c);
  }
  const Variable x(Tensor::from_vector(xs, {32, 3})), t(Tensor::from_vector(ts, {32, 1}));
  optimizers::Adam adam(0.01);
  adam.setup(model);
  adam.use_fp32_update();
  adam.loss_scaling();  // from 1, doubling every step until the half gradients overflow
  // 64 times the mean squared error: the same minimum, and gradients large enough that a scale
  // climbing towards 65504 overflows float16 on the way.
  auto loss = [&] { return F::mean_squared_error((*model)(x), t) * 64.0; };
  const double first = loss().item();
  for (int i = 0; i < 200; ++i) adam.update(loss);
  // The scale climbed until float16 overflowed (then those steps were skipped and it backed off).
  CHECK(adam.skipped_updates() > 0);
  CHECK(adam.loss_scale() > 1);
  CHECK(adam.step_counts().params.at("/W") == 200 - adam.skipped_updates());
  CHECK(model->W().dtype() == DType::Float16);
  CHECK(values(model->W().data()) == values(adam.fp32_param("/W").astype(DType::Float16)));
  CHECK(loss().item() < first / 20);
}

TEST_CASE("all_finite: every floating dtype, the largest finite values included; an inf or a NaN anywhere is not") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  for (const DType dtype : {DType::Float64, DType::Float32, DType::Float16, DType::BFloat16}) {
    CAPTURE(dtype_name(dtype));
    const double largest = dtype == DType::Float16 ? 65504.0 : dtype == DType::BFloat16 ? 3.3895313892515355e38 : 1e38;
    const Tensor finite = Tensor::from_vector(std::vector<double>{largest, -largest, 0.5, 0.0}).astype(dtype);
    CHECK(all_finite(finite));
    for (const double bad : {inf, -inf, nan}) {
      const Tensor t = Tensor::from_vector(std::vector<double>{1.0, bad, 2.0}).astype(dtype);
      CHECK_FALSE(all_finite(t));
      CHECK_FALSE(all_finite(std::vector<Tensor>{finite, t}));
    }
    CHECK(all_finite(std::vector<Tensor>{finite, finite}));
  }
}
