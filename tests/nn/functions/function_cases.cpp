#include "tests/nn/functions/function_cases.h"

#include <cmath>
#include <memory>
#include <optional>

#include "core/ops/ops.h"
#include "core/ops/update_ops.h"
#include "core/util/error.h"
#include "core/util/random.h"
#include "nn/functions.h"
#include "tests/function_inputs.h"

namespace chainer::testing {
namespace {

namespace F = chainer::functions;
using Function = std::function<Variable(const Vars&)>;

Tensor input(const Shape& shape, uint64_t seed, double lo = -1, double hi = 1) { return uniform(shape, seed, lo, hi); }

// Inputs of linear_relu whose pre-activations are all at least 0.05 from the kink.
std::vector<Tensor> linear_relu_inputs() {
  for (uint64_t seed = 1; seed < 1000; ++seed) {
    Tensor x = input({4, 3}, 100 * seed), W = input({5, 3}, 100 * seed + 1), b = input({5}, 100 * seed + 2);
    bool far = true;
    for (double p : ops::add(ops::matmul(x, W, false, true), b).to_vector<double>()) far &= std::abs(p) > 0.05;
    if (far) return {x, W, b};
  }
  throw Error("linear_relu_inputs: no seed gave pre-activations away from 0");
}

std::vector<FunctionCase> make_function_cases() {
  auto gen = std::make_shared<Generator>();  // dropout's, reseeded before every call
  auto sce = [](bool normalize, int64_t ignore, const char* reduce) -> Function {
    return [=](const Vars& v) { return F::softmax_cross_entropy(v[0], v[1], normalize, ignore, reduce); };
  };
  std::vector<FunctionCase> cases = {
      {{"linear"}, "default arguments", [](const Vars& v) { return F::linear(v[0], v[1], v[2]); },
       {input({7, 5}, 1), input({3, 5}, 2), input({3}, 3)}},
      {{"linear"}, "without bias", [](const Vars& v) { return F::linear(v[0], v[1]); },
       {input({4, 6}, 4), input({2, 6}, 5)}},
      {{"linear"}, "of a (3, 2, 4) x", [](const Vars& v) { return F::linear(v[0], v[1], v[2]); },
       {input({3, 2, 4}, 6), input({5, 8}, 7), input({5}, 8)}},
      {{"linear"}, "with x as data", [](const Vars& v) { return F::linear(v[0], v[1], v[2]); },
       {input({4, 3}, 9), input({2, 3}, 10), input({2}, 11)}, {true, false, false}},
      {{"linear_relu"}, "default arguments", [](const Vars& v) { return F::linear_relu(v[0], v[1], v[2]); }, linear_relu_inputs()},
      {{"relu"}, "default arguments", [](const Vars& v) { return F::relu(v[0]); }, {away_from_zero({5, 7}, 12)}},
      {{"sigmoid"}, "default arguments", [](const Vars& v) { return F::sigmoid(v[0]); }, {input({5, 7}, 13, -3, 3)}},
      {{"tanh"}, "default arguments", [](const Vars& v) { return F::tanh(v[0]); }, {input({3, 4, 2}, 14, -2, 2)}},
      {{"add"}, "(5, 7) + (7,)", [](const Vars& v) { return v[0] + v[1]; }, {input({5, 7}, 15), input({7}, 16)}},
      {{"sub"}, "(5, 1) - (1, 7)", [](const Vars& v) { return v[0] - v[1]; }, {input({5, 1}, 17), input({1, 7}, 18)}},
      {{"mul"}, "(2, 3, 4) * (3, 1)", [](const Vars& v) { return v[0] * v[1]; }, {input({2, 3, 4}, 19), input({3, 1}, 20)}},
      {{"mul"}, "() * (5, 7)", [](const Vars& v) { return v[0] * v[1]; }, {input({}, 21), input({5, 7}, 22)}},
      {{"div"}, "(5, 7) / (5, 1)", [](const Vars& v) { return v[0] / v[1]; },
       {input({5, 7}, 23), input({5, 1}, 24, 0.5, 2)}},
      {{"add", "sub", "mul", "div"}, "with scalars: 2 (1 - x) x + x / 3 - 0.5", [](const Vars& v) { return 2.0 * (1.0 - v[0]) * v[0] + v[0] / 3.0 - 0.5; },
       {input({5, 7}, 25)}},
      {{"div", "neg", "mul"}, "2 / x + (-x) 3", [](const Vars& v) { return 2.0 / v[0] + (-v[0]) * 3.0; }, {input({5, 7}, 26, 0.5, 2)}},
      {{"sum"}, "default arguments", [](const Vars& v) { return F::sum(v[0]); }, {input({5, 7}, 27)}},
      {{"sum"}, "axis 1 keepdims", [](const Vars& v) { return F::sum(v[0], 1, true); }, {input({3, 5, 7}, 28)}},
      {{"mean"}, "axis -1", [](const Vars& v) { return F::mean(v[0], -1); }, {input({5, 7}, 29)}},
      {{"average"}, "weighted along axis 0", [](const Vars& v) { return F::average(v[0], 0, v[1]); },
       {input({5, 7}, 30), input({5}, 31, 0.5, 2)}},
      {{"average"}, "weighted over all", [](const Vars& v) { return F::average(v[0], std::nullopt, v[1]); },
       {input({5, 7}, 32), input({5, 7}, 33, 0.5, 2)}},
      {{"reshape"}, "default arguments", [](const Vars& v) { return F::reshape(v[0], {3, -1}); }, {input({2, 3, 2}, 34)}},
      {{"transpose"}, "(1, 2, 0)", [](const Vars& v) { return F::transpose(v[0], {1, 2, 0}); }, {input({2, 3, 4}, 35)}},
      {{"concat"}, "along axis 1", [](const Vars& v) { return F::concat({v[0], v[1], v[2]}, 1); },
       {input({2, 3}, 36), input({2, 1}, 37), input({2, 4}, 38)}},
      {{"stack"}, "along axis 2", [](const Vars& v) { return F::stack({v[0], v[1]}, 2); },
       {input({2, 3}, 39), input({2, 3}, 40)}},
      {{"softmax"}, "axis 1", [](const Vars& v) { return F::softmax(v[0]); }, {input({5, 7}, 41, -2, 2)}},
      {{"softmax"}, "axis 0 of (2, 3, 4)", [](const Vars& v) { return F::softmax(v[0], 0); }, {input({2, 3, 4}, 42, -2, 2)}},
      {{"log_softmax"}, "axis -1 of (3, 4, 5)", [](const Vars& v) { return F::log_softmax(v[0], -1); },
       {input({3, 4, 5}, 43, -2, 2)}},
      {{"softmax_cross_entropy"}, "mean over the valid rows", sce(true, -1, "mean"),
       {input({6, 5}, 44, -2, 2), labels({4, -1, 0, 3, -1, 1})}},
      {{"softmax_cross_entropy"}, "mean over the batch", sce(false, -1, "mean"),
       {input({3, 4}, 45, -2, 2), labels({3, -1, 0})}},
      {{"softmax_cross_entropy"}, "per example", sce(true, -1, "no"), {input({5, 3}, 46, -2, 2), labels({1, -1, 0, 2, 2})}},
      {{"softmax_cross_entropy"}, "ignore_label 7", sce(true, 7, "mean"), {input({3, 4}, 47, -2, 2), labels({7, 2, 0})}},
      {{"softmax_cross_entropy"}, "every row ignored", sce(true, -1, "mean"), {input({2, 3}, 48, -2, 2), labels({-1, -1})}},
      {{"mean_squared_error"}, "default arguments", [](const Vars& v) { return F::mean_squared_error(v[0], v[1]); },
       {input({3, 4}, 49), input({3, 4}, 50)}},
      {{"dropout"}, "0.3", [gen](const Vars& v) {
         gen->seed(42);
         return F::dropout(v[0], 0.3, gen.get());
       }, {input({4, 5}, 51)}},
      {{"softmax_cross_entropy", "linear", "tanh"}, "of a tanh MLP", [](const Vars& v) {
         return F::softmax_cross_entropy(F::linear(F::tanh(F::linear(v[0], v[1], v[2])), v[3], v[4]), v[5]);
       },
       {input({6, 4}, 52), input({5, 4}, 53), input({5}, 54), input({3, 5}, 55), input({3}, 56),
        labels({0, 2, 1, 1, -1, 0})}},
      {{"batch_normalization"}, "of (5, 3)", [](const Vars& v) { return F::batch_normalization(v[0], v[1], v[2]); },
       {input({5, 3}, 58), input({3}, 59, 0.5, 2), input({3}, 80)}},
      {{"batch_normalization"}, "of (2, 3, 2, 2)", [](const Vars& v) { return F::batch_normalization(v[0], v[1], v[2]); },
       {input({2, 3, 2, 2}, 81), input({3}, 82, 0.5, 2), input({3}, 83)}},
      {{"fixed_batch_normalization"}, "of (3, 2, 2)",
       [](const Vars& v) { return F::fixed_batch_normalization(v[0], v[1], v[2], v[3], v[4]); },
       {input({3, 2, 2}, 84), input({2}, 85), input({2}, 86), input({2}, 87), input({2}, 88, 0.5, 2)}},
      {{"broadcast_to"}, "(3, 1) to (2, 3, 5)", [](const Vars& v) { return F::broadcast_to(v[0], {2, 3, 5}); },
       {input({3, 1}, 89)}},
      {{"expand_dims"}, "axis -2", [](const Vars& v) { return F::expand_dims(v[0], -2); }, {input({3, 5}, 90)}},
      {{"squeeze"}, "every size-1 axis", [](const Vars& v) { return F::squeeze(v[0]); }, {input({1, 3, 1, 5}, 91)}},
      {{"squeeze"}, "axes (0, -2)", [](const Vars& v) { return F::squeeze(v[0], {0, -2}); }, {input({1, 3, 1, 5}, 92)}},
      {{"get_item"}, "x[1:, None, ..., ::-2]",
       [](const Vars& v) { return F::get_item(v[0], {Slice(1, std::nullopt), newaxis, ellipsis, Slice(std::nullopt, std::nullopt, -2)}); },
       {input({4, 3, 7}, 93)}},
      {{"get_item"}, "x[-1, 2]", [](const Vars& v) { return F::get_item(v[0], {-1, 2}); }, {input({4, 3, 7}, 94)}},
      {{"get_item"}, "x[[3, 0, 3, -1]] (repeats)",
       [](const Vars& v) { return F::get_item(v[0], std::vector<int64_t>{3, 0, 3, -1}); }, {input({4, 3}, 95)}},
      {{"get_item"}, "x[::2, int32 (2, 3) indices]",
       [](const Vars& v) {
         return F::get_item(v[0], {Slice(std::nullopt, std::nullopt, 2),
                                   Tensor::from_vector<int32_t>({6, 0, 6, 6, 2, -7}, {2, 3})});
       },
       {input({5, 7}, 96)}},
      {{"get_item"}, "x[0, :, [1, 2, 1]] (array axis first)",
       [](const Vars& v) { return F::get_item(v[0], {0, Slice(), std::vector<int64_t>{1, 2, 1}}); },
       {input({2, 3, 4}, 97)}},
      {{"split_axis"}, "into 3 along axis 1, weighted", [](const Vars& v) {
         auto ys = F::split_axis(v[0], 3, 1);
         return F::sum(ys[0]) + 2.0 * F::sum(F::tanh(ys[1])) + 3.0 * F::sum(ys[2] * ys[2]);
       }, {input({2, 6, 3}, 98)}},
      {{"separate"}, "along axis 1, weighted", [](const Vars& v) {
         auto ys = F::separate(v[0], 1);
         return F::sum(ys[0]) + 2.0 * F::sum(F::tanh(ys[1])) + 3.0 * F::sum(ys[2] * ys[2]);
       }, {input({2, 3, 4}, 101)}},
      {{"split_axis"}, "at (1, 1, 4), the middle piece", [](const Vars& v) { return F::split_axis(v[0], {1, 1, 4}, 0)[2]; },
       {input({5, 3}, 99)}},
      {{"accuracy"}, "default arguments", [](const Vars& v) { return F::accuracy(v[0], v[1]); },
       {input({7, 5}, 57), labels({0, 4, -1, 2, 2, 1, 3})}, {}, false},
      {{"exp"}, "default arguments", [](const Vars& v) { return F::exp(v[0]); }, {input({5, 7}, 200, -2, 2)}},
      // Through float32 into float64: |x| <= 0.5 keeps float32's rounding of x +- eps (3e-8) far
      // below the finite differences' tolerance (half types: tests/nn/functions/test_cast.cpp).
      // (Doubled: in the float32 run both casts are the identity and the result needs a creator.)
      {{"cast"}, "through float32",
       [](const Vars& v) { return F::mul(F::cast(F::cast(v[0], DType::Float32), v[0].dtype()), 2.0); },
       {input({5, 7}, 201, -0.5, 0.5)}},
      {{"log"}, "default arguments", [](const Vars& v) { return F::log(v[0]); }, {input({5, 7}, 201, 0.2, 3)}},
      {{"sqrt"}, "default arguments", [](const Vars& v) { return F::sqrt(v[0]); }, {input({3, 1, 4}, 202, 0.2, 3)}},
      {{"square"}, "default arguments", [](const Vars& v) { return F::square(v[0]); }, {input({5, 7}, 203)}},
      {{"absolute"}, "default arguments", [](const Vars& v) { return F::absolute(v[0]); }, {away_from_zero({5, 7}, 204)}},
      {{"abs"}, "Chainer's other name for absolute", [](const Vars& v) { return F::abs(v[0]); },
       {away_from_zero({3, 4}, 251)}},
      {{"neg"}, "of (2, 3)", [](const Vars& v) { return F::neg(v[0]); }, {input({2, 3}, 252)}},
      {{"squeeze"}, "axis -1 alone", [](const Vars& v) { return F::squeeze(v[0], -1); }, {input({3, 1, 2, 1}, 253)}},
      {{"clip"}, "(x, -0.3, 0.2)", [](const Vars& v) { return F::clip(v[0], -0.3, 0.2); }, {spaced({5, 7}, 205, 0.05)}},
      {{"clip"}, "(x, None, 0.2)", [](const Vars& v) { return F::clip(v[0], std::nullopt, 0.2); },
       {spaced({3, 4}, 206, 0.05)}},
      {{"maximum"}, "(5, 7) and (7,)", [](const Vars& v) { return F::maximum(v[0], v[1]); },
       {spaced({5, 7}, 207), spaced({7}, 208, 0.05)}},
      {{"minimum"}, "(5, 1) and (1, 7)", [](const Vars& v) { return F::minimum(v[0], v[1]); },
       {spaced({5, 1}, 209), spaced({1, 7}, 210, 0.05)}},
      {{"max"}, "default arguments", [](const Vars& v) { return F::max(v[0]); }, {spaced({5, 7}, 211)}},
      {{"max"}, "over axes (0, 2) keepdims", [](const Vars& v) { return F::max(v[0], {0, 2}, true); },
       {spaced({3, 4, 5}, 212)}},
      {{"min"}, "along axis -1", [](const Vars& v) { return F::min(v[0], -1); }, {spaced({3, 4, 5}, 213)}},
      {{"min"}, "over axes (1, 0)", [](const Vars& v) { return F::min(v[0], {1, 0}); }, {spaced({3, 4, 5}, 214)}},
      {{"argmax"}, "along axis 1", [](const Vars& v) { return F::argmax(v[0], 1); }, {spaced({5, 7}, 215)}, {}, false},
      {{"argmin"}, "of the flattened x", [](const Vars& v) { return F::argmin(v[0]); }, {spaced({5, 7}, 216)}, {},
       false},
      {{"logsumexp"}, "default arguments", [](const Vars& v) { return F::logsumexp(v[0]); }, {input({5, 7}, 217, -2, 2)}},
      {{"logsumexp"}, "over axes (-1, 0)", [](const Vars& v) { return F::logsumexp(v[0], {-1, 0}); },
       {input({3, 4, 5}, 218, -2, 2)}},
      {{"sum"}, "over axes (0, 2)", [](const Vars& v) { return F::sum(v[0], {0, 2}); }, {input({3, 4, 5}, 219)}},
      {{"where"}, "condition (5, 1), x (7,), y (5, 7)", [](const Vars& v) {
         const Tensor condition = Tensor::from_vector<uint8_t>({1, 0, 2, 0, 1}, {5, 1});
         return F::where(Variable(condition.to(v[0].data().device())), v[0], v[1]);
       }, {input({7}, 220), input({5, 7}, 221)}},
      {{"sigmoid_cross_entropy"}, "normalized mean",
       [](const Vars& v) { return F::sigmoid_cross_entropy(v[0], v[1]); },
       {input({3, 4}, 222, -3, 3), Tensor::from_vector<int32_t>({0, 1, -1, 1, 1, 0, 0, -1, 1, 1, 0, 1}, {3, 4})}},
      {{"sigmoid_cross_entropy"}, "mean over the batch",
       [](const Vars& v) { return F::sigmoid_cross_entropy(v[0], v[1], false); },
       {input({3, 4}, 223, -3, 3), Tensor::from_vector<int32_t>({0, 1, -1, 1, 1, 0, 0, -1, 1, 1, 0, 1}, {3, 4})}},
      {{"sigmoid_cross_entropy"}, "per element",
       [](const Vars& v) { return F::sigmoid_cross_entropy(v[0], v[1], true, "no"); },
       {input({2, 3, 2}, 224, -3, 3), Tensor::from_vector<int32_t>({1, -1, 0, 0, 1, 1, -1, 0, 1, 0, 1, 0}, {2, 3, 2})}},
      {{"huber_loss"}, "summed along axis 1, delta 0.5",
       [](const Vars& v) { return F::huber_loss(v[0], v[1], 0.5); },
       {ops::add(input({5, 7}, 225), spaced({5, 7}, 226, 0.05)), input({5, 7}, 225)}},
      {{"huber_loss"}, "per element, delta 0.3",
       [](const Vars& v) { return F::huber_loss(v[0], v[1], 0.3, "no"); },
       {ops::add(input({3, 4}, 227), spaced({3, 4}, 228, 0.05)), input({3, 4}, 227)}},
      {{"convolution_2d"}, "3x3 pad 1 (the flipped data gradient)",
       [](const Vars& v) { return F::convolution_2d(v[0], v[1], v[2], 1, 1); },
       {input({2, 2, 5, 4}, 229), input({3, 2, 3, 3}, 230), input({3}, 231)}},
      {{"convolution_2d"}, "stride (2, 1), pad (0, 2), dilate (1, 2), cover_all",
       [](const Vars& v) { return F::convolution_2d(v[0], v[1], v[2], {2, 1}, {0, 2}, true, {1, 2}); },
       {input({2, 2, 6, 5}, 232), input({3, 2, 2, 3}, 233), input({3}, 234)}},
      {{"convolution_2d"}, "groups 2, x as data", [](const Vars& v) { return F::convolution_2d(v[0], v[1], Variable(), 1, 1, false, 1, 2); },
       {input({2, 4, 4, 3}, 235), input({4, 2, 3, 3}, 236)}, {true, false}},
      {{"convolution_2d"}, "1x1 (no lowering)", [](const Vars& v) { return F::convolution_2d(v[0], v[1], v[2]); },
       {input({3, 5, 2, 3}, 237), input({4, 5, 1, 1}, 238), input({4}, 239)}},
      {{"depthwise_convolution_2d"}, "multiplier 2, stride 2",
       [](const Vars& v) { return F::depthwise_convolution_2d(v[0], v[1], v[2], 2, 1); },
       {input({2, 3, 5, 5}, 240), input({2, 3, 3, 3}, 241), input({6}, 242)}},
      {{"deconvolution_2d"}, "stride 2, pad 1", [](const Vars& v) { return F::deconvolution_2d(v[0], v[1], v[2], 2, 1); },
       {input({2, 3, 3, 4}, 243), input({3, 2, 3, 3}, 244), input({2}, 245)}},
      {{"deconvolution_2d"}, "groups 2, outsize (8, 7)",
       [](const Vars& v) { return F::deconvolution_2d(v[0], v[1], Variable(), 2, {1, 0}, F::Pair(8, 7), 1, 2); },
       {input({1, 4, 4, 3}, 246), input({4, 1, 3, 2}, 247)}},
      {{"deconvolution_2d"}, "stride (1, 2), pad 1, dilate (2, 1)",
       [](const Vars& v) { return F::deconvolution_2d(v[0], v[1], v[2], {1, 2}, 1, std::nullopt, {2, 1}); },
       {input({2, 3, 4, 3}, 248), input({3, 2, 3, 2}, 249), input({2}, 250)}},
  };
  // The CNN functions beside the convolutions: pooling over odd sizes, overlapping and
  // non-square windows, padding and cover_all; local response normalization; the parametric
  // activations; batch normalization over other axes (a transposed copy for axis 1 of 3-D x).
  const auto bn_axis = [](F::Axes axis) -> Function {
    return [=](const Vars& v) {
      F::BatchNormalizationOptions options;
      options.axis = axis;
      return F::batch_normalization(v[0], v[1], v[2], options);
    };
  };
  const std::vector<FunctionCase> cnn_cases = {
      {{"max_pooling_2d"}, "k2 of (2, 3, 6, 6)", [](const Vars& v) { return F::max_pooling_2d(v[0], 2); },
       {spaced({2, 3, 6, 6}, 300)}},
      {{"max_pooling_2d"}, "k3 stride 2 pad 1, cover_all, odd 7x5",
       [](const Vars& v) { return F::max_pooling_2d(v[0], 3, 2, 1); }, {spaced({1, 2, 7, 5}, 301)}},
      {{"max_pooling_2d"}, "k (3, 2) stride (2, 1) pad (1, 0), no cover_all",
       [](const Vars& v) { return F::max_pooling_2d(v[0], {3, 2}, F::Pair{2, 1}, {1, 0}, false); },
       {spaced({2, 2, 6, 5}, 302)}},
      {{"average_pooling_2d"}, "k3 stride 2 pad 1 of (2, 2, 7, 6)",
       [](const Vars& v) { return F::average_pooling_2d(v[0], 3, 2, 1); }, {input({2, 2, 7, 6}, 303)}},
      {{"average_pooling_2d"}, "k (2, 3) stride 1", [](const Vars& v) { return F::average_pooling_2d(v[0], {2, 3}, 1); },
       {input({1, 3, 4, 5}, 304)}},
      {{"unpooling_2d"}, "k2, cover_all (odd output)", [](const Vars& v) { return F::unpooling_2d(v[0], 2); },
       {input({2, 2, 3, 4}, 305)}},
      {{"unpooling_2d"}, "k3 stride 1 pad 1 (overlapping), outsize (4, 5)",
       [](const Vars& v) { return F::unpooling_2d(v[0], 3, 1, 1, F::Pair{4, 5}); }, {input({1, 2, 4, 5}, 306)}},
      {{"local_response_normalization"}, "n 5 of (2, 7, 3, 2)",
       [](const Vars& v) { return F::local_response_normalization(v[0], 5, 2, 0.1, 0.75); },
       {input({2, 7, 3, 2}, 307, -2, 2)}},
      {{"local_response_normalization"}, "n 4 of (3, 5)",
       [](const Vars& v) { return F::local_response_normalization(v[0], 4, 1, 0.5, 0.6); },
       {input({3, 5}, 308, -2, 2)}},
      {{"leaky_relu"}, "default arguments", [](const Vars& v) { return F::leaky_relu(v[0]); }, {away_from_zero({5, 7}, 309)}},
      {{"elu"}, "alpha 1.5", [](const Vars& v) { return F::elu(v[0], 1.5); }, {away_from_zero({5, 7}, 310)}},
      {{"softplus"}, "beta 2", [](const Vars& v) { return F::softplus(v[0], 2.0); }, {input({5, 7}, 311, -3, 3)}},
      {{"flatten"}, "default arguments", [](const Vars& v) { return F::flatten(v[0]); }, {input({2, 3, 2}, 312)}},
      {{"mean"}, "over axes (2, 3): global average pooling", [](const Vars& v) { return F::mean(v[0], {2, 3}); },
       {input({2, 3, 4, 5}, 313)}},
      {{"batch_normalization"}, "of (8, 2, 2, 3), gamma (2, 2, 3): axis 0", bn_axis({}),
       {input({8, 2, 2, 3}, 314, -2, 2), input({2, 2, 3}, 315, 0.5, 2), input({2, 2, 3}, 316)}},
      {{"batch_normalization"}, "of (3, 8, 2) over axis 1 (channels apart)", bn_axis(1),
       {input({3, 8, 2}, 317, -2, 2), input({3, 2}, 318, 0.5, 2), input({3, 2}, 319)}},
      {{"batch_normalization"}, "of (4, 3, 5), channels last: axis (0, 1)", bn_axis(F::Axes{0, 1}),
       {input({4, 3, 5}, 320, -2, 2), input({5}, 321, 0.5, 2), input({5}, 322)}},
      {{"fixed_batch_normalization"}, "of (3, 4, 2) over axis 1",
       [](const Vars& v) { return F::fixed_batch_normalization(v[0], v[1], v[2], v[3], v[4], 2e-5, 1); },
       {input({3, 4, 2}, 323), input({3, 2}, 324), input({3, 2}, 325), input({3, 2}, 326),
        input({3, 2}, 327, 0.5, 2)}},
  };
  cases.insert(cases.end(), cnn_cases.begin(), cnn_cases.end());
  // The sequence models' pieces: embeddings, the LSTM cell, products over batches.
  const std::vector<FunctionCase> sequence_cases = {
      {{"embed_id"}, "ids (2, 3) into a table of 5 vectors of 4",
       [](const Vars& v) { return F::embed_id(v[0], v[1]); },
       {Tensor::from_vector<int32_t>({4, 0, 2, 2, 1, 4}, {2, 3}), input({5, 4}, 400)}},
      {{"embed_id"}, "ignore_label -1 gives zeros and no gradient",
       [](const Vars& v) { return F::embed_id(v[0], v[1], -1); },
       {Tensor::from_vector<int32_t>({3, -1, 0, 3, -1}), input({4, 3}, 401)}},
      {{"lstm"}, "c_prev (3, 4), x (3, 16): the output h",
       [](const Vars& v) { return F::lstm(v[0], v[1]).second; }, {input({3, 4}, 402), input({3, 16}, 403, -2, 2)}},
      {{"lstm"}, "c_prev (4, 3), x (2, 12): c with the rows beyond x passed through, and h",
       [](const Vars& v) {
         auto [c, h] = F::lstm(v[0], v[1]);
         return F::sum(c * c) + 2.0 * F::sum(h);
       },
       {input({4, 3}, 404), input({2, 12}, 405, -2, 2)}},
      {{"matmul"}, "stacks (2, 3, 4) and (2, 4, 5)", [](const Vars& v) { return F::matmul(v[0], v[1]); },
       {input({2, 3, 4}, 406), input({2, 4, 5}, 407)}},
      {{"matmul"}, "stacks (2, 1, 4, 3)^T and (3, 4, 2), leading axes broadcast",
       [](const Vars& v) { return F::matmul(v[0], v[1], true, false); }, {input({2, 1, 4, 3}, 408), input({3, 4, 2}, 409)}},
      {{"matmul"}, "a matrix (3, 4) and a stack (2, 5, 4)^T",
       [](const Vars& v) { return F::matmul(v[0], v[1], false, true); }, {input({3, 4}, 410), input({2, 5, 4}, 411)}},
      {{"matmul"}, "a vector (4,) and a stack (2, 4, 3)", [](const Vars& v) { return F::matmul(v[0], v[1]); },
       {input({4}, 412), input({2, 4, 3}, 413)}},
      {{"matmul"}, "a matrix (3, 4) and a vector (4,)", [](const Vars& v) { return F::matmul(v[0], v[1]); },
       {input({3, 4}, 414), input({4}, 415)}},
      {{"matmul"}, "two vectors: the dot product", [](const Vars& v) { return F::matmul(v[0], v[1]); },
       {input({5}, 416), input({5}, 417)}},
      {{"batch_matmul"}, "(3, 4, 2) and (3, 2, 5)", [](const Vars& v) { return F::batch_matmul(v[0], v[1]); },
       {input({3, 4, 2}, 418), input({3, 2, 5}, 419)}},
      {{"batch_matmul"}, "batches of vectors (3, 4)^T and (3, 4): their dot products",
       [](const Vars& v) { return F::batch_matmul(v[0], v[1], true, false); }, {input({3, 4}, 420), input({3, 4}, 421)}},
  };
  cases.insert(cases.end(), sequence_cases.begin(), sequence_cases.end());
  cases.push_back(
      {{"transpose_sequence"}, "sequences of lengths 3, 2, 2 and 0 to steps and back",
       [](const Vars& v) {
         const Vars steps = F::transpose_sequence(v);
         const Vars back = F::transpose_sequence(steps);
         return F::sum(F::concat(steps, 0) * F::concat(steps, 0)) + F::sum(F::tanh(F::concat(back, 0)));
       },
       {input({3, 2}, 430), input({2, 2}, 431), input({2, 2}, 432), input({0, 2}, 433)}});
  cases.push_back({{"pad_sequence"}, "lengths 2, 4 and 3 to length 5, padding -1",
                   [](const Vars& v) { return F::pad_sequence(v, 5, -1.0); },
                   {input({2, 3}, 434), input({4, 3}, 435), input({3, 3}, 436)}});
  // The stacks: inputs hx (and cx for LSTMs), the 2 N arrays of each layer and direction (w0 ..
  // w(N-1), b0 .. b(N-1)), then the steps; the result mixes hy, cy and every step's output.
  const auto stack_case = [](const std::string& kind, bool bi, int64_t layers, int64_t in, int64_t units,
                             std::vector<int64_t> batches, uint64_t seed) {
    const int64_t directions = bi ? 2 : 1, batch = batches.front();
    const bool lstm = kind == "lstm";
    const int n = lstm ? 8 : kind == "gru" ? 6 : 2;
    const size_t states = lstm ? 2 : 1;
    std::vector<Tensor> inputs;
    for (size_t s = 0; s < states; ++s) inputs.push_back(input({layers * directions, batch, units}, seed++));
    for (int64_t layer = 0; layer < layers; ++layer)
      for (int64_t d = 0; d < directions; ++d) {
        for (int j = 0; j < n; ++j)
          inputs.push_back(input({units, j < n / 2 ? (layer ? units * directions : in) : units}, seed++, -0.8, 0.8));
        for (int j = 0; j < n; ++j) inputs.push_back(input({units}, seed++));
      }
    for (int64_t b : batches) inputs.push_back(input({b, in}, seed++));
    const size_t params = size_t(layers * directions), per = size_t(2 * n);
    Function f = [=](const Vars& v) {
      std::vector<Vars> ws(params), bs(params);
      for (size_t k = 0; k < params; ++k) {
        ws[k] = Vars(v.begin() + long(states + per * k), v.begin() + long(states + per * k + n));
        bs[k] = Vars(v.begin() + long(states + per * k + n), v.begin() + long(states + per * (k + 1)));
      }
      const Vars xs(v.begin() + long(states + per * params), v.end());
      Variable hy, cy;
      Vars ys;
      if (lstm) {
        auto r = bi ? F::n_step_bilstm(layers, 0.0, v[0], v[1], ws, bs, xs) : F::n_step_lstm(layers, 0.0, v[0], v[1], ws, bs, xs);
        hy = r.hy, cy = r.cy, ys = r.ys;
      } else {
        auto r = kind == "gru" ? (bi ? F::n_step_bigru(layers, 0.0, v[0], ws, bs, xs) : F::n_step_gru(layers, 0.0, v[0], ws, bs, xs))
                               : (bi ? F::n_step_birnn(layers, 0.0, v[0], ws, bs, xs, kind)
                                     : F::n_step_rnn(layers, 0.0, v[0], ws, bs, xs, kind));
        hy = r.hy, ys = r.ys;
      }
      Variable out = F::sum(hy * hy) + 0.5 * F::sum(F::concat(ys, 0) * F::concat(ys, 0));
      return cy.defined() ? out + F::sum(F::tanh(cy)) : out;
    };
    return std::pair{f, inputs};
  };
  const auto add_stack = [&](const char* function, const std::string& kind, bool bi, const char* name,
                             std::vector<int64_t> batches, uint64_t seed) {
    auto [f, in] = stack_case(kind, bi, 2, bi ? 3 : 2, bi ? 2 : 3, std::move(batches), seed);
    cases.push_back({{function}, name, f, in});
  };
  add_stack("n_step_lstm", "lstm", false, "2 layers of 3 units, batches of 3, 2, 2, 1 sequences", {3, 2, 2, 1}, 440);
  add_stack("n_step_bilstm", "lstm", true, "2 bidirectional layers of 2 units, batches of 3, 3, 1", {3, 3, 1}, 500);
  add_stack("n_step_gru", "gru", false, "2 layers of 3 units, batches of 3, 2, 2, 1 sequences", {3, 2, 2, 1}, 560);
  add_stack("n_step_bigru", "gru", true, "2 bidirectional layers of 2 units, batches of 3, 3, 1", {3, 3, 1}, 620);
  add_stack("n_step_rnn", "tanh", false, "tanh, 2 layers of 3 units, batches of 3, 2, 2, 1", {3, 2, 2, 1}, 680);
  add_stack("n_step_birnn", "tanh", true, "tanh, 2 bidirectional layers of 2 units, batches of 3, 3, 1", {3, 3, 1},
            700);

  for (int mode = 0; mode < 4; ++mode) {
    const bool ta = mode & 1, tb = mode & 2;
    cases.push_back({{"matmul"}, str(ta ? "a transposed" : "a", tb ? ", b transposed" : ", b"),
                     [=](const Vars& v) { return F::matmul(v[0], v[1], ta, tb); },
                     {input(ta ? Shape{3, 5} : Shape{5, 3}, 60 + uint64_t(mode)),
                      input(tb ? Shape{4, 3} : Shape{3, 4}, 70 + uint64_t(mode))}});
  }
  return cases;
}

// Three steps of RULE on two parameters, (5, 7) and (13,), whose tensors (param, grad, then the
// rule's states) are the inputs in that order; scalars differ per parameter and per step.
KernelCase update_case(UpdateRule rule, uint64_t seed) {
  const auto ranges = update_state_ranges(rule);
  if (int(ranges.size()) != update_rule_states(rule))
    throw Error(str("update_case: ", ranges.size(), " state ranges for ", update_rule_name(rule)));
  const size_t per_param = 2 + ranges.size();
  std::vector<Tensor> inputs;
  for (const Shape& shape : {Shape{5, 7}, Shape{13}}) {
    inputs.push_back(input(shape, seed++));
    inputs.push_back(input(shape, seed++));
    for (const auto& [lo, hi] : ranges) inputs.push_back(input(shape, seed++, lo, hi));
  }
  auto run = [rule, per_param](std::vector<Tensor>& t) {
    std::vector<ParamTensors> params;
    for (size_t at = 0; at < t.size(); at += per_param) {
      ParamTensors p{t[at], t[at + 1], Tensor(), Tensor(), Tensor()};
      Tensor* states[] = {&p.state0, &p.state1, &p.state2};
      for (size_t k = 2; k < per_param; ++k) *states[k - 2] = t[at + k];
      params.push_back(p);
    }
    int step = 0;
    const UpdateScalarsFn scalars = [&step](size_t i) { return update_test_scalars(i, step); };
    for (step = 0; step < 3; ++step) ops::update_(rule, params, scalars);
    std::vector<Tensor> out;  // every parameter and state (the gradients are read only)
    for (size_t at = 0; at < t.size(); at += per_param)
      for (size_t k = 0; k < per_param; ++k)
        if (k != 1) out.push_back(t[at + k]);
    return out;
  };
  return {str("update_: three steps of ", update_rule_name(rule), " on two parameters"), run, inputs};
}

std::vector<KernelCase> make_kernel_cases() {
  std::vector<KernelCase> cases = {
      {"take_rows: rows in any order, repeated",
       [](std::vector<Tensor>& t) { return std::vector<Tensor>{ops::take_rows(t[0], {3, 0, 3, 1})}; },
       {input({4, 2, 3}, 400)}},
      {"axpy_: y += 0.5 x, then scale_ by -2",
       [](std::vector<Tensor>& t) {
         ops::axpy_(t[0], 0.5, t[1]);
         ops::scale_(t[0], -2.0);
         return std::vector<Tensor>{t[0]};
       },
       {input({5, 7}, 401), input({5, 7}, 402)}},
      {"accumulate_: one-element values into a float64 accumulator",
       [](std::vector<Tensor>& t) {
         Tensor acc = Tensor::zeros({}, DType::Float64, t[0].device());
         ops::accumulate_(acc, t[0]);
         ops::accumulate_(acc, t[1]);
         return std::vector<Tensor>{acc};
       },
       {input({}, 403), input({1}, 404)}},
      {"sum_of_squares and clip_grads_by_norm_ to a norm below the gradients'",
       [](std::vector<Tensor>& t) {
         const double before = ops::sum_of_squares(t[0]) + ops::sum_of_squares(t[1]);
         std::vector<Tensor> grads = {t[0], t[1]};
         ops::clip_grads_by_norm_(grads, 0.5);
         return std::vector<Tensor>{Tensor::from_vector<double>({before}), grads[0], grads[1]};
       },
       {input({5, 7}, 405), input({13}, 406)}},
      {"random_normal: samples from a generator of a fixed seed, of the input's shape and dtype",
       [](std::vector<Tensor>& t) {
         Generator gen(77);
         return std::vector<Tensor>{ops::random_normal(t[0].shape(), 0.5, 2.0, t[0].dtype(), t[0].device(), gen)};
       },
       {input({6, 5}, 407)}},
  };
  uint64_t seed = 500;
#define CHAINER_UPDATE_CASE(RULE, NAME, STATES) cases.push_back(update_case(UpdateRule::RULE, seed += 20));
  CHAINER_UPDATE_RULES(CHAINER_UPDATE_CASE)
#undef CHAINER_UPDATE_CASE
  return cases;
}

}  // namespace

const std::vector<FunctionCase>& function_cases() {
  static const std::vector<FunctionCase> cases = make_function_cases();
  return cases;
}

const std::vector<KernelCase>& kernel_cases() {
  static const std::vector<KernelCase> cases = make_kernel_cases();
  return cases;
}

std::vector<std::pair<double, double>> update_state_ranges(UpdateRule rule) {
  switch (rule) {
    case UpdateRule::SGD: return {};
    case UpdateRule::MomentumSGD:
    case UpdateRule::NesterovAG: return {{-0.1, 0.1}};
    case UpdateRule::Adam: return {{-0.1, 0.1}, {0.01, 1}};
    case UpdateRule::AMSGrad: return {{-0.1, 0.1}, {0.01, 1}, {0.01, 1}};
    case UpdateRule::AdaGrad:
    case UpdateRule::RMSprop: return {{0.01, 1}};
    case UpdateRule::AdaDelta: return {{0.01, 1}, {0.01, 1}};
    case UpdateRule::RMSpropGraves: return {{0.5, 1}, {-0.1, 0.1}, {-0.1, 0.1}};
    case UpdateRule::SMORMS3: return {{1, 3}, {-0.1, 0.1}, {0.01, 1}};
  }
  throw Error(str("update_state_ranges: no ranges for rule ", update_rule_name(rule)));
}

UpdateScalars update_test_scalars(size_t i, int step) {
  const double k = 1 + 0.1 * double(i), s = double(step) + 1;
  return UpdateScalars{.lr = 0.01 * k / s, .beta1 = 0.9 - 0.01 * k, .beta2 = 0.999 - 0.001 * k, .eps = 1e-8 * k,
                       .eta = 1.0 - 0.05 * k, .weight_decay_rate = 1e-3 * k, .momentum = 0.9 - 0.02 * k,
                       .alpha = 0.95 - 0.01 * k, .rho = 0.9 + 0.005 * k, .eps_inside_sqrt = i % 2 == 1};
}

std::string shapes_of(const std::vector<Tensor>& inputs) {
  std::string s;
  for (const Tensor& t : inputs) s += (s.empty() ? "" : " ") + shape_str(t.shape());
  return s;
}

Vars case_variables(const FunctionCase& c, DType dtype, Device device) {
  Vars vars;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const Tensor& x = c.inputs[i];
    const bool floating = is_floating(x.dtype());
    const bool data = i < c.no_grads.size() && c.no_grads[i];
    vars.emplace_back((floating ? x.astype(dtype) : x).to(device), floating && !data);
  }
  return vars;
}

std::vector<std::pair<std::string, Tensor>> forward_backward(const FunctionCase& c, DType dtype, Device device) {
  Vars vars = case_variables(c, dtype, device);
  Variable y = c.f(vars);
  std::vector<std::pair<std::string, Tensor>> out{{"the output", y.data()}};
  if (!y.creator()) return out;
  Generator gen(7);
  y.set_grad(random::normal(y.shape(), 0, 1, DType::Float64, &gen).astype(y.dtype()).to(device));
  y.backward();
  for (size_t i = 0; i < vars.size(); ++i)
    if (vars[i].requires_grad()) out.push_back({str("the gradient of input ", i), vars[i].grad()});
  return out;
}

std::vector<Tensor> run_kernel_case(const KernelCase& c, DType dtype, Device device) {
  std::vector<Tensor> inputs;
  for (const Tensor& x : c.inputs) inputs.push_back((is_floating(x.dtype()) ? x.astype(dtype) : x).to(device));
  return c.run(inputs);
}

}  // namespace chainer::testing
