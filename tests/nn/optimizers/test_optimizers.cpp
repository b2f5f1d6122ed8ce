#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>

#include "core/util/random.h"
#include "core/ops/ops.h"
#include "core/ops/update_ops.h"
#include "nn/functions.h"
#include "nn/links/linear.h"
#include "nn/optimizer_hooks.h"
#include "nn/optimizers/ada_delta.h"
#include "nn/optimizers/ada_grad.h"
#include "nn/optimizers/adam.h"
#include "nn/optimizers/momentum_sgd.h"
#include "nn/optimizers/nesterov_ag.h"
#include "nn/optimizers/rmsprop.h"
#include "nn/optimizers/rmsprop_graves.h"
#include "nn/optimizers/sgd.h"
#include "nn/optimizers/smorms3.h"

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

TEST_CASE("optimizers: another optimizer's snapshot is refused, naming the state it does not keep") {
  // Adam's "v" is MomentumSGD's velocity by name only: loading it would succeed with the wrong values.
  optimizers::Adam adam;
  auto la = std::make_shared<Param>(std::vector<double>{1.0, -0.5});
  adam.setup(la);
  la->param("w").set_grad(Tensor::from_vector<double>({0.1, 0.2}));
  adam.update();
  Serializer w = Serializer::writer();
  adam.serialize(w);
  optimizers::MomentumSGD momentum;
  momentum.setup(std::make_shared<Param>(std::vector<double>{1.0, -0.5}));
  Serializer r = Serializer::reader(w.entries());
  CHECK_THROWS_WITH(momentum.serialize(r), Catch::Contains("optimizer state 'w/m' is not one this optimizer keeps (it keeps v)") &&
                                               Catch::Contains("another optimizer"));
  // Adam with amsgrad keeps vhat, which plain Adam does not.
  optimizers::Adam ams(0.001, 0.9, 0.999, 1e-8, 1.0, 0.0, /*amsgrad=*/true);
  auto lc = std::make_shared<Param>(std::vector<double>{1.0, -0.5});
  ams.setup(lc);
  lc->param("w").set_grad(Tensor::from_vector<double>({0.1, 0.2}));
  ams.update();
  Serializer w2 = Serializer::writer();
  ams.serialize(w2);
  optimizers::Adam plain;
  plain.setup(std::make_shared<Param>(std::vector<double>{1.0, -0.5}));
  Serializer r2 = Serializer::reader(w2.entries());
  CHECK_THROWS_WITH(plain.serialize(r2), Catch::Contains("'w/vhat' is not one this optimizer keeps (it keeps m, v)"));
  // Not strict: what it keeps is loaded, the rest ignored.
  Serializer lenient = Serializer::reader(w2.entries(), "", /*strict=*/false);
  CHECK_NOTHROW(plain.serialize(lenient));
}

namespace {
// The rules after SGD, MomentumSGD and Adam, checked element by element against Chainer 7.8.1's
// update_core_cpu written out here in double arithmetic: one step of element P with gradient G
// and state S (by Chainer's state names), the parameter's T-th step.
using ElementState = std::map<std::string, double>;
using ReferenceStep = std::function<void(double& p, double g, ElementState& s, int t)>;

struct RuleCase {
  std::string label;
  std::function<std::unique_ptr<Optimizer>()> make;
  ElementState initial;  // Chainer's init_state: every state name and its starting value
  ReferenceStep step;
};

std::vector<RuleCase> rule_cases() {
  std::vector<RuleCase> cases;
  cases.push_back({"AdaGrad(lr 0.1)", [] { return std::make_unique<optimizers::AdaGrad>(0.1, 1e-8); }, {{"h", 0}},
                   [](double& p, double g, ElementState& s, int) {
                     s["h"] += g * g;
                     p -= 0.1 * g / (std::sqrt(s["h"]) + 1e-8);
                   }});
  for (bool inside : {false, true}) {
    const double eps = inside ? 1e-2 : 1e-8;  // inside the root, large enough to show
    cases.push_back({inside ? "RMSprop(eps_inside_sqrt)" : "RMSprop",
                     [=] { return std::make_unique<optimizers::RMSprop>(0.01, 0.9, eps, inside); }, {{"ms", 0}},
                     [=](double& p, double g, ElementState& s, int) {
                       double& ms = s["ms"];
                       ms *= 0.9;
                       ms += (1 - 0.9) * g * g;
                       const double denom = inside ? std::sqrt(ms + eps) : std::sqrt(ms) + eps;
                       p -= 0.01 * g / denom;
                     }});
  }
  cases.push_back({"AdaDelta(rho 0.9)", [] { return std::make_unique<optimizers::AdaDelta>(0.9, 1e-3); },
                   {{"msg", 0}, {"msdx", 0}}, [](double& p, double g, ElementState& s, int) {
                     double &msg = s["msg"], &msdx = s["msdx"];
                     msg *= 0.9;
                     msg += (1 - 0.9) * g * g;
                     const double dx = std::sqrt((msdx + 1e-3) / (msg + 1e-3)) * g;
                     msdx *= 0.9;
                     msdx += (1 - 0.9) * dx * dx;
                     p -= dx;
                   }});
  cases.push_back({"NesterovAG(lr 0.1, momentum 0.8)", [] { return std::make_unique<optimizers::NesterovAG>(0.1, 0.8); },
                   {{"v", 0}}, [](double& p, double g, ElementState& s, int) {
                     double& v = s["v"];
                     v *= 0.8;
                     v -= 0.1 * g;
                     p += 0.8 * 0.8 * v;
                     p -= (1 + 0.8) * 0.1 * g;
                   }});
  cases.push_back({"RMSpropGraves(lr 0.01, alpha 0.9, momentum 0.8)",
                   [] { return std::make_unique<optimizers::RMSpropGraves>(0.01, 0.9, 0.8, 1e-4); },
                   {{"n", 0}, {"g", 0}, {"delta", 0}}, [](double& p, double g, ElementState& s, int) {
                     double &n = s["n"], &gm = s["g"], &delta = s["delta"];
                     n *= 0.9;
                     n += (1 - 0.9) * g * g;
                     gm *= 0.9;
                     gm += (1 - 0.9) * g;
                     delta *= 0.8;
                     delta -= 0.01 * g / std::sqrt(n - gm * gm + 1e-4);
                     p += delta;
                   }});
  // lr 0.3: min(x, lr) takes x for some elements and steps, lr for others; the default's lr
  // (0.001) is below every x here.
  for (double lr : {0.3, 0.001}) {
    cases.push_back({"SMORMS3(lr " + std::to_string(lr) + ")", [=] { return std::make_unique<optimizers::SMORMS3>(lr); },
                     {{"mem", 1}, {"g", 0}, {"g2", 0}}, [=](double& p, double g, ElementState& s, int) {
                       double &mem = s["mem"], &gm = s["g"], &g2 = s["g2"];
                       const double r = 1 / (mem + 1);
                       gm = (1 - r) * gm + r * g;
                       g2 = (1 - r) * g2 + r * g * g;
                       const double x = gm * gm / (g2 + 1e-16);
                       p -= g * std::min(x, lr) / (std::sqrt(g2) + 1e-16);
                       mem = 1 + mem * (1 - x);
                     }});
  }
  // beta2 0.5: v falls below its earlier maximum at the third step of the last element, so the
  // step uses vhat, not v; eta and weight decay on.
  cases.push_back({"Adam(amsgrad, beta2 0.5, eta 0.5, weight_decay_rate 0.01)",
                   [] { return std::make_unique<optimizers::Adam>(0.01, 0.9, 0.5, 1e-8, 0.5, 0.01, true); },
                   {{"m", 0}, {"v", 0}, {"vhat", 0}}, [](double& p, double g, ElementState& s, int t) {
                     double &m = s["m"], &v = s["v"], &vhat = s["vhat"];
                     m += (1 - 0.9) * (g - m);
                     v += (1 - 0.5) * (g * g - v);
                     vhat = std::max(vhat, v);
                     const double alpha_t = 0.01 * std::sqrt(1 - std::pow(0.5, t)) / (1 - std::pow(0.9, t));
                     const double step = alpha_t / (std::sqrt(vhat) + 1e-8);
                     p = (1 - 0.5 * 0.01) * p - 0.5 * step * m;
                   }});
  return cases;
}

// Five elements: one whose gradient is always 0, one whose gradient shrinks at the third step.
const std::vector<double> kStart = {1.0, -0.5, 0.25, 2.0, -3.0};
const std::vector<std::vector<double>> kGrads5 = {
    {0.1, -0.2, 0.0, 0.5, -1.5}, {0.3, 0.1, 0.0, -0.5, 2.0}, {-0.2, 0.05, 0.0, 0.25, -0.5}};

struct Vec : Link {
  Vec(const std::vector<double>& v, DType dtype) { add_param("w", Tensor::from_vector(v).astype(dtype)); }
};

void set_grad(Link& link, const std::vector<double>& g) {
  link.param("w").set_grad(Tensor::from_vector(g).astype(link.param("w").dtype()));
}

// The reference's parameter and state after STEPS steps of C.
std::pair<std::vector<double>, std::vector<ElementState>> reference(const RuleCase& c, size_t steps) {
  std::vector<double> p = kStart;
  std::vector<ElementState> s(p.size(), c.initial);
  for (size_t t = 0; t < steps; ++t)
    for (size_t i = 0; i < p.size(); ++i) c.step(p[i], kGrads5[t][i], s[i], int(t) + 1);
  return {p, s};
}
}  // namespace

TEST_CASE("optimizers: AdaGrad, RMSprop, AdaDelta, NesterovAG, RMSpropGraves, SMORMS3 and AMSGrad step as Chainer's rules") {
  for (const RuleCase& c : rule_cases()) {
    for (DType dtype : {DType::Float64, DType::Float32}) {
      INFO(c.label << ", " << dtype_name(dtype));
      // float64 runs the same arithmetic as the reference; float32 is off by its roundoff.
      const double tol = dtype == DType::Float64 ? 1e-13 : 2e-6;
      auto opt = c.make();
      auto link = std::make_shared<Vec>(kStart, dtype);
      opt->setup(link);
      for (size_t t = 0; t < kGrads5.size(); ++t) {
        set_grad(*link, kGrads5[t]);
        opt->update();
      }
      REQUIRE(opt->t() == 3);
      const auto [want_p, want_s] = reference(c, kGrads5.size());
      const auto got_p = link->param("w").data().to_vector<double>();
      for (size_t i = 0; i < kStart.size(); ++i) {
        INFO("element " << i);
        CHECK(got_p[i] == Approx(want_p[i]).epsilon(tol).margin(tol));
        CHECK((got_p[i] != kStart[i] || kGrads5[0][i] == 0.0));  // every element with a gradient moved
      }
      // Chainer's state names, nothing else, each of the parameter's shape and dtype.
      const TensorMap& state = opt->state("/w");
      std::vector<std::string> names, want_names;
      for (const auto& [key, t] : state) names.push_back(key);
      for (const auto& [key, v] : c.initial) want_names.push_back(key);
      REQUIRE(names == want_names);
      for (const auto& [key, t] : state) {
        INFO("state " << key);
        REQUIRE(t.shape() == Shape{5});
        REQUIRE(t.dtype() == dtype);
        const auto got = t.to_vector<double>();
        for (size_t i = 0; i < kStart.size(); ++i) CHECK(got[i] == Approx(want_s[i].at(key)).epsilon(tol).margin(tol));
      }
    }
  }
  // The cases reach what they are there for.
  const auto cases = rule_cases();
  for (const RuleCase& c : cases) {
    const auto [p, s] = reference(c, 3);
    if (c.label.rfind("Adam", 0) == 0) CHECK(s[4].at("vhat") > s[4].at("v"));
    if (c.label.rfind("SMORMS3(lr 0.3", 0) == 0) {
      // Some element takes x, another lr, at some step.
      bool took_x = false, took_lr = false;
      std::vector<ElementState> st(5, c.initial);
      for (int t = 0; t < 3; ++t)
        for (size_t i = 0; i < 5; ++i) {
          if (kGrads5[size_t(t)][i] == 0) continue;
          ElementState before = st[i];
          double q = 0;
          c.step(q, kGrads5[size_t(t)][i], st[i], t + 1);
          const double r = 1 / (before["mem"] + 1), gm = (1 - r) * before["g"] + r * kGrads5[size_t(t)][i],
                       g2 = (1 - r) * before["g2"] + r * kGrads5[size_t(t)][i] * kGrads5[size_t(t)][i];
          (gm * gm / g2 < 0.3 ? took_x : took_lr) = true;
        }
      CHECK(took_x);
      CHECK(took_lr);
    }
  }
}

TEST_CASE("optimizers: the other rules' state is saved under Chainer's names and a resumed run steps exactly the same") {
  for (const RuleCase& c : rule_cases()) {
    for (DType dtype : {DType::Float64, DType::Float32}) {
      INFO(c.label << ", " << dtype_name(dtype));
      auto opt = c.make();
      auto link = std::make_shared<Vec>(kStart, dtype);
      opt->setup(link);
      for (size_t t = 0; t < 2; ++t) {
        set_grad(*link, kGrads5[t]);
        opt->update();
      }
      Serializer w = Serializer::writer();
      opt->serialize(w);
      std::vector<std::string> keys, want = {"epoch", "t", "w/t"};
      for (const auto& [key, v] : c.initial) want.push_back("w/" + key);
      for (const auto& [key, t] : w.entries()) keys.push_back(key);
      std::sort(want.begin(), want.end());
      REQUIRE(keys == want);

      auto resumed = c.make();
      auto copy = std::make_shared<Vec>(kStart, dtype);
      copy->param("w").data().copy_(link->param("w").data());
      resumed->setup(copy);
      Serializer r = Serializer::reader(w.entries());
      resumed->serialize(r);
      REQUIRE(resumed->t() == 2);
      for (auto* l : {link.get(), copy.get()}) set_grad(*l, kGrads5[2]);
      opt->update();
      resumed->update();
      CHECK(link->param("w").data().to_vector<double>() == copy->param("w").data().to_vector<double>());
      for (const auto& [key, v] : c.initial)
        CHECK(opt->state("/w").at(key).to_vector<double>() == resumed->state("/w").at(key).to_vector<double>());
    }
  }
}

TEST_CASE("optimizers: the other rules' defaults are Chainer's") {
  const optimizers::AdaGrad ada_grad;
  CHECK(ada_grad.lr == 0.001);
  CHECK(ada_grad.eps == 1e-8);
  const optimizers::RMSprop rmsprop;
  CHECK(rmsprop.lr == 0.01);
  CHECK(rmsprop.alpha == 0.99);
  CHECK(rmsprop.eps == 1e-8);
  CHECK_FALSE(rmsprop.eps_inside_sqrt);
  const optimizers::AdaDelta ada_delta;
  CHECK(ada_delta.rho == 0.95);
  CHECK(ada_delta.eps == 1e-6);
  const optimizers::NesterovAG nesterov;
  CHECK(nesterov.lr == 0.01);
  CHECK(nesterov.momentum == 0.9);
  const optimizers::RMSpropGraves graves;
  CHECK(graves.lr == 1e-4);
  CHECK(graves.alpha == 0.95);
  CHECK(graves.momentum == 0.9);
  CHECK(graves.eps == 1e-4);
  const optimizers::SMORMS3 smorms3;
  CHECK(smorms3.lr == 0.001);
  CHECK(smorms3.eps == 1e-16);
  const optimizers::Adam adam;
  CHECK_FALSE(adam.amsgrad);
  CHECK(adam.alpha == 0.001);
  CHECK(adam.weight_decay_rate == 0.0);
  // Adam without amsgrad keeps two states; with it, a third, "vhat".
  auto link = std::make_shared<Vec>(kStart, DType::Float64);
  optimizers::Adam plain, ams(0.001, 0.9, 0.999, 1e-8, 1.0, 0.0, true);
  for (Optimizer* o : {static_cast<Optimizer*>(&plain), static_cast<Optimizer*>(&ams)}) {
    o->setup(link);
    set_grad(*link, kGrads5[0]);
    o->update();
  }
  CHECK(plain.state("/w").size() == 2);
  CHECK(ams.state("/w").count("vhat") == 1);
}

TEST_CASE("optimizers: the other rules refuse hyperparameters that cannot work, naming the optimizer and the value") {
  using Catch::Contains;
  CHECK_THROWS_WITH(optimizers::AdaGrad(-0.1), Contains("AdaGrad: lr must be > 0, got -0.1"));
  CHECK_THROWS_WITH(optimizers::AdaGrad(0.1, 0.0), Contains("AdaGrad: eps must be > 0, got 0"));
  CHECK_THROWS_WITH(optimizers::RMSprop(0.0), Contains("RMSprop: lr must be > 0, got 0"));
  CHECK_THROWS_WITH(optimizers::RMSprop(0.01, 1.0), Contains("RMSprop: alpha must be in [0, 1), got 1"));
  CHECK_THROWS_WITH(optimizers::RMSprop(0.01, 0.99, -1e-8), Contains("RMSprop: eps must be > 0, got -1e-08"));
  CHECK_THROWS_WITH(optimizers::AdaDelta(-0.5), Contains("AdaDelta: rho must be in [0, 1), got -0.5"));
  CHECK_THROWS_WITH(optimizers::AdaDelta(0.95, 0.0), Contains("AdaDelta: eps must be > 0, got 0"));
  CHECK_THROWS_WITH(optimizers::NesterovAG(-1), Contains("NesterovAG: lr must be > 0, got -1"));
  CHECK_THROWS_WITH(optimizers::NesterovAG(0.01, 1.5), Contains("NesterovAG: momentum must be in [0, 1), got 1.5"));
  CHECK_THROWS_WITH(optimizers::RMSpropGraves(0), Contains("RMSpropGraves: lr must be > 0, got 0"));
  CHECK_THROWS_WITH(optimizers::RMSpropGraves(1e-4, 1.0), Contains("RMSpropGraves: alpha must be in [0, 1), got 1"));
  CHECK_THROWS_WITH(optimizers::RMSpropGraves(1e-4, 0.95, -0.1),
                    Contains("RMSpropGraves: momentum must be in [0, 1), got -0.1"));
  CHECK_THROWS_WITH(optimizers::RMSpropGraves(1e-4, 0.95, 0.9, 0.0), Contains("RMSpropGraves: eps must be > 0, got 0"));
  CHECK_THROWS_WITH(optimizers::SMORMS3(-0.001), Contains("SMORMS3: lr must be > 0, got -0.001"));
  CHECK_THROWS_WITH(optimizers::SMORMS3(0.001, 0.0), Contains("SMORMS3: eps must be > 0, got 0"));
  CHECK_THROWS_WITH(optimizers::RMSprop(NAN), Contains("RMSprop: lr must be > 0, got nan"));

  // As Chainer's RMSprop and Adam: an eps that float32 rounds to 0 is refused at the update of a
  // float32 parameter, and accepted for float64.
  for (DType dtype : {DType::Float32, DType::Float64}) {
    auto link = std::make_shared<Vec>(kStart, dtype);
    optimizers::RMSprop rmsprop(0.01, 0.99, 1e-50);
    optimizers::Adam adam(0.001, 0.9, 0.999, 1e-50);
    for (Optimizer* o : {static_cast<Optimizer*>(&rmsprop), static_cast<Optimizer*>(&adam)}) {
      o->setup(link);
      set_grad(*link, kGrads5[0]);
    }
    if (dtype == DType::Float32) {
      CHECK_THROWS_WITH(rmsprop.update(), Contains("RMSprop: eps 1e-50 is too small for float32") && Contains("/w"));
      CHECK_THROWS_WITH(adam.update(), Contains("Adam: eps 1e-50 is too small for float32"));
    } else {
      CHECK_NOTHROW(rmsprop.update());
      CHECK_NOTHROW(adam.update());
      CHECK(std::isfinite(link->param("w").data().to_vector<double>()[0]));
    }
  }
}

TEST_CASE("optimizers: the other rules converge on a least-squares problem") {
  double initial;
  {
    optimizers::SGD probe(1e-12);
    initial = fit(probe, 1);
  }
  optimizers::AdaGrad ada_grad(0.5);
  optimizers::RMSprop rmsprop(0.01);
  optimizers::AdaDelta ada_delta;
  optimizers::NesterovAG nesterov(0.05);
  optimizers::RMSpropGraves graves(0.01);
  optimizers::SMORMS3 smorms3(0.05);
  optimizers::Adam ams(0.05, 0.9, 0.999, 1e-8, 1.0, 0.0, true);
  CHECK(fit(ada_grad, 300) < 1e-3 * initial);
  CHECK(fit(rmsprop, 300) < 1e-3 * initial);
  CHECK(fit(ada_delta, 300) < 0.5 * initial);  // no learning rate: ADADELTA starts slowly
  CHECK(fit(nesterov, 300) < 1e-4 * initial);
  CHECK(fit(graves, 300) < 1e-3 * initial);
  CHECK(fit(smorms3, 300) < 1e-3 * initial);
  CHECK(fit(ams, 300) < 1e-3 * initial);
}

TEST_CASE("optimizers: update_ requires every state tensor of the rule, naming the rule") {
  Tensor p = Tensor::zeros({3}), g = Tensor::ones({3}), s = Tensor::ones({3});
  std::vector<ParamTensors> two_states{{p, g, s.clone(), s.clone(), Tensor()}};
  const UpdateScalarsFn scalars = [](size_t) { return UpdateScalars{.lr = 0.1, .eps = 1e-8}; };
  CHECK_THROWS_WITH(ops::update_(UpdateRule::SMORMS3, two_states, scalars),
                    Catch::Contains("smorms3: state of shape undefined does not match the parameter of shape (3,)"));
  CHECK_NOTHROW(ops::update_(UpdateRule::AdaDelta, two_states, scalars));
  CHECK(update_rule_states(UpdateRule::AMSGrad) == 3);
  CHECK(update_rule_states(UpdateRule::NesterovAG) == 1);
}

namespace {
// Fills this thread's recent stack with VALUE: what a function that captured a returned frame's
// locals by reference would then read.
[[gnu::noinline]] double scribble(double value) {
  volatile double frame[256];
  for (auto& x : frame) x = value;
  double sum = 0;
  for (const auto& x : frame) sum += x;
  return sum;
}
}  // namespace

TEST_CASE("optimizers: the scalar functions of adam_update_ and momentum_sgd_update_ own their values") {
  // A step captured into a CUDA graph keeps its scalars function and calls it before every
  // replay, long after adam_update_ returned: it must not read the caller's (freed) values.
  auto step = std::make_unique<ops::AdamStep>(ops::AdamStep{0.01, 0.9, 0.999, 1e-8, 0.5, 1e-4});
  const UpdateScalarsFn adam = ops::adam_scalars(*step);
  step.reset();
  auto reuse = std::make_unique<ops::AdamStep>(ops::AdamStep{7, 7, 7, 7, 7, 7});  // likely the freed memory
  const UpdateScalarsFn momentum = [] { return ops::momentum_sgd_scalars(0.25, 0.75); }();
  scribble(-1.0);
  const UpdateScalars a = adam(0), m = momentum(0);
  CHECK(a.lr == 0.01);
  CHECK(a.beta1 == 0.9);
  CHECK(a.beta2 == 0.999);
  CHECK(a.eps == 1e-8);
  CHECK(a.eta == 0.5);
  CHECK(a.weight_decay_rate == 1e-4);
  CHECK(m.lr == 0.25);
  CHECK(m.momentum == 0.75);
  CHECK(reuse->lr == 7);
}

namespace {
// One Linear applied twice: registered under two names ("a", "b") when TIED, once otherwise.
struct Twice : Chain {
  std::shared_ptr<links::Linear> lin;
  Twice(links::Linear& start, bool tied) {
    lin = std::make_shared<links::Linear>(start.in_size(), 3);
    lin->param("W").data().copy_(start.W().data());
    lin->param("b").data().copy_(start.param("b").data());
    add_link("a", lin);
    if (tied) add_link("b", lin);
  }
  Variable forward(const Variable& x) override { return (*lin)(F::tanh((*lin)(x))); }
};
}  // namespace

TEST_CASE("optimizers: a parameter tied under two names is stepped once per update, as the untied model") {
  random::seed(5);
  links::Linear start(3, 3);
  const Tensor x = random::normal({4, 3}, 0, 1, DType::Float32);
  for (const std::string kind : {"momentum_sgd", "adam", "sgd"}) {
    INFO(kind);
    auto make = [&]() -> std::shared_ptr<Optimizer> {
      if (kind == "momentum_sgd") return std::make_shared<optimizers::MomentumSGD>(0.1, 0.9);
      if (kind == "adam") return std::make_shared<optimizers::Adam>(0.01);
      return std::make_shared<optimizers::SGD>(0.1);
    };
    auto tied = std::make_shared<Twice>(start, true), plain = std::make_shared<Twice>(start, false);
    REQUIRE(tied->namedparams().size() == 4);
    REQUIRE(plain->namedparams().size() == 2);
    auto tied_opt = make(), plain_opt = make();
    tied_opt->setup(tied);
    plain_opt->setup(plain);
    tied_opt->add_hook(std::make_shared<optimizer_hooks::GradientClipping>(0.5));  // the norm counts each gradient once
    plain_opt->add_hook(std::make_shared<optimizer_hooks::GradientClipping>(0.5));
    for (int step = 0; step < 3; ++step) {
      tied_opt->update([&] { return F::sum((*tied)(Variable(x))); });
      plain_opt->update([&] { return F::sum((*plain)(Variable(x))); });
      CHECK(tied->lin->W().data().to_vector<float>() == plain->lin->W().data().to_vector<float>());
      CHECK(tied->lin->param("b").data().to_vector<float>() == plain->lin->param("b").data().to_vector<float>());
    }
    // The state lives under the parameter's first name only, and survives a snapshot.
    if (kind != "sgd") {
      CHECK_FALSE(tied_opt->state("/a/W").empty());
      CHECK(tied_opt->state("/b/W").empty());
    }
    Serializer saved = Serializer::writer();
    tied_opt->serialize(saved);
    auto again = make();
    auto copy = std::make_shared<Twice>(start, true);
    again->setup(copy);
    Serializer reader = Serializer::reader(saved.entries());
    again->serialize(reader);
    CHECK(again->t() == 3);
    for (const auto& [key, t] : tied_opt->state("/a/W"))
      CHECK(again->state("/a/W").at(key).to_vector<float>() == t.to_vector<float>());
  }
}

TEST_CASE("optimizers: update(lossfun) keeps the graph, so a GAN's generator loss goes back through the "
          "discriminator's graph after the discriminator's update, with its updated parameters, as Chainer") {
  // gen: x = z Wg^T, dis: y = x Wd^T, z = 1: x = (a, b), y = c a + d b.
  auto gen = std::make_shared<links::Linear>(1, 2, true, Tensor::from_vector(std::vector<float>{1, 2}).reshape({2, 1}));
  auto dis = std::make_shared<links::Linear>(2, 1, true, Tensor::from_vector(std::vector<float>{3, 4}).reshape({1, 2}));
  optimizers::SGD gen_opt(0.1), dis_opt(0.1);
  gen_opt.setup(gen);
  dis_opt.setup(dis);
  const Variable y_fake = (*dis)((*gen)(Variable(Tensor::ones({1, 1}))));
  // The discriminator's loss sum(y): dWd = x = (1, 2), so Wd becomes (2.9, 3.8); its backward
  // also leaves dWg = Wd = (3, 4) in the generator, which the generator's update clears.
  dis_opt.update([&] { return F::sum(y_fake); });
  CHECK_THAT(dis->W().data().to_vector<double>(), Catch::Matchers::Approx(std::vector<double>{2.9, 3.8}));
  CHECK(gen->W().grad().to_vector<double>() == std::vector<double>{3, 4});
  SECTION("kept: the generator's gradient is -Wd with Wd as the discriminator's update left it") {
    gen_opt.update([&] { return F::sum(-y_fake); });
    CHECK_THAT(gen->W().grad().to_vector<double>(), Catch::Matchers::Approx(std::vector<double>{-2.9, -3.8}));
    CHECK_THAT(gen->W().data().to_vector<double>(), Catch::Matchers::Approx(std::vector<double>{1.29, 2.38}));
  }
  SECTION("freed by retain_graph = false: the second backward is refused") {
    auto fresh = Variable((*dis)((*gen)(Variable(Tensor::ones({1, 1})))));
    dis_opt.update([&] { return F::sum(fresh); }, false);
    REQUIRE_THROWS_WITH(gen_opt.update([&] { return F::sum(-fresh); }), Catch::Contains("already been freed"));
  }
}

TEST_CASE("optimizers: backpropagating_target names the link whose update(lossfun) is backpropagating") {
  auto gen = std::make_shared<links::Linear>(1, 2, true);
  auto dis = std::make_shared<links::Linear>(2, 1, true);
  optimizers::SGD gen_opt, dis_opt;
  gen_opt.setup(gen);
  dis_opt.setup(dis);
  std::vector<const Link*> seen;  // at each hook of the generator's W
  gen->W().node()->grad_hooks.push_back([&](VariableNode&) { seen.push_back(Optimizer::backpropagating_target()); });
  const Variable y = (*dis)((*gen)(Variable(Tensor::ones({1, 1}))));
  dis_opt.update([&] { return F::sum(y); });
  gen_opt.update([&] { return F::sum(-y); });
  F::sum((*dis)((*gen)(Variable(Tensor::ones({1, 1}))))).backward();  // a backward of the user's own
  CHECK(seen == std::vector<const Link*>{dis.get(), gen.get(), nullptr});
  CHECK(Optimizer::backpropagating_target() == nullptr);
}
