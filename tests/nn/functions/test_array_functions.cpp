// Tests of the array functions broadcast_to, expand_dims, squeeze, get_item and split_axis, and
// of the ops under get_item (Tensor::as_strided, ops::take, ops::scatter_add_): forward values
// against hand-written numpy results, finite-difference gradients in float64 over odd and
// size-1 shapes, and the error messages.
#include <catch2/catch.hpp>

#include <functional>

#include "autograd/function_node.h"
#include "autograd/gradient_check.h"
#include "core/ops/ops.h"
#include "core/util/random.h"
#include "nn/functions.h"
#include "tests/function_inputs.h"

namespace F = chainer::functions;
using namespace chainer;
using namespace chainer::testing;
using Vars = std::vector<Variable>;
using Fn = std::function<Variable(const Vars&)>;
using I64 = std::vector<int64_t>;

namespace {
// 0, 1, ..., n-1 in SHAPE, float64: an element's value is its flat position, so a result names
// the elements it took.
Variable iota(const Shape& shape) { return Variable(Tensor::arange(shape_numel(shape), DType::Float64).reshape(shape)); }


// Shape and values of F(x) for x = iota(SHAPE).
void expect(const Variable& y, const Shape& shape, const std::vector<double>& want) {
  CHECK(shape_str(y.shape()) == shape_str(shape));
  CHECK(values(y) == want);
}

const Slice all;
const std::nullopt_t none = std::nullopt;
}  // namespace

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

// ---- get_item ----

TEST_CASE("get_item: integers, slices, newaxis and ellipsis give numpy's values", "[functions][get_item]") {
  // x = numpy.arange(24).reshape(2, 3, 4): each expectation is what numpy gives.
  const Variable x = iota({2, 3, 4});
  expect(F::get_item(x, 1), {3, 4}, {12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23});
  expect(F::get_item(x, -1), {3, 4}, {12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23});
  expect(F::get_item(x, {0, -1, 2}), {}, {10});
  expect(F::get_item(x, {1, 2}), {4}, {20, 21, 22, 23});
  // Chainer's docstring examples: x[0, 0, 0:2:1], x[..., 2], x[1, None, 1, 0] on (2, 2, 3).
  const Variable d = iota({2, 2, 3});
  expect(F::get_item(d, {0, 0, Slice(0, 2, 1)}), {2}, {0, 1});
  expect(F::get_item(d, {ellipsis, 2}), {2, 2}, {2, 5, 8, 11});
  expect(F::get_item(d, {1, newaxis, 1, 0}), {1}, {9});
  // Slices: steps, negative bounds, negative steps, clamping past the ends, empty results.
  expect(F::get_item(x, {0, 0, Slice(1, 4, 2)}), {2}, {1, 3});
  expect(F::get_item(x, {0, 0, Slice(none, none, -1)}), {4}, {3, 2, 1, 0});
  expect(F::get_item(x, {0, 0, Slice(-1, 0, -2)}), {2}, {3, 1});
  expect(F::get_item(x, {0, 0, Slice(2, none, -1)}), {3}, {2, 1, 0});
  expect(F::get_item(x, {0, 0, Slice(-100, 100)}), {4}, {0, 1, 2, 3});
  expect(F::get_item(x, {0, 0, Slice(100, -100, -3)}), {2}, {3, 0});
  expect(F::get_item(x, {0, 0, Slice(3, 1)}), {0}, {});
  expect(F::get_item(x, {0, 0, Slice(1, 3, -1)}), {0}, {});
  expect(F::get_item(x, {0, 0, Slice(2)}), {2}, {0, 1});  // Python's slice(2) is :2
  expect(F::get_item(x, {Slice(1, 2), Slice(none, none, 2), Slice(-1, none, -3)}), {1, 2, 2}, {15, 12, 23, 20});
  expect(F::get_item(x, {Slice(5, 9)}), {0, 3, 4}, {});
  // newaxis anywhere, ellipsis standing for none, some or all axes.
  CHECK(F::get_item(x, newaxis).shape() == Shape{1, 2, 3, 4});
  CHECK(F::get_item(x, {all, newaxis, all, newaxis}).shape() == Shape{2, 1, 3, 1, 4});
  CHECK(F::get_item(x, {ellipsis, newaxis}).shape() == Shape{2, 3, 4, 1});
  expect(F::get_item(x, {1, ellipsis, 2, 3}), {}, {23});
  expect(F::get_item(x, {ellipsis, 1, Slice(none, none, 3)}), {2, 2}, {4, 7, 16, 19});
  expect(F::get_item(x, {1, ellipsis}), {3, 4}, {12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23});
  CHECK(values(F::get_item(x, ellipsis)) == values(x));
  CHECK(values(F::get_item(x, std::vector<Index>{})) == values(x));
  // A 0-d array: x[()], x[None], x[...].
  const Variable s = iota({});
  CHECK(F::get_item(s, std::vector<Index>{}).shape() == Shape{});
  CHECK(F::get_item(s, newaxis).shape() == Shape{1});
  CHECK(F::get_item(s, ellipsis).shape() == Shape{});
  // The result is contiguous, and a strided input is read through its strides.
  CHECK(F::get_item(x, {all, 1}).data().is_contiguous());
  const Variable t(x.data().transpose());  // (4, 3, 2), t[i, j, k] = x[k, j, i]
  expect(F::get_item(t, {Slice(1, 3), 2}), {2, 2}, {9, 21, 10, 22});
}

TEST_CASE("get_item: one integer array gathers as numpy does, repeats and negatives included",
          "[functions][get_item]") {
  const Variable x = iota({2, 3, 4});
  expect(F::get_item(x, I64{1, 0, 1}), {3, 3, 4},
         {12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 0,  1,  2,  3,  4,  5,
          6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23});
  // x[0, :, [3, -4, 3]]: the integer and the array are apart, so the array's axis comes first.
  expect(F::get_item(x, {0, all, I64{3, -4, 3}}), {3, 3}, {3, 7, 11, 0, 4, 8, 3, 7, 11});
  expect(F::get_item(x, {1, I64{-1}}), {1, 4}, {20, 21, 22, 23});
  expect(F::get_item(x, {all, I64{}}), {2, 0, 4}, {});
  // Int32 and 2-D indices: the index's shape replaces the axis.
  const Tensor idx = Tensor::from_vector<int32_t>({2, 0, 1, 2}, {2, 2});
  expect(F::get_item(x, {1, idx, 0}), {2, 2}, {20, 12, 16, 20});
  expect(F::get_item(x, {ellipsis, idx}), {2, 3, 2, 2},
         {2, 0, 1, 2, 6, 4, 5, 6, 10, 8, 9, 10, 14, 12, 13, 14, 18, 16, 17, 18, 22, 20, 21, 22});
  // A 0-d index array takes one entry, as an integer does.
  expect(F::get_item(x, {0, 1, Tensor::from_vector<int64_t>({2}, {})}), {}, {6});
  // Integer and array entries apart (a slice between them): numpy puts the array's axes first.
  // x[0, :, [1, 2]] has shape (2, 3), not (3, 2).
  expect(F::get_item(x, {0, all, I64{1, 2}}), {2, 3}, {1, 5, 9, 2, 6, 10});
  expect(F::get_item(x, {I64{1, 0}, newaxis, 2}), {2, 1, 4}, {20, 21, 22, 23, 8, 9, 10, 11});
  // Together, they stay in place: x[:, 1, [0, 3]] has shape (2, 2).
  expect(F::get_item(x, {all, 1, I64{0, 3}}), {2, 2}, {4, 7, 16, 19});
  // uint8 indices are integers too.
  expect(F::get_item(x, {1, 1, Tensor::from_vector<uint8_t>({3, 0})}), {2}, {19, 16});
}

TEST_CASE("get_item: gradients for every kind of entry", "[functions][get_item]") {
  using V = std::vector<Index>;
  const std::vector<std::pair<Shape, V>> cases = {
      {{5, 3}, {2}},
      {{5, 3}, {-1}},
      {{5, 3}, {-5, 2}},
      {{5, 1, 3}, {all, 0}},
      {{7}, {Slice(1, 6, 2)}},
      {{7}, {Slice(none, none, -1)}},
      {{7, 3}, {Slice(-2, -8, -3), Slice(none, none, 2)}},
      {{7}, {Slice(4, 2)}},  // empty
      {{3, 5}, {newaxis, all, newaxis, Slice(1, 4)}},
      {{3, 1, 5}, {ellipsis, 2}},
      {{3, 1, 5}, {1, ellipsis}},
      {{3, 1, 5}, {ellipsis}},
      {{3, 1, 5}, {1, ellipsis, newaxis, Slice(none, none, -2)}},
      {{}, {newaxis}},
      {{5, 3}, {I64{4, 0, 4, 4, -1}}},  // repeated indices sum their gradients
      {{3, 5}, {all, I64{1, 3, 1}}},
      {{3, 5, 1}, {Slice(none, none, -1), I64{-1, 0}, 0}},
      {{2, 3, 5}, {1, all, I64{4, 4}}},  // the array's axis goes first
      {{2, 3, 5}, {I64{1, 0, 1}, newaxis, Slice(1, 3)}},
      {{4, 3}, {Tensor::from_vector<int32_t>({3, 1, 3, 0, 3, 2}, {2, 3})}},
      {{4, 3}, {all, I64{}}},  // empty
      {{5}, {Tensor::from_vector<int64_t>({-2}, {})}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO("case " << i);
    const V index = cases[i].second;
    check([index](const Vars& v) { return F::get_item(v[0], index); }, {uniform(cases[i].first, 10 + i)});
  }
  // A non-contiguous input, and the backward of an array index into a strided view of the gradient.
  check([](const Vars& v) { return F::get_item(F::transpose(v[0]), {Slice(none, none, 2), I64{0, 2, 0}}); },
        {uniform({3, 5}, 40)});
}

TEST_CASE("get_item: repeated indices add their gradients; the rest get zero", "[functions][get_item]") {
  Variable x(Tensor::zeros({4, 2}, DType::Float64), true);
  Variable y = F::get_item(x, I64{2, 0, 2, 2});
  y.set_grad(Tensor::from_vector<double>({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2}));
  y.backward();
  CHECK(values(x.grad()) == std::vector<double>{3, 4, 0, 0, 1 + 5 + 7, 2 + 6 + 8, 0, 0});

  Variable z(Tensor::zeros({5}, DType::Float64), true);
  Variable w = F::get_item(z, Slice(4, none, -2));
  w.set_grad(Tensor::from_vector<double>({1, 2, 3}));
  w.backward();
  CHECK(values(z.grad()) == std::vector<double>{3, 0, 2, 0, 1});
  CHECK(w.creator()->name() == "GetItem");
}

TEST_CASE("get_item: errors name the index and the extent", "[functions][get_item][errors]") {
  const Variable x = iota({2, 3, 4});
  REQUIRE_THROWS_WITH(F::get_item(x, {0, 3}), Catch::Contains("get_item: index 3 is out of bounds for axis 1 with "
                                                              "size 3"));
  REQUIRE_THROWS_WITH(F::get_item(x, -3), Catch::Contains("get_item: index -3 is out of bounds for axis 0 with size 2"));
  REQUIRE_THROWS_WITH(F::get_item(x, {all, all, I64{1, 4}}),
                      Catch::Contains("get_item: index 4 is out of bounds for axis 2 with size 4"));
  REQUIRE_THROWS_WITH(F::get_item(x, {ellipsis, I64{-5}}),
                      Catch::Contains("get_item: index -5 is out of bounds for axis 2 with size 4"));
  REQUIRE_THROWS_WITH(F::get_item(x, Slice(none, none, 0)), Catch::Contains("get_item: slice step cannot be zero"));
  REQUIRE_THROWS_WITH(F::get_item(x, {0, 0, 0, 0}),
                      Catch::Contains("get_item: too many indices for an array of shape (2, 3, 4): 4 axes indexed"));
  REQUIRE_THROWS_WITH(F::get_item(iota({}), 0), Catch::Contains("get_item: too many indices"));
  REQUIRE_THROWS_WITH(F::get_item(x, {ellipsis, 0, ellipsis}),
                      Catch::Contains("get_item: an index can only have a single ellipsis"));
  REQUIRE_THROWS_WITH(F::get_item(x, {I64{0}, I64{1}}),
                      Catch::Contains("get_item: 2 integer arrays in one index; only one is supported"));
  REQUIRE_THROWS_WITH(F::get_item(x, Tensor::from_vector<float>({0})),
                      Catch::Contains("get_item: index arrays must have an integer dtype, got float32"));
  REQUIRE_THROWS_WITH(F::get_item(x, Tensor()), Catch::Contains("get_item: an index array is undefined"));
  REQUIRE_THROWS_WITH(F::get_item(Variable(), 0), Catch::Contains("get_item: the input is undefined"));
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

// ---- The ops under get_item ----

TEST_CASE("as_strided views any strides inside the storage and refuses to reach outside it", "[tensor][get_item]") {
  const Tensor t = Tensor::arange(12, DType::Float64);
  CHECK(values(t.as_strided({3, 2}, {-4, 1}, 9)) == std::vector<double>{9, 10, 5, 6, 1, 2});
  CHECK(values(t.as_strided({2, 1, 2}, {6, 0, 5}, 0)) == std::vector<double>{0, 5, 6, 11});
  CHECK(t.as_strided({0, 5}, {100, 100}, 50).numel() == 0);  // reaches nothing
  REQUIRE_THROWS_WITH(t.as_strided({3}, {5}, 2),
                      Catch::Contains("as_strided: shape (3,) with strides (5,) from offset 2 reaches elements [2, 12] "
                                      "outside the storage of 12 elements"));
  REQUIRE_THROWS_WITH(t.as_strided({2}, {-1}, 0), Catch::Contains("reaches elements [-1, 0]"));
  REQUIRE_THROWS_WITH(t.as_strided({2}, {1, 1}, 0), Catch::Contains("have different lengths"));
}

TEST_CASE("take and scatter_add_: numpy.take and numpy.add.at along an axis", "[ops][get_item]") {
  const Tensor a = Tensor::arange(12, DType::Float64).reshape({3, 4});
  const Tensor idx = Tensor::from_vector<int64_t>({3, -4, 3});
  CHECK(values(ops::take(a, idx, 1)) == std::vector<double>{3, 0, 3, 7, 4, 7, 11, 8, 11});
  CHECK(ops::take(a, Tensor::from_vector<int32_t>({2, 0, 1, 1}, {2, 2}), 0).shape() == Shape{2, 2, 4});
  CHECK(values(ops::take(a.transpose(), Tensor::from_vector<int64_t>({1}), 0)) == std::vector<double>{1, 5, 9});
  const Tensor ints = ops::take(Tensor::from_vector<int32_t>({5, 6, 7}), Tensor::from_vector<int64_t>({-1, 0}), 0);
  CHECK(ints.dtype() == DType::Int32);
  CHECK(ints.to_vector<int32_t>() == std::vector<int32_t>{7, 5});
  CHECK(ops::take(a, Tensor::from_vector<int64_t>({}), 1).shape() == Shape{3, 0});

  Tensor acc = Tensor::zeros({3, 4}, DType::Float64);
  ops::scatter_add_(acc, idx, 1, Tensor::ones({3, 3}, DType::Float64));
  CHECK(values(acc) == std::vector<double>{1, 0, 0, 2, 1, 0, 0, 2, 1, 0, 0, 2});
  ops::scatter_add_(acc, Tensor::from_vector<int64_t>({2, 2}), 0, Tensor::ones({2, 4}, DType::Float64));
  CHECK(values(acc) == std::vector<double>{1, 0, 0, 2, 1, 0, 0, 2, 3, 2, 2, 4});

  REQUIRE_THROWS_WITH(ops::take(a, Tensor::from_vector<int64_t>({0, 4}), 1),
                      Catch::Contains("take: index 4 is out of bounds for axis 1 with size 4"));
  REQUIRE_THROWS_WITH(ops::take(a, Tensor::from_vector<int64_t>({-4}), 0),
                      Catch::Contains("take: index -4 is out of bounds for axis 0 with size 3"));
  REQUIRE_THROWS_WITH(ops::take(a, Tensor::from_vector<double>({0}), 0),
                      Catch::Contains("take: indices have dtype float64 (expected an integer dtype)"));
  REQUIRE_THROWS_WITH(ops::take(a, idx, 2), Catch::Contains("take: axis 2 is out of range"));
  REQUIRE_THROWS_WITH(ops::scatter_add_(acc, idx, 1, Tensor::ones({3, 2}, DType::Float64)),
                      Catch::Contains("scatter_add: values have shape (3, 2) (expected (3, 3)"));
  REQUIRE_THROWS_WITH(ops::scatter_add_(acc, Tensor::from_vector<int64_t>({3}), 0, Tensor::ones({1, 4}, DType::Float64)),
                      Catch::Contains("scatter_add: index 3 is out of bounds for axis 0 with size 3"));
  Tensor strided = Tensor::zeros({4, 3}, DType::Float64).transpose();
  REQUIRE_THROWS_WITH(ops::scatter_add_(strided, idx, 1, Tensor::ones({3, 3}, DType::Float64)),
                      Catch::Contains("scatter_add: the destination must be contiguous"));
}
