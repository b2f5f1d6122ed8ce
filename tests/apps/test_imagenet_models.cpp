// The ImageNet example's links (Inception, InceptionBN) against the same computation written with
// functions, with finite-difference gradients in float64; and its five models (apps/imagenet):
// a forward and backward on a small batch, the reported values, the output shape, and the
// parameter count at 1000 classes derived by hand from the layer shapes.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "apps/imagenet/model.h"
#include "function_inputs.h"
#include "nn/functions.h"
#include "nn/links/inception.h"
#include "nn/links/inceptionbn.h"
#include "nn/links/mlp_convolution_2d.h"
#include "nn/reporter.h"

using namespace chainer;
namespace F = chainer::functions;
namespace L = chainer::links;
using chainer::testing::values;

namespace {

void require_close(const Variable& a, const Variable& b, double tol) {
  REQUIRE(a.shape() == b.shape());
  std::vector<double> va = values(a), vb = values(b);
  for (size_t i = 0; i < va.size(); ++i) REQUIRE(va[i] == Approx(vb[i]).margin(tol));
}

// A float64 copy of a link's parameter, to pass to check_backward.
Tensor f64(const Variable& p) { return p.data().astype(DType::Float64); }

}  // namespace

TEST_CASE("Inception: the four paths, concatenated and rectified", "[links]") {
  L::Inception inc(4, 2, 3, 5, 2, 3, 1);
  Variable x(testing::uniform({2, 4, 5, 7}, 1, -1, 1, DType::Float32));
  Variable y = inc(x);
  REQUIRE(y.shape() == Shape{2, 2 + 5 + 3 + 1, 5, 7});
  auto conv = [](const Variable& h, L::Convolution2D& c) {
    return F::convolution_2d(h, c.W(), *c.b(), c.stride(), c.pad());
  };
  Variable expected = F::relu(F::concat({conv(x, *inc.conv1), conv(F::relu(conv(x, *inc.proj3)), *inc.conv3),
                                         conv(F::relu(conv(x, *inc.proj5)), *inc.conv5),
                                         conv(F::max_pooling_2d(x, 3, 1, 1), *inc.projp)},
                                        1));
  require_close(y, expected, 1e-6);
  // Chainer's names, so snapshots of the example's models keep theirs.
  std::vector<std::string> names;
  for (const auto& [name, p] : inc.namedparams()) names.push_back(name);
  REQUIRE(names == std::vector<std::string>{"/conv1/W", "/conv1/b", "/conv3/W", "/conv3/b", "/conv5/W", "/conv5/b",
                                            "/proj3/W", "/proj3/b", "/proj5/W", "/proj5/b", "/projp/W", "/projp/b"});
}

TEST_CASE("Inception: lazy in_channels and the gradients of the input and every parameter", "[links]") {
  L::Inception lazy(std::nullopt, 1, 2, 1, 1, 2, 1);
  REQUIRE(lazy((Variable(testing::uniform({1, 3, 4, 4}, 2, -1, 1, DType::Float32)))).shape() == Shape{1, 5, 4, 4});
  REQUIRE(lazy.proj5->in_channels() == 3);

  L::Inception inc(2, 1, 2, 1, 1, 2, 1);
  std::vector<L::Convolution2D*> convs{inc.conv1.get(), inc.proj3.get(), inc.conv3.get(),
                                       inc.proj5.get(), inc.conv5.get(), inc.projp.get()};
  std::vector<Tensor> inputs{testing::away_from_zero({2, 2, 3, 4}, 3)};
  for (L::Convolution2D* c : convs) {
    inputs.push_back(f64(c->W()));
    inputs.push_back(f64(*c->b()));
  }
  testing::check(
      [&](const std::vector<Variable>& v) {
        for (size_t i = 0; i < convs.size(); ++i) {
          convs[i]->W() = v[1 + 2 * i];
          *convs[i]->b() = v[2 + 2 * i];
        }
        return inc(v[0]);
      },
      inputs);
}

namespace {

// InceptionBN written out with functions: convolutions without bias, batch normalization with the
// batch's statistics (training), the pooling and the concatenation.
Variable inception_bn_reference(L::InceptionBN& inc, const Variable& x) {
  auto cbr = [](const Variable& h, L::Convolution2D& c, L::BatchNormalization& n) {
    return F::relu(F::batch_normalization(F::convolution_2d(h, c.W(), Variable(), c.stride(), c.pad()), *n.gamma(),
                                          *n.beta()));
  };
  std::vector<Variable> outs;
  if (inc.out1() > 0) outs.push_back(cbr(x, *inc.conv1, *inc.conv1n));
  outs.push_back(cbr(cbr(x, *inc.proj3, *inc.proj3n), *inc.conv3, *inc.conv3n));
  outs.push_back(
      cbr(cbr(cbr(x, *inc.proj33, *inc.proj33n), *inc.conv33a, *inc.conv33an), *inc.conv33b, *inc.conv33bn));
  Variable p = inc.pooltype() == "max" ? F::max_pooling_2d(x, 3, inc.stride(), 1, false)
                                       : F::average_pooling_2d(x, 3, inc.stride(), 1);
  if (inc.proj_pool()) p = cbr(p, *inc.poolp, *inc.poolpn);
  outs.push_back(p);
  return F::concat(outs, 1);
}

}  // namespace

TEST_CASE("InceptionBN: each configuration against its functions", "[links]") {
  Variable x(testing::uniform({2, 4, 5, 7}, 4, -1, 1, DType::Float32));
  SECTION("a 1x1 path, average pooling with its projection") {
    L::InceptionBN inc(4, 2, 3, 5, 2, 3, "avg", 1);
    Variable y = inc(x);
    REQUIRE(y.shape() == Shape{2, 2 + 5 + 3 + 1, 5, 7});
    require_close(y, inception_bn_reference(inc, x), 1e-5);
  }
  SECTION("no 1x1 path, max pooling without projection, stride 2: the input's channels pass through") {
    L::InceptionBN inc(std::nullopt, 0, 3, 5, 2, 3, "max", std::nullopt, 2);
    Variable y = inc(x);
    REQUIRE(y.shape() == Shape{2, 5 + 3 + 4, 3, 4});
    REQUIRE(inc.conv1 == nullptr);
    REQUIRE(inc.poolp == nullptr);
    require_close(y, inception_bn_reference(inc, x), 1e-5);
  }
}

TEST_CASE("InceptionBN: gradients of the input and the convolutions in float64", "[links]") {
  for (const std::string pooltype : {"avg", "max"}) {
    const bool with_1x1 = pooltype == "avg";
    L::InceptionBN inc(2, with_1x1 ? 1 : 0, 2, 1, 1, 2, pooltype, with_1x1 ? std::optional<int64_t>(1) : std::nullopt,
                       with_1x1 ? 1 : 2, {}, DType::Float64);
    std::vector<L::Convolution2D*> convs{inc.proj3.get(), inc.conv3.get(), inc.proj33.get(), inc.conv33a.get(),
                                         inc.conv33b.get()};
    if (with_1x1) {
      convs.push_back(inc.conv1.get());
      convs.push_back(inc.poolp.get());
    }
    std::vector<Tensor> inputs{testing::away_from_zero({3, 2, 3, 5}, 5)};
    for (L::Convolution2D* c : convs) inputs.push_back(f64(c->W()));
    INFO("pooltype " << pooltype);
    testing::check(
        [&](const std::vector<Variable>& v) {
          for (size_t i = 0; i < convs.size(); ++i) convs[i]->W() = v[1 + i];
          return inc(v[0]);
        },
        inputs, {.eps = 1e-4, .atol = 1e-4, .rtol = 1e-3});
  }
}

TEST_CASE("InceptionBN: the arguments Chainer rejects", "[links]") {
  REQUIRE_THROWS_WITH(L::InceptionBN(4, 2, 3, 5, 2, 3, "min", 1),
                      "InceptionBN: pooltype must be 'max' or 'avg', got 'min'");
  REQUIRE_THROWS_WITH(L::InceptionBN(4, 2, 3, 5, 2, 3, "max", 1, 2),
                      "InceptionBN: a 1x1 path (out1 = 2) needs stride 1, got stride 2");
  REQUIRE_THROWS_WITH(L::InceptionBN(4, 2, 3, 5, 2, 3, "max"),
                      "InceptionBN: a 1x1 path (out1 = 2) needs a pooling projection (proj_pool)");
}

TEST_CASE("MLPConvolution2D: the activation between the layers, none after the last", "[links]") {
  L::MLPConvolution2D mlp(3, {4, 5, 2}, 3, 2, 1);
  Variable x(testing::uniform({2, 3, 7, 6}, 6, -1, 1, DType::Float32));
  const auto& l = mlp.layers();
  Variable h = F::relu(F::convolution_2d(x, l[0]->W(), *l[0]->b(), 2, 1));
  h = F::relu(F::convolution_2d(h, l[1]->W(), *l[1]->b()));
  h = F::convolution_2d(h, l[2]->W(), *l[2]->b());
  require_close(mlp(x), h, 1e-6);
  REQUIRE(mlp.namedparams().front().first == "/0/W");
  REQUIRE_THROWS_WITH(L::MLPConvolution2D(3, {}, 3),
                      "MLPConvolution2D: out_channels must list at least one layer, got none");
}

namespace {

struct ModelCase {
  std::string arch;
  int64_t batch, insize;
  int64_t n_params;  // at 1000 classes, derived in the comment above the table
  std::vector<std::string> reported;
};

// Parameter counts at 1000 classes, from the layer shapes (conv: out * in * kh * kw + out for a
// bias; Linear: out * in + out; BatchNormalization: gamma and beta, 2 * C).
//
// alex (227: 55 after conv1, 27 after pool, 13 after pool, 6 after the last pool: fc6 takes
// 256 * 6 * 6 = 9216): conv1 96*3*121+96 = 34944, conv2 256*96*25+256 = 614656, conv3
// 384*256*9+384 = 885120, conv4 384*384*9+384 = 1327488, conv5 256*384*9+256 = 884992, fc6
// 9216*4096+4096 = 37752832, fc7 4096*4096+4096 = 16781312, fc8 4096*1000+1000 = 4097000:
// 62378344.
//
// nin (any size): mlpconv1 96*3*121+96 + 2*(96*96+96) = 53568; mlpconv2 256*96*25+256 +
// 2*(256*256+256) = 746240; mlpconv3 384*256*9+384 + 2*(384*384+384) = 1180800; mlpconv4
// 1024*384*9+1024 + 1024*1024+1024 + 1000*1024+1000 = 5614568: 7595176.
//
// googlenet: an Inception(in, o1, p3, o3, p5, o5, pp) has in*o1+o1 + in*p3+p3 + p3*o3*9+o3 +
// in*p5+p5 + p5*o5*25+o5 + in*pp+pp and o1+o3+o5+pp output channels. conv1 64*3*49+64 = 9472,
// conv2_reduce 64*64+64 = 4160, conv2 192*64*9+192 = 110784; inc3a (192 in) 163696, inc3b (256)
// 388736, inc4a (480) 376176, inc4b (512) 449160, inc4c (512) 510104, inc4d (512) 605376, inc4e
// (528) 868352, inc5a (832) 1043456, inc5b (832) 1444080; loss3_fc 1024*1000+1000 = 1025000. The
// auxiliary heads see 14x14 maps, 4x4 after the 5x5/3 average: loss1_conv 512*128+128 = 65664,
// loss1_fc1 2048*1024+1024 = 2098176, loss1_fc2 1025000; loss2_conv 528*128+128 = 67712, then
// the same 2098176 + 1025000. Trunk 6998552 + heads 3188840 + 3190888: 13378280.
//
// googlenetbn: an InceptionBN(in, o1, p3, o3, p33, o33, pool, pp) has in*p3 + 2*p3 + p3*o3*9 +
// 2*o3 + in*p33 + 2*p33 + p33*o33*9 + 2*o33 + o33*o33*9 + 2*o33, plus in*o1 + 2*o1 with a 1x1
// path and in*pp + 2*pp with a projection; outputs o1+o3+o33+(pp or in). conv1 64*3*49 = 9408,
// norm1 128, conv2 192*64*9 = 110592, norm2 384; inc3a (192 in) 219072, inc3b (256) 260160,
// inc3c (320) 385088, inc4a (576) 609984, inc4b (576) 665344, inc4c (576) 914432, inc4d (608)
// 1142912, inc4e (608) 1449984, inc5a (1056) 2208896, inc5b (1024) 2279616; out 1025000. The
// auxiliary heads see 15x15 maps, 4x4 after the average: conva 576*128 = 73728, norma 256, lina
// 2048*1024 = 2097152, norma2 2048, outa 1025000 (3198184); convb 608*128 = 77824 and the same
// rest (3202280). 120512 + 10135488 + 1025000 + 3198184 + 3202280: 17681464.
//
// resnet50: torchvision's 25557032 (the same layers, BN's gamma and beta counted as here) plus
// the 64 of conv1's bias, which the example keeps (the blocks' convolutions have none): conv1
// 64*3*49+64 = 9472, bn1 128; res2 BottleNeckA(64, 64, 256) 75008 + 2 BottleNeckB(256, 64)
// 70400 each; res3 379392 + 3 * 280064; res4 1512448 + 5 * 1117184; res5 6039552 + 2 * 4462592;
// fc 2048*1000+1000 = 2049000: 25557096.
const std::vector<ModelCase> kModels{
    {"nin", 2, 64, 7595176, {"loss", "accuracy"}},
    {"alex", 1, 227, 62378344, {"loss", "accuracy"}},
    {"googlenet", 1, 224, 13378280, {"loss", "loss1", "loss2", "loss3", "accuracy"}},
    // Batch 2: the auxiliary head's BatchNormalization after a Linear needs two values per channel.
    {"googlenetbn", 2, 224, 17681464, {"loss", "loss1", "loss2", "loss3", "accuracy"}},
    {"resnet50", 2, 32, 25557096, {"loss", "accuracy"}},
};

}  // namespace

TEST_CASE("ImageNet models: a training step's loss, reports and gradients, the output and parameter count",
          "[imagenet]") {
  for (const ModelCase& c : kModels) {
    INFO("arch " << c.arch);
    const bool native = c.insize == 227 || c.insize == 224;
    auto model = apps::imagenet::make_model(c.arch, 1000, native ? std::nullopt : std::optional<int64_t>(c.insize));
    REQUIRE(model->arch() == c.arch);
    REQUIRE(model->insize() == c.insize);
    REQUIRE(model->n_class() == 1000);
    Variable x(testing::uniform({c.batch, 3, c.insize, c.insize}, 7, -1, 1, DType::Float32));
    std::vector<int32_t> labels;
    for (int64_t i = 0; i < c.batch; ++i) labels.push_back(int32_t(17 * i + 3));
    Variable t(testing::labels(labels));

    Reporter reporter;
    reporter.add_observer("main", model.get());
    Observation observation;
    Variable loss;
    {
      Reporter::Scope scope(reporter, observation);
      loss = model->forward_args({x, t}).at(0);
    }
    REQUIRE(std::isfinite(loss.data().item_double()));
    for (const std::string& key : c.reported) REQUIRE(observation.count("main/" + key) == 1);
    REQUIRE(observation.size() == c.reported.size());
    if (c.reported.size() == 5)  // the GoogLeNets: main head plus 0.3 of each auxiliary one
      REQUIRE(observation["main/loss"].value() ==
              Approx(observation["main/loss3"].value() +
                     0.3 * (observation["main/loss1"].value() + observation["main/loss2"].value())));

    loss.backward();
    for (const auto& [name, p] : model->namedparams()) {
      INFO("parameter " << name);
      REQUIRE(p.grad().defined());
      REQUIRE(p.grad().shape() == p.shape());
    }
    REQUIRE(model->count_params() == c.n_params);

    config::TrainScope test_mode(false);
    NoBackpropMode no_backprop;
    REQUIRE(model->forward(x).shape() == Shape{c.batch, 1000});
  }
}

TEST_CASE("ImageNet models: other class counts and input sizes", "[imagenet]") {
  auto nin = apps::imagenet::make_model("nin", 10, 96);
  REQUIRE(nin->insize() == 96);
  config::TrainScope test_mode(false);
  NoBackpropMode no_backprop;
  REQUIRE((*nin)(Variable(testing::uniform({1, 3, 96, 80}, 8, -1, 1, DType::Float32))).shape() == Shape{1, 10});
  REQUIRE(apps::imagenet::make_model("resnet50", 5, 64)->forward(
              Variable(testing::uniform({1, 3, 64, 64}, 9, -1, 1, DType::Float32))).shape() == Shape{1, 5});
}

TEST_CASE("ImageNet models: the errors name the model and what it expected", "[imagenet]") {
  REQUIRE(apps::imagenet::model_names() ==
          std::vector<std::string>{"alex", "googlenet", "googlenetbn", "nin", "resnet50"});
  REQUIRE_THROWS_WITH(apps::imagenet::make_model("vgg16"),
                      "make_model: unknown architecture 'vgg16'; known: alex, googlenet, googlenetbn, nin, resnet50");
  REQUIRE_THROWS_WITH(apps::imagenet::make_model("alex", 1000, 64),
                      "make_model: alex takes 227x227 images only (its fully connected layers fix the size), got "
                      "insize 64");
  auto alex = apps::imagenet::make_model("alex");
  REQUIRE_THROWS_WITH(alex->forward(Variable(Tensor::zeros({1, 3, 224, 224}))),
                      "alex: expected images (N, 3, 227, 227), got (1, 3, 224, 224)");
  auto nin = apps::imagenet::make_model("nin");
  REQUIRE_THROWS_WITH(nin->forward(Variable(Tensor::zeros({1, 1, 64, 64}))),
                      "nin: expected images (N, 3, H, W), got (1, 1, 64, 64)");
  REQUIRE_THROWS_WITH(nin->forward_args({Variable(Tensor::zeros({1, 3, 64, 64}))}),
                      "nin: expected the images and the labels (2 arrays), got 1");
}
