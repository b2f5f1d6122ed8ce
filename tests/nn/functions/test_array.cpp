// Tests of the array functions (nn/functions/array.h): reshape, transpose, concat, stack,
// broadcast_to, expand_dims, squeeze, split_axis and flatten: numpy's values, gradients against
// finite differences over random, odd and size-1 shapes, the errors.
#include <catch2/catch.hpp>

#include <cstdint>
#include <utility>

#include "autograd/function_node.h"
#include "core/util/random.h"
#include "nn/functions.h"
#include "tests/function_inputs.h"
#include "tests/nn/functions/iota.h"
#include "tests/nn/functions/random_shapes.h"

namespace F = chainer::functions;
using namespace chainer;
using namespace chainer::testing;
using Vars = std::vector<Variable>;
using I64 = std::vector<int64_t>;

// ---- reshape, transpose, concat, stack ----

TEST_CASE("reshape, transpose, concat, stack: gradients", "[functions][array]") {
  check([](const Vars& v) { return F::reshape(v[0], {3, -1}); }, {uniform({2, 3, 2}, 1)});
  check([](const Vars& v) { return F::transpose(v[0]); }, {uniform({2, 3, 4}, 2)});
  check([](const Vars& v) { return F::transpose(v[0], {1, 2, 0}); }, {uniform({2, 3, 4}, 3)});
  check([](const Vars& v) { return F::transpose(v[0], {-1, 0, 1}); }, {uniform({2, 3, 4}, 4)});
  for (int64_t axis : {0, 1, -1}) {
    INFO("axis " << axis);
    check([=](const Vars& v) { return F::concat({v[0], v[1], v[2]}, axis); },
          {uniform({2, 3}, 5), uniform({2, 3}, 6), uniform({2, 3}, 7)});
    check([=](const Vars& v) { return F::stack({v[0], v[1]}, axis); }, {uniform({2, 3}, 8), uniform({2, 3}, 9)});
  }
  check([](const Vars& v) { return F::concat({v[0], v[1]}); }, {uniform({2, 1, 2}, 10), uniform({2, 3, 2}, 11)});
  check([](const Vars& v) { return F::stack({v[0], v[1]}, 2); }, {uniform({2, 3}, 12), uniform({2, 3}, 13)});
  check([](const Vars& v) { return F::concat({v[0], v[1]}, 0); }, {uniform({1, 2}, 14), uniform({2, 2}, 15)},
        {.no_grads = {true, false}});

  // Random shapes: reshape to a random shape of the same size, transpose by a random
  // permutation (some axes negative) and by default, concat 2 or 3 arrays of random extents
  // along a random axis, stack 2 or 3 arrays along a random new axis.
  Generator gen(16);
  for (int trial = 0; trial < 5; ++trial) {
    const Shape s = random_shape(gen, 1, 4);
    const int64_t nd = int64_t(s.size());
    const Shape to = random_reshape(gen, s);
    std::vector<int64_t> perm = gen.permutation(nd);
    for (int64_t& a : perm)
      if (gen.below(2)) a -= nd;
    INFO("trial " << trial << " shape " << shape_str(s) << " reshape to " << shape_str(to) << " transpose axes "
                  << shape_str(perm));
    check([=](const Vars& v) { return F::reshape(v[0], to); }, {uniform(s, 20 + trial)});
    check([=](const Vars& v) { return F::transpose(v[0], perm); }, {uniform(s, 30 + trial)});
    check([](const Vars& v) { return F::transpose(v[0]); }, {uniform(s, 40 + trial)});
  }
  for (int trial = 0; trial < 5; ++trial) {
    const Shape base = random_shape(gen, 1, 3);
    const int64_t nd = int64_t(base.size()), axis = random_axis(gen, nd);
    std::vector<Tensor> xs(size_t(2 + gen.below(2)));
    for (size_t i = 0; i < xs.size(); ++i) {
      Shape si = base;
      si[size_t(axis < 0 ? axis + nd : axis)] = dim(gen);
      xs[i] = uniform(si, 50 + 10 * uint64_t(trial) + i);
    }
    INFO("trial " << trial << " concat of " << xs.size() << " along axis " << axis);
    check([=](const Vars& v) { return F::concat(v, axis); }, xs);
  }
  for (int trial = 0; trial < 5; ++trial) {
    const Shape s = random_shape(gen, 0, 3);
    const int64_t axis = random_axis(gen, int64_t(s.size()) + 1);
    std::vector<Tensor> xs(size_t(2 + gen.below(2)));
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = uniform(s, 100 + 10 * uint64_t(trial) + i);
    INFO("trial " << trial << " stack of " << xs.size() << " " << shape_str(s) << " along axis " << axis);
    check([=](const Vars& v) { return F::stack(v, axis); }, xs);
  }
}

TEST_CASE("reshape, transpose, concat, stack: values and errors", "[functions][array]") {
  Variable a(Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3})), b(Tensor::from_vector<double>({7, 8}, {2, 1}));
  CHECK(values(F::transpose(a)) == std::vector<double>{1, 4, 2, 5, 3, 6});
  CHECK(F::transpose(a).data().is_contiguous());
  CHECK(values(F::concat({a, b})) == std::vector<double>{1, 2, 3, 7, 4, 5, 6, 8});
  CHECK(F::stack({a, a}, 1).shape() == Shape{2, 2, 3});
  CHECK(F::reshape(a, {3, 2}).shape() == Shape{3, 2});
  REQUIRE_THROWS_WITH(F::concat({a, b}, 0), Catch::Contains("concat: array 1 has shape (2, 1)"));
  REQUIRE_THROWS_WITH(F::stack({a, b}), Catch::Contains("stack: array 1 has shape (2, 1) but array 0 has (2, 3)"));
  REQUIRE_THROWS_WITH(F::reshape(a, {4, 2}), Catch::Contains("reshape: cannot reshape an array of shape (2, 3)"));
  REQUIRE_THROWS_WITH(F::transpose(a, {0}), Catch::Contains("transpose: axes (0,) has 1 entry but the array has 2 dimensions"));
  REQUIRE_THROWS_WITH(F::transpose(a, {1, -1}), Catch::Contains("transpose: axes (1, -1) name axis 1 twice"));
  REQUIRE_THROWS_WITH(F::transpose(a, {0, 2}),
                      Catch::Contains("transpose: axis 2 is out of range for an array of 2 dimensions"));
}

// ---- broadcast_to ----

TEST_CASE("broadcast_to: values, gradients summed back, errors", "[functions][array][broadcast_to]") {
  expect(F::broadcast_to(iota({3}), {2, 3}), {2, 3}, {0, 1, 2, 0, 1, 2});
  expect(F::broadcast_to(iota({2, 1}), {2, 3}), {2, 3}, {0, 0, 0, 1, 1, 1});
  expect(F::broadcast_to(iota({}), {2}), {2}, {0, 0});
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{3}, {2, 3}}, {{2, 1, 3}, {4, 2, 5, 3}}, {{}, {2, 3}}, {{1, 1}, {1, 1}}, {{5, 1}, {5, 7}}, {{1}, {3, 1, 5}},
      {{7}, {7}}};
  for (const auto& [from, to] : cases) {
    INFO("broadcast " << shape_str(from) << " to " << shape_str(to));
    check([to = to](const Vars& v) { return F::broadcast_to(v[0], to); }, {uniform(from, 1)});
  }
  // Two uses of one input: the gradients of both broadcasts add up.
  check([](const Vars& v) { return F::broadcast_to(v[0], {3, 2}) * F::broadcast_to(v[0], {3, 2}); },
        {uniform({2}, 2)});
  Variable x = iota({2, 3});
  REQUIRE_THROWS_WITH(F::broadcast_to(x, {3, 3}), Catch::Contains("broadcast_to") && Catch::Contains("(2, 3)") &&
                                                      Catch::Contains("(3, 3)"));
  REQUIRE_THROWS_WITH(F::broadcast_to(x, {3}), Catch::Contains("broadcast_to: cannot broadcast (2, 3) to (3,)"));
}

// ---- expand_dims and squeeze ----

TEST_CASE("expand_dims: every axis from -ndim-1 to ndim, gradients, errors", "[functions][array][expand_dims]") {
  const Shape s{2, 3};
  const std::vector<std::pair<int64_t, Shape>> want = {{0, {1, 2, 3}},  {1, {2, 1, 3}},  {2, {2, 3, 1}},
                                                       {-1, {2, 3, 1}}, {-2, {2, 1, 3}}, {-3, {1, 2, 3}}};
  for (const auto& [axis, shape] : want) {
    INFO("axis " << axis);
    expect(F::expand_dims(iota(s), axis), shape, {0, 1, 2, 3, 4, 5});
    check([axis = axis](const Vars& v) { return F::expand_dims(v[0], axis); }, {uniform({3, 1, 5}, 3)});
  }
  CHECK(F::expand_dims(iota({}), 0).shape() == Shape{1});
  CHECK(F::expand_dims(iota({}), -1).shape() == Shape{1});
  REQUIRE_THROWS_WITH(F::expand_dims(iota(s), 3),
                      Catch::Contains("expand_dims: axis 3 is out of range for an array of 2 dimensions (expected -3 "
                                      "<= axis <= 2)"));
  REQUIRE_THROWS_WITH(F::expand_dims(iota(s), -4), Catch::Contains("expand_dims: axis -4 is out of range"));
}

TEST_CASE("squeeze: every size-1 axis, one, several, none; gradients; errors", "[functions][array][squeeze]") {
  const Shape s{2, 1, 1, 3};
  expect(F::squeeze(iota(s)), {2, 3}, {0, 1, 2, 3, 4, 5});
  expect(F::squeeze(iota(s), 1), {2, 1, 3}, {0, 1, 2, 3, 4, 5});
  expect(F::squeeze(iota(s), -2), {2, 1, 3}, {0, 1, 2, 3, 4, 5});
  expect(F::squeeze(iota(s), {1, 2}), {2, 3}, {0, 1, 2, 3, 4, 5});
  expect(F::squeeze(iota(s), {-3, 2}), {2, 3}, {0, 1, 2, 3, 4, 5});
  expect(F::squeeze(iota(s), {}), s, {0, 1, 2, 3, 4, 5});  // numpy's axis=(): nothing removed
  expect(F::squeeze(iota({1, 1})), {}, {0});
  expect(F::squeeze(iota({2, 3})), {2, 3}, {0, 1, 2, 3, 4, 5});
  check([](const Vars& v) { return F::squeeze(v[0]); }, {uniform({1, 3, 1, 5, 1}, 4)});
  check([](const Vars& v) { return F::squeeze(v[0], -1); }, {uniform({3, 1, 5, 1}, 5)});
  check([](const Vars& v) { return F::squeeze(v[0], {0, 2}); }, {uniform({1, 3, 1, 5}, 6)});
  check([](const Vars& v) { return F::squeeze(v[0]); }, {uniform({1}, 7)});
  // A non-contiguous input: the transpose of (1, 3, 1) -> (1, 3, 1) viewed through a transpose.
  check([](const Vars& v) { return F::squeeze(F::transpose(v[0])); }, {uniform({3, 1, 5}, 8)});

  REQUIRE_THROWS_WITH(F::squeeze(iota(s), 0), Catch::Contains("squeeze: axis 0 has extent 2 in shape (2, 1, 1, 3) "
                                                              "(expected 1)"));
  REQUIRE_THROWS_WITH(F::squeeze(iota(s), {1, -1}), Catch::Contains("squeeze: axis -1 has extent 3"));
  REQUIRE_THROWS_WITH(F::squeeze(iota(s), {1, -3}), Catch::Contains("squeeze: axes (1, -3) name axis 1 twice"));
  REQUIRE_THROWS_WITH(F::squeeze(iota(s), 4), Catch::Contains("squeeze: axis 4 is out of range for an array of 4"));
}

// ---- split_axis ----

TEST_CASE("split_axis: sections and indices give numpy.split's pieces", "[functions][array][split_axis]") {
  const Variable x = iota({2, 6});
  auto shapes_and_values = [](const std::vector<Variable>& ys) {
    std::vector<std::pair<Shape, std::vector<double>>> out;
    for (const Variable& y : ys) out.push_back({y.shape(), values(y)});
    return out;
  };
  using Pieces = std::vector<std::pair<Shape, std::vector<double>>>;
  CHECK(shapes_and_values(F::split_axis(x, 3, 1)) ==
        Pieces{{{2, 2}, {0, 1, 6, 7}}, {{2, 2}, {2, 3, 8, 9}}, {{2, 2}, {4, 5, 10, 11}}});
  CHECK(shapes_and_values(F::split_axis(x, 2, 0)) == Pieces{{{1, 6}, {0, 1, 2, 3, 4, 5}}, {{1, 6}, {6, 7, 8, 9, 10, 11}}});
  CHECK(shapes_and_values(F::split_axis(x, 1, -1)) == Pieces{{{2, 6}, values(x)}});
  CHECK(shapes_and_values(F::split_axis(x, {1, 4}, 1)) ==
        Pieces{{{2, 1}, {0, 6}}, {{2, 3}, {1, 2, 3, 7, 8, 9}}, {{2, 2}, {4, 5, 10, 11}}});
  // {3} is one split point (Python's [3]), not three sections.
  CHECK(shapes_and_values(F::split_axis(x, {3}, 1)) == Pieces{{{2, 3}, {0, 1, 2, 6, 7, 8}}, {{2, 3}, {3, 4, 5, 9, 10, 11}}});
  // Empty pieces: at the ends, between equal points; negative points count from the end.
  CHECK(shapes_and_values(F::split_axis(x, {0, 2, 2, 6}, 1)) ==
        Pieces{{{2, 0}, {}}, {{2, 2}, {0, 1, 6, 7}}, {{2, 0}, {}}, {{2, 4}, {2, 3, 4, 5, 8, 9, 10, 11}}, {{2, 0}, {}}});
  CHECK(shapes_and_values(F::split_axis(x, {-2}, 1)) ==
        Pieces{{{2, 4}, {0, 1, 2, 3, 6, 7, 8, 9}}, {{2, 2}, {4, 5, 10, 11}}});
  CHECK(shapes_and_values(F::split_axis(x, I64{}, 0)) == Pieces{{{2, 6}, values(x)}});
  CHECK(shapes_and_values(F::split_axis(iota({0, 3}), 3, 0)) == Pieces{{{0, 3}, {}}, {{0, 3}, {}}, {{0, 3}, {}}});
}

TEST_CASE("split_axis: gradients, with an unused piece and empty pieces", "[functions][array][split_axis]") {
  // The pieces weighted differently, so a gradient routed to the wrong piece shows.
  auto weighted = [](const std::vector<Variable>& ys) {
    Variable total = F::sum(ys[0]);
    for (size_t i = 1; i < ys.size(); ++i) total = total + double(i + 1) * F::sum(F::tanh(ys[i]));
    return total;
  };
  check([&](const Vars& v) { return weighted(F::split_axis(v[0], 3, 1)); }, {uniform({2, 9, 1}, 50)});
  check([&](const Vars& v) { return weighted(F::split_axis(v[0], {1, 1, 4}, 0)); }, {uniform({5, 3}, 51)});
  check([&](const Vars& v) { return weighted(F::split_axis(v[0], {-1}, -1)); }, {uniform({3, 1, 5}, 52)});
  check([&](const Vars& v) { return weighted(F::split_axis(v[0], {0, 5}, 0)); }, {uniform({5}, 53)});
  // Only the middle piece used: the others' gradients are zeros.
  check([](const Vars& v) { return F::split_axis(v[0], {2, 4}, 1)[1]; }, {uniform({3, 7}, 54)});

  Variable x(Tensor::ones({5}, DType::Float64), true);
  auto ys = F::split_axis(x, {1, 3}, 0);
  F::sum(ys[1]).backward();
  CHECK(values(x.grad()) == std::vector<double>{0, 1, 1, 0, 0});
  CHECK(ys[0].creator()->name() == "SplitAxis");
}

TEST_CASE("separate: the slices along an axis without it, the inverse of stack", "[functions][array][separate]") {
  const Variable x = iota({2, 3});
  std::vector<Variable> rows = F::separate(x);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].shape() == Shape{3});
  CHECK(values(rows[1]) == std::vector<double>{3, 4, 5});
  std::vector<Variable> columns = F::separate(x, -1);
  REQUIRE(columns.size() == 3);
  CHECK(columns[2].shape() == Shape{2});
  CHECK(values(columns[2]) == std::vector<double>{2, 5});
  CHECK(values(F::stack(F::separate(x, 1), 1)) == values(x));
  CHECK(F::separate(iota({0, 3})).empty());
  CHECK_THROWS_WITH(F::separate(Variable(Tensor::scalar(1.0))), Catch::Contains("separate: cannot separate a 0-dimensional"));
  CHECK_THROWS_WITH(F::separate(x, 2), Catch::Contains("separate"));
}

TEST_CASE("split_axis: errors", "[functions][array][split_axis][errors]") {
  const Variable x = iota({2, 7});
  REQUIRE_THROWS_WITH(F::split_axis(x, 3, 1),
                      Catch::Contains("split_axis: axis 1 of extent 7 cannot be split into 3 equal sections"));
  REQUIRE_THROWS_WITH(F::split_axis(x, 0, 1), Catch::Contains("split_axis: sections must be positive, got 0"));
  REQUIRE_THROWS_WITH(F::split_axis(x, {2, 8}, 1),
                      Catch::Contains("split_axis: the last split index 8 exceeds the extent 7 of axis 1"));
  REQUIRE_THROWS_WITH(F::split_axis(x, {5, 2}, 1), Catch::Contains("split_axis: split indices (5, 2) are not sorted"));
  REQUIRE_THROWS_WITH(F::split_axis(x, 1, 2), Catch::Contains("split_axis: axis 2 is out of range for an array of 2"));
}

// ---- flatten ----

TEST_CASE("flatten: a 1-D array of every element, as Chainer's (the batch axis too), and its gradient",
          "[array]") {
  const Tensor x = uniform({2, 3, 4}, 51);
  const Variable y = F::flatten(Variable(x));
  CHECK(y.shape() == Shape{24});
  CHECK(values(y) == values(x));
  check([](const Vars& v) { return F::flatten(v[0]); }, {uniform({2, 1, 3}, 52)});
  check([](const Vars& v) { return F::flatten(F::transpose(v[0])); }, {uniform({2, 3}, 53)});
}
