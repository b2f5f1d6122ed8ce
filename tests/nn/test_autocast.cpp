// Tests of mixed precision's policy (nn/autocast.h): config::dtype and AutocastScope decide which
// dtype each function computes in and which dtype links create their parameters in; a mixed
// model's gradients reach its float32 parameters in float32 and agree with the float32 model's
// within the half type's precision.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/ops/ops.h"
#include "nn/autocast.h"
#include "nn/functions.h"
#include "nn/links/batch_normalization.h"
#include "nn/links/convolution_2d.h"
#include "nn/links/embed_id.h"
#include "nn/links/linear.h"
#include "nn/links/n_step_rnn.h"
#include "tests/function_inputs.h"

namespace F = chainer::functions;
namespace L = chainer::links;
using namespace chainer;
using namespace chainer::testing;
using config::Dtype;

TEST_CASE("autocast: config::dtype names and the dtypes it maps to", "[autocast]") {
  CHECK(config::dtype() == Dtype::Float32);
  CHECK_FALSE(autocast_dtype().has_value());
  CHECK(param_dtype() == DType::Float32);
  for (Dtype d : {Dtype::Float32, Dtype::Float64, Dtype::Float16, Dtype::BFloat16, Dtype::Mixed16, Dtype::MixedBf16})
    CHECK(config::parse_dtype(config::dtype_name(d)) == d);
  CHECK(std::string(config::dtype_name(Dtype::MixedBf16)) == "mixed_bf16");
  REQUIRE_THROWS_WITH(config::parse_dtype("half"),
                      Catch::Contains("dtype must be float32, float64, float16, bfloat16, mixed16 or mixed_bf16, not 'half'"));
  struct Row {
    Dtype config;
    std::optional<DType> compute;
    DType params;
  };
  for (const Row& r : {Row{Dtype::Float64, std::nullopt, DType::Float64}, Row{Dtype::Float16, DType::Float16, DType::Float16},
                       Row{Dtype::BFloat16, DType::BFloat16, DType::BFloat16},
                       Row{Dtype::Mixed16, DType::Float16, DType::Float32},
                       Row{Dtype::MixedBf16, DType::BFloat16, DType::Float32}}) {
    INFO(config::dtype_name(r.config));
    config::DtypeScope scope(r.config);
    CHECK(autocast_dtype() == r.compute);
    CHECK(param_dtype() == r.params);
    // Links made now create their parameters in param_dtype(), lazily initialized ones too.
    L::Linear eager(3, 2), lazy(2);
    CHECK(eager.W().dtype() == r.params);
    CHECK(eager.b()->dtype() == r.params);
    lazy(Variable(Tensor::ones({1, 3}, r.params == DType::Float64 ? DType::Float64 : DType::Float32)));
    CHECK(lazy.W().dtype() == r.params);
  }
  CHECK(config::dtype() == Dtype::Float32);  // the scope restored it
}

TEST_CASE("autocast: the half list computes in half, the full-precision list in float32", "[autocast]") {
  const Variable x(uniform({4, 6}, 1, -1, 1, DType::Float32));
  Variable W(uniform({3, 6}, 2, -1, 1, DType::Float32), true), b(uniform({3}, 3, -1, 1, DType::Float32), true);
  const Variable t(labels({0, 2, 1, 1}));
  for (DType half : {DType::Float16, DType::BFloat16}) {
    INFO(dtype_name(half));
    AutocastScope autocast(half);
    const Variable y = F::linear(x, W, b);
    CHECK(y.dtype() == half);
    CHECK(F::relu(y).dtype() == half);  // elementwise: the input's dtype
    CHECK(F::matmul(x, x, false, true).dtype() == half);
    const Variable image(uniform({2, 3, 5, 5}, 4, -1, 1, DType::Float32));
    const Variable filters(uniform({4, 3, 3, 3}, 5, -1, 1, DType::Float32));
    const Variable conv = F::convolution_2d(image, filters);
    CHECK(conv.dtype() == half);
    CHECK(F::max_pooling_2d(conv, {2, 2}).dtype() == half);
    CHECK(F::dropout(conv, 0.5).dtype() == half);
    // Softmax and the losses widen; the normalizations come back in the input's dtype.
    CHECK(F::softmax(y).dtype() == DType::Float32);
    CHECK(F::log_softmax(y).dtype() == DType::Float32);
    const Variable loss = F::softmax_cross_entropy(y, t);
    CHECK(loss.dtype() == DType::Float32);
    CHECK(F::accuracy(y, t).dtype() == DType::Float32);
    CHECK(F::mean_squared_error(y, F::cast(Variable(Tensor::zeros({4, 3})), half)).dtype() == DType::Float32);
    const Variable gamma(Tensor::ones({4}), true), beta(Tensor::zeros({4}), true);
    CHECK(F::batch_normalization(conv, gamma, beta).dtype() == half);
    CHECK(F::local_response_normalization(conv).dtype() == half);
    // float64 is left alone, as torch.autocast leaves it.
    CHECK(F::linear(Variable(uniform({2, 6}, 6)), Variable(uniform({3, 6}, 7))).dtype() == DType::Float64);
    {
      AutocastScope off(half, /*enabled=*/false);  // a full-precision region inside
      CHECK(F::linear(x, W, b).dtype() == DType::Float32);
    }
    CHECK(F::linear(x, W, b).dtype() == half);
    // The parameters' gradients arrive in their own dtype, float32.
    W.cleargrad();
    b.cleargrad();
    loss.backward();
    REQUIRE(W.grad().defined());
    CHECK(W.grad().dtype() == DType::Float32);
    CHECK(b.grad().dtype() == DType::Float32);
  }
  CHECK(F::linear(x, W, b).dtype() == DType::Float32);  // no scope, float32 config: no casting
  REQUIRE_THROWS_WITH(AutocastScope(DType::Float32), Catch::Contains("AutocastScope: dtype float32 is not a half type"));
}

// A small CNN and MLP under mixed16 and mixed_bf16 against the same model in float32 (the same
// parameters, made before the config changes): the loss and every parameter's gradient agree to
// a few units of the half type's roundoff relative to their scale (each value passes through a
// handful of roundings to half; the products accumulate in float32).
TEST_CASE("autocast: a mixed model's loss and gradients match float32's to half precision", "[autocast]") {
  auto model_loss = [](L::Convolution2D& conv, L::BatchNormalization& bn, L::Linear& fc, const Variable& x,
                       const Variable& t) {
    const Variable h = F::max_pooling_2d(F::relu(bn(conv(x))), {2, 2});
    return F::softmax_cross_entropy(fc(h), t);
  };
  L::Convolution2D conv(3, 8, 3, 1, 1, /*nobias=*/true);  // a bias before batch normalization has no gradient
  L::BatchNormalization bn(8);
  L::Linear fc(8 * 4 * 4, 5);
  const Variable x(uniform({6, 3, 8, 8}, 10, -1, 1, DType::Float32));
  const Variable t(labels({0, 1, 2, 3, 4, 0}));
  auto gradients = [&](const Variable& loss) {
    for (Link* l : std::vector<Link*>{&conv, &bn, &fc}) l->cleargrads();
    loss.backward();
    std::vector<Tensor> g;
    for (Link* l : std::vector<Link*>{&conv, &bn, &fc})
      for (auto& [name, p] : l->namedparams()) g.push_back(p.grad().astype(DType::Float64));
    return g;
  };
  const Variable loss32 = model_loss(conv, bn, fc, x, t);
  const std::vector<Tensor> g32 = gradients(loss32);
  for (Dtype mode : {Dtype::Mixed16, Dtype::MixedBf16}) {
    INFO(config::dtype_name(mode));
    config::DtypeScope scope(mode);
    const double u = mode == Dtype::Mixed16 ? 0x1p-11 : 0x1p-8;
    const Variable loss = model_loss(conv, bn, fc, x, t);
    CHECK(loss.dtype() == DType::Float32);
    CHECK(std::fabs(loss.data().item_double() - loss32.data().item_double()) <= 16 * u * loss32.data().item_double());
    const std::vector<Tensor> g = gradients(loss);
    REQUIRE(g.size() == g32.size());
    for (size_t i = 0; i < g.size(); ++i) {
      INFO("parameter " << i);
      const double scale = ops::amax(ops::abs(g32[i]), {}, false).item_double();
      CHECK(ops::amax(ops::abs(ops::sub(g[i], g32[i])), {}, false).item_double() <= 32 * u * scale);
    }
  }
}

TEST_CASE("autocast: recurrent stacks and embeddings run under every config, in float32", "[autocast]") {
  for (Dtype mode : {Dtype::Float16, Dtype::BFloat16, Dtype::Mixed16, Dtype::MixedBf16}) {
    INFO(config::dtype_name(mode));
    config::DtypeScope scope(mode);
    L::EmbedID embed(7, 4);
    L::NStepLSTM lstm(1, 4, 5, 0.0);
    CHECK(embed.W().dtype() == param_dtype());
    const std::vector<Variable> xs{embed(Variable(Tensor::from_vector<int32_t>({1, 2, 3}))),
                                   embed(Variable(Tensor::from_vector<int32_t>({4, 5})))};
    const auto r = lstm.forward(Variable(), Variable(), xs);
    REQUIRE(r.ys.size() == 2);
    CHECK(r.ys[0].dtype() == DType::Float32);
    F::sum(F::concat(r.ys, 0)).backward();
    for (auto& [name, p] : lstm.namedparams()) {
      INFO(name);
      REQUIRE(p.grad().defined());
      CHECK(p.grad().dtype() == param_dtype());  // the gradient of a half parameter is half
    }
    REQUIRE(embed.W().grad().defined());
    CHECK(embed.W().grad().dtype() == param_dtype());
  }
}

// Batch normalization reads and writes half and keeps its statistics, gamma and beta in float32:
// its output is float32's on the same (half) input rounded once, give or take the rounding of
// the float32 computations, and what backward keeps of x is half.
TEST_CASE("autocast: batch normalization of half activations stays in half", "[autocast]") {
  for (DType half : {DType::Float16, DType::BFloat16}) {
    INFO(dtype_name(half));
    const double u = half == DType::Float16 ? 0x1p-11 : 0x1p-8;
    // A mean far from 0 against the spread: a float32 mean keeps the centred values exact.
    const Tensor x16 = ops::add_scalar(uniform({8, 3, 4, 5}, 21, -1, 1, DType::Float32), 20.0).astype(half);
    Variable x(x16, true), x32(x16.astype(DType::Float32), true);
    Variable gamma(uniform({3}, 22, 0.5, 1.5, DType::Float32), true), beta(uniform({3}, 23, -1, 1, DType::Float32), true);
    const Variable y = F::batch_normalization(x, gamma, beta);
    CHECK(y.dtype() == half);
    const Variable y32 = F::batch_normalization(x32, gamma, beta);
    const std::vector<double> got = values(y), want = values(y32);
    for (size_t i = 0; i < got.size(); ++i) CHECK(std::fabs(got[i] - want[i]) <= 2 * u * std::fabs(want[i]) + 1e-3);
    const Tensor gy = uniform({8, 3, 4, 5}, 24, -1, 1, DType::Float32);
    F::sum(F::mul(y, Variable(gy.astype(half)))).backward();
    const std::vector<Tensor> g{x.grad(), gamma.grad(), beta.grad()};
    gamma.cleargrad(), beta.cleargrad();
    F::sum(F::mul(y32, Variable(gy.astype(half).astype(DType::Float32)))).backward();
    const std::vector<Tensor> g32{x32.grad(), gamma.grad(), beta.grad()};
    CHECK(g[0].dtype() == half);
    CHECK(g[1].dtype() == DType::Float32);
    for (size_t k = 0; k < g.size(); ++k) {
      INFO("gradient " << k);
      const Tensor diff = ops::sub(g[k].astype(DType::Float64), g32[k].astype(DType::Float64));
      const double scale = ops::amax(ops::abs(g32[k].astype(DType::Float64)), {}, false).item_double();
      CHECK(ops::amax(ops::abs(diff), {}, false).item_double() <= 8 * u * scale);
    }
  }
}
