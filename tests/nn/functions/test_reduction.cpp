// Tests of the reductions (nn/functions/reduction.h): sum, mean, average, max, min, argmax, argmin
// and logsumexp over no, one and several axes (negative ones too), keepdims, against finite
// differences in float64 and plain loops; ties; the errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <optional>
#include <string>

#include "autograd/function_node.h"
#include "core/ops/ops.h"
#include "core/util/parallel.h"
#include "core/util/random.h"
#include "nn/functions.h"
#include "tests/function_inputs.h"
#include "tests/nn/functions/math_checks.h"
#include "tests/nn/functions/random_shapes.h"

namespace F = chainer::functions;
using namespace chainer;
using namespace chainer::testing;
using Vars = std::vector<Variable>;

TEST_CASE("sum, mean, average: gradients over axes", "[functions][reduction]") {
  for (bool keep : {false, true}) {
    for (std::optional<int64_t> axis : {std::optional<int64_t>{}, std::optional<int64_t>{0}, std::optional<int64_t>{1},
                                        std::optional<int64_t>{-1}}) {
      INFO("keepdims " << keep << " axis " << (axis ? std::to_string(*axis) : "none"));
      check([=](const Vars& v) { return F::sum(v[0], axis, keep); }, {uniform({2, 3, 4}, 1)});
      check([=](const Vars& v) { return F::mean(v[0], axis, keep); }, {uniform({3, 2}, 2)});
      check([=](const Vars& v) { return F::average(v[0], axis, Variable(), keep); }, {uniform({3, 2}, 3)});
    }
  }
  // Weighted averages: both x and the weights are differentiable.
  check([](const Vars& v) { return F::average(v[0], 1, v[1]); }, {uniform({2, 3}, 4), uniform({3}, 5, 0.5, 2)});
  check([](const Vars& v) { return F::average(v[0], -3, v[1], true); },
        {uniform({2, 3, 2}, 6), uniform({2}, 7, 0.5, 2)});
  check([](const Vars& v) { return F::average(v[0], std::nullopt, v[1]); },
        {uniform({2, 3}, 8), uniform({2, 3}, 9, 0.5, 2)});
  // Random shapes (rank 1 to 3), axes (none, or negative too) and keepdims; weighted averages
  // along a random axis and over all elements.
  Generator gen(10);
  for (int trial = 0; trial < 5; ++trial) {
    const Shape s = random_shape(gen, 1, 3);
    const int64_t nd = int64_t(s.size());
    const std::optional<int64_t> axis =
        gen.below(4) == 0 ? std::nullopt : std::optional<int64_t>(random_axis(gen, nd));
    const bool keep = gen.below(2) == 1;
    const int64_t wax = random_axis(gen, nd);
    INFO("trial " << trial << " shape " << shape_str(s) << " axis " << (axis ? std::to_string(*axis) : "none")
                  << " keepdims " << keep << " weighted axis " << wax);
    check([=](const Vars& v) { return F::sum(v[0], axis, keep); }, {uniform(s, 20 + trial)});
    check([=](const Vars& v) { return F::mean(v[0], axis, keep); }, {uniform(s, 30 + trial)});
    check([=](const Vars& v) { return F::average(v[0], axis, Variable(), keep); }, {uniform(s, 40 + trial)});
    const Shape ws{s[size_t(wax < 0 ? wax + nd : wax)]};
    check([=](const Vars& v) { return F::average(v[0], wax, v[1], keep); },
          {uniform(s, 50 + trial), uniform(ws, 60 + trial, 0.5, 2)});
    check([=](const Vars& v) { return F::average(v[0], std::nullopt, v[1], keep); },
          {uniform(s, 70 + trial), uniform(s, 80 + trial, 0.5, 2)});
  }
}

TEST_CASE("sum, mean, average: forward values and shapes", "[functions][reduction]") {
  Variable x(Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3}));
  CHECK(F::sum(x).item() == 21);
  CHECK(F::sum(x).shape() == Shape{});
  CHECK(values(F::sum(x, 0)) == std::vector<double>{5, 7, 9});
  CHECK(F::sum(x, -1, true).shape() == Shape{2, 1});
  CHECK(values(F::mean(x, 1)) == std::vector<double>{2, 5});
  CHECK(F::mean(x).item() == Approx(3.5));
  Variable w(Tensor::from_vector<double>({1, 0, 1}));
  CHECK(values(F::average(x, 1, w)) == std::vector<double>{2, 5});
  REQUIRE_THROWS_WITH(F::average(x, 0, w), Catch::Contains("average: weights have shape (3,) but x has shape (2, 3)"));
  REQUIRE_THROWS_WITH(F::sum(x, 2), Catch::Contains("sum: axis 2 is out of range"));
  REQUIRE_THROWS_WITH(F::mean(x, -3), Catch::Contains("mean: axis -3 is out of range for an array of 2 dimensions"));
}

TEST_CASE("max, min: gradients over no, one and several axes, keepdims", "[functions][reduction]") {
  const std::vector<F::Axes> axes_list = {F::Axes(), F::Axes(0), F::Axes(-1), F::Axes({0, 2}), F::Axes({-1, 1}),
                                       F::Axes({2, 0, 1}), F::Axes(std::vector<int64_t>{})};
  uint64_t seed = 70;
  for (const F::Axes& axes : axes_list)
    for (bool keep : {false, true}) {
      INFO("axis " << axes.str() << " keepdims " << keep);
      check([=](const Vars& v) { return F::max(v[0], axes, keep); }, {spaced({2, 3, 5}, ++seed)});
      check([=](const Vars& v) { return F::min(v[0], axes, keep); }, {spaced({3, 1, 4}, ++seed)});
    }
  // Random shapes (rank 0 to 4) and random sets of axes, negative ones included.
  Generator gen(71);
  for (int trial = 0; trial < 8; ++trial) {
    Shape s(gen.below(5));
    for (int64_t& d : s) d = 1 + int64_t(gen.below(4));
    const int64_t nd = int64_t(s.size());
    F::Axes axes;
    if (gen.below(4) != 0) {
      std::vector<int64_t> list;
      for (int64_t d = 0; d < nd; ++d)
        if (gen.below(2)) list.push_back(gen.below(2) ? d : d - nd);
      axes = list;
    }
    const bool keep = gen.below(2) == 1;
    INFO("trial " << trial << " shape " << shape_str(s) << " axis " << axes.str() << " keepdims " << keep);
    check([=](const Vars& v) { return F::max(v[0], axes, keep); }, {spaced(s, 80 + uint64_t(trial))});
    check([=](const Vars& v) { return F::min(v[0], axes, keep); }, {spaced(s, 90 + uint64_t(trial))});
  }
}

TEST_CASE("max, min: values, shapes, every tie gets the whole gradient", "[functions][reduction]") {
  const Variable x(f64({1, 3, 3, 2, 2, 0}, {2, 3}));
  CHECK(F::max(x).item() == 3);
  CHECK(F::max(x).shape() == Shape{});
  CHECK(values(F::max(x, 1)) == std::vector<double>{3, 2});
  CHECK(values(F::max(x, -2)) == std::vector<double>{2, 3, 3});
  CHECK(F::max(x, 1, true).shape() == Shape{2, 1});
  CHECK(F::max(x, std::nullopt, true).shape() == Shape{1, 1});
  CHECK(values(F::min(x, {0, 1})) == std::vector<double>{0});
  CHECK(values(F::min(x, 0)) == std::vector<double>{1, 2, 0});
  CHECK(values(F::max(x, std::vector<int64_t>{})) == values(x));  // axis=(): nothing reduced
  CHECK(F::max(Variable(Tensor::full({}, 4.5, DType::Float64))).item() == 4.5);

  // Chainer's SelectorBase: gy * (x == y), so tied maxima each receive all of gy.
  const Tensor w = f64({1, 10}, {2});
  CHECK(grad_of([](const Variable& v) { return F::max(v, 1); }, x.data(), w) ==
        std::vector<double>{0, 1, 1, 10, 10, 0});
  CHECK(grad_of([](const Variable& v) { return F::max(v); }, x.data(), f64({1}, {})) ==
        std::vector<double>{0, 1, 1, 0, 0, 0});
  CHECK(grad_of([](const Variable& v) { return F::min(v, 1, true); }, f64({1, 1, 3, 0, 2, 0}, {2, 3}),
                f64({1, 10}, {2, 1})) == std::vector<double>{1, 1, 0, 10, 0, 10});
  Variable xv(x.data(), true);
  CHECK(F::max(xv, 1).creator()->name() == "Max");
  CHECK(F::min(xv, {0, 1}).creator()->name() == "Min");
}

TEST_CASE("sum and mean over several axes", "[functions][reduction]") {
  const Tensor x = uniform({2, 3, 4}, 100);
  const std::vector<double> v = values(x);
  std::vector<double> want(3, 0.0);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 4; ++k) want[size_t(j)] += v[size_t((i * 3 + j) * 4 + k)];
  CHECK_THAT(values(F::sum(Variable(x), {0, 2})), near(want));
  CHECK_THAT(values(F::mean(Variable(x), {-1, 0})), near({want[0] / 8, want[1] / 8, want[2] / 8}));
  CHECK(F::sum(Variable(x), {0, 2}, true).shape() == Shape{1, 3, 1});
  CHECK(values(F::sum(Variable(x), std::vector<int64_t>{})) == v);  // axis=(): nothing summed
  for (bool keep : {false, true}) {
    check([=](const Vars& vs) { return F::sum(vs[0], {0, 2}, keep); }, {uniform({2, 3, 4}, 101)});
    check([=](const Vars& vs) { return F::mean(vs[0], {-1, 1}, keep); }, {uniform({3, 1, 5}, 102)});
    check([=](const Vars& vs) { return F::sum(vs[0], std::vector<int64_t>{}, keep); }, {uniform({2, 3}, 103)});
  }
  REQUIRE_THROWS_WITH(F::sum(Variable(x), {0, -3}), Catch::Contains("sum: axes (0, -3) name axis 0 twice"));
  REQUIRE_THROWS_WITH(F::mean(Variable(x), {1, 3}),
                      Catch::Contains("mean: axis 3 is out of range for an array of 3 dimensions"));
}

TEST_CASE("sum over every set of axes equals a plain loop, at any thread count, float32 bit for bit",
          "[functions][reduction]") {
  // A size-1 axis among them, and shapes large enough that the sums split over threads.
  for (const Shape& shape : {Shape{2, 3, 1, 5}, Shape{6, 64, 7, 9}, Shape{3, 40, 20, 33}}) {
    const Tensor x = uniform(shape, 104);
    const Tensor x32 = x.astype(DType::Float32);
    const std::vector<double> v = values(x);
    for (int mask = 0; mask < 16; ++mask) {
      std::vector<int64_t> axes;
      Shape kept;
      for (int64_t d = 0; d < 4; ++d) (mask >> d & 1 ? axes.push_back(d) : kept.push_back(shape[size_t(d)]));
      if (axes.empty()) continue;  // axis=(): nothing summed (above)
      std::vector<double> want(size_t(shape_numel(kept)), 0.0);
      int64_t flat = 0;
      for (int64_t a = 0; a < shape[0]; ++a)
        for (int64_t b = 0; b < shape[1]; ++b)
          for (int64_t c = 0; c < shape[2]; ++c)
            for (int64_t d = 0; d < shape[3]; ++d, ++flat) {
              const int64_t index[4] = {a, b, c, d};
              int64_t o = 0;
              for (int64_t k = 0; k < 4; ++k)
                if (!(mask >> k & 1)) o = o * shape[size_t(k)] + index[k];
              want[size_t(o)] += v[size_t(flat)];
            }
      INFO("shape " << shape_str(shape) << ", axes mask " << mask);
      const Tensor got = ops::sum(x, axes);
      CHECK(got.shape() == kept);
      CHECK_THAT(values(got), near(want));
      const int saved = num_threads();
      set_num_threads(1);
      const std::vector<double> one = values(ops::sum(x32, axes));
      set_num_threads(2);
      CHECK(values(ops::sum(x32, axes)) == one);
      set_num_threads(saved);
    }
  }
}

TEST_CASE("argmax, argmin: int32 indices, flat without an axis, first on ties, no graph", "[functions][reduction]") {
  Variable x(f64({1, 3, 3, 2, 5, 0}, {2, 3}), true);
  const Variable i = F::argmax(x, 1);
  CHECK(i.dtype() == DType::Int32);
  CHECK(values(i) == std::vector<double>{1, 1});
  CHECK(i.creator() == nullptr);
  CHECK_FALSE(i.requires_grad());
  CHECK(values(F::argmax(x, 0)) == std::vector<double>{1, 1, 0});
  CHECK(values(F::argmax(x, -1)) == std::vector<double>{1, 1});
  CHECK(F::argmax(x).shape() == Shape{});
  CHECK(F::argmax(x).item() == 4);  // in the flattened array
  CHECK(values(F::argmin(x, 1)) == std::vector<double>{0, 2});
  CHECK(F::argmin(x).item() == 5);
  CHECK(F::argmin(Variable(x.data().transpose())).item() == 5);  // flattened in the transposed order
  CHECK(F::argmax(Variable(Tensor::full({}, 2.0, DType::Float64))).item() == 0);

  REQUIRE_THROWS_WITH(F::argmax(x, 2), Catch::Contains("argmax: axis 2 is out of range for an array of 2 dimensions"));
  REQUIRE_THROWS_WITH(F::argmin(Variable(Tensor::zeros({3}, DType::Int32))),
                      Catch::Contains("argmin: dtype int32 is not supported (expected a floating dtype"));
  REQUIRE_THROWS_WITH(F::argmax(Variable(Tensor::zeros({0}))),
                      Catch::Contains("argmax: cannot reduce axis 0 of extent 0 (shape (0,))"));
}

TEST_CASE("logsumexp: gradients over axes, large values, values", "[functions][reduction]") {
  const std::vector<F::Axes> axes_list = {F::Axes(), F::Axes(1), F::Axes(-1), F::Axes({0, 2}), F::Axes({-1, -2})};
  uint64_t seed = 110;
  for (const F::Axes& axes : axes_list) {
    INFO("axis " << axes.str());
    check([=](const Vars& v) { return F::logsumexp(v[0], axes); }, {uniform({2, 3, 5}, ++seed, -2, 2)});
    check([=](const Vars& v) { return F::logsumexp(v[0], axes); }, {uniform({3, 1, 2}, ++seed, -2, 2)});
  }
  check([](const Vars& v) { return F::logsumexp(v[0]); }, {uniform({}, 120)});
  check([](const Vars& v) { return F::logsumexp(v[0], 0); }, {uniform({7}, 121, 50, 60)});  // large values

  const Variable x(f64({0, std::log(3.0), 1000, 1000, -1000, -1000}, {3, 2}));
  CHECK_THAT(values(F::logsumexp(x, 1)), near({std::log(4.0), 1000 + std::log(2.0),
                                                                      -1000 + std::log(2.0)}));
  CHECK(F::logsumexp(x, 1).shape() == Shape{3});
  CHECK(F::logsumexp(x).item() == Approx(1000 + std::log(2.0)));
  const Variable f32(Tensor::from_vector<float>({1000, 999, 1000}));  // no overflow in float32 either
  CHECK(F::logsumexp(f32).item() == Approx(1000 + std::log(2 + std::exp(-1.0))));
  CHECK(F::logsumexp(Variable(x.data(), true), 0).creator()->name() == "LogSumExp");
  REQUIRE_THROWS_WITH(F::logsumexp(x, {1, 1}), Catch::Contains("logsumexp: axes (1, 1) name axis 1 twice"));
  REQUIRE_THROWS_WITH(F::logsumexp(Variable(Tensor::zeros({0, 3})), 0),
                      Catch::Contains("logsumexp: cannot reduce axis 0 of extent 0 (shape (0, 3))"));
}

TEST_CASE("max, min: errors name the op and the values", "[functions][reduction][errors]") {
  const Variable x(Tensor::zeros({2, 3}));
  REQUIRE_THROWS_WITH(F::max(x, 2), Catch::Contains("max: axis 2 is out of range for an array of 2 dimensions"));
  REQUIRE_THROWS_WITH(F::min(x, -3), Catch::Contains("min: axis -3 is out of range for an array of 2 dimensions"));
  REQUIRE_THROWS_WITH(F::max(x, {1, -1}), Catch::Contains("max: axes (1, -1) name axis 1 twice"));
  REQUIRE_THROWS_WITH(F::max(Variable(Tensor::zeros({2}, DType::Int32))),
                      Catch::Contains("max: dtype int32 is not supported (expected a floating dtype"));
  REQUIRE_THROWS_WITH(F::min(Variable(Tensor::zeros({2, 0})), 1),
                      Catch::Contains("min: cannot reduce axis 1 of extent 0 (shape (2, 0))"));
}
