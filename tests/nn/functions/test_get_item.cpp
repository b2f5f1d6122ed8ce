// Tests of get_item (nn/functions/get_item.h): integers, slices, newaxis, ellipsis and one integer
// array give numpy's values; gradients for every kind of entry, repeated indices adding theirs;
// the errors.
#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>

#include "autograd/function_node.h"
#include "nn/functions.h"
#include "tests/function_inputs.h"
#include "tests/nn/functions/iota.h"

namespace F = chainer::functions;
using namespace chainer;
using namespace chainer::testing;
using Vars = std::vector<Variable>;
using I64 = std::vector<int64_t>;

namespace {
const Slice all;
const std::nullopt_t none = std::nullopt;
}  // namespace

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
