#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>

#include "core/npz.h"
#include "nn/functions.h"
#include "nn/links/classifier.h"
#include "nn/links/linear.h"
#include "nn/reporter.h"

using namespace chainer;
namespace F = chainer::functions;
namespace L = chainer::links;

namespace {
struct MLP : Chain {
  std::shared_ptr<L::Linear> l1, l2, l3;
  MLP(int64_t units, int64_t out) {
    l1 = add_link("l1", std::make_shared<L::Linear>(units));
    l2 = add_link("l2", std::make_shared<L::Linear>(units));
    l3 = add_link("l3", std::make_shared<L::Linear>(out));
  }
  Variable forward(const Variable& x) override { return (*l3)(F::relu((*l2)(F::relu((*l1)(x))))); }
};
}  // namespace

TEST_CASE("links: parameters are named recursively, sorted, and initialized lazily") {
  auto model = std::make_shared<L::Classifier>(std::make_shared<MLP>(8, 3));
  std::vector<std::string> names;
  for (auto& [n, p] : model->namedparams()) names.push_back(n);
  REQUIRE(names == std::vector<std::string>{"/predictor/l1/W", "/predictor/l1/b", "/predictor/l2/W",
                                            "/predictor/l2/b", "/predictor/l3/W", "/predictor/l3/b"});
  REQUIRE(model->has_uninitialized_params());
  Variable x(random::normal({4, 5}));
  Variable t(Tensor::from_vector<int32_t>({0, 1, 2, 0}));
  Variable loss = model->forward_args({x, t})[0];
  REQUIRE_FALSE(model->has_uninitialized_params());
  REQUIRE(model->count_params() == 5 * 8 + 8 + 8 * 8 + 8 + 8 * 3 + 3);
  loss.backward();
  for (auto& p : model->params()) REQUIRE(p.grad().defined());
  model->cleargrads();
  for (auto& p : model->params()) REQUIRE_FALSE(p.grad().defined());
  std::vector<std::string> links;
  for (auto& [n, l] : model->namedlinks()) links.push_back(n);
  REQUIRE(links == std::vector<std::string>{"/", "/predictor", "/predictor/l1", "/predictor/l2", "/predictor/l3"});
}

TEST_CASE("links: Linear follows Chainer's initialization and checks its input") {
  random::seed(0);
  L::Linear big(1000, 1000);
  auto w = big.W().data().to_vector<double>();
  double mean = 0, var = 0;
  for (double v : w) mean += v / double(w.size());
  for (double v : w) var += (v - mean) * (v - mean) / double(w.size());
  REQUIRE(mean == Approx(0).margin(1e-3));
  REQUIRE(std::sqrt(var) == Approx(std::sqrt(1.0 / 1000)).epsilon(0.01));  // LeCunNormal
  REQUIRE(big.b()->data().to_vector<float>() == std::vector<float>(1000, 0.f));
  L::Linear l(784, 10);
  REQUIRE_THROWS_WITH(l(Variable(Tensor::zeros({100, 785}))),
                      Catch::Contains("(100, 785)") && Catch::Contains("784"));
  REQUIRE_THROWS_WITH(L::Linear(0), Catch::Contains("out_size"));
}

TEST_CASE("links: Classifier reports loss and accuracy under the observer name") {
  auto model = std::make_shared<L::Classifier>(std::make_shared<L::Linear>(3, 2));
  Reporter reporter;
  reporter.add_observer("main", model.get());
  Observation obs;
  {
    Reporter::Scope scope(reporter, obs);
    model->forward_args({Variable(random::normal({4, 3})), Variable(Tensor::from_vector<int32_t>({0, 1, 1, 0}))});
  }
  REQUIRE(obs.count("main/loss") == 1);
  REQUIRE(obs.count("main/accuracy") == 1);
  REQUIRE(obs["main/loss"] == Approx(model->loss().item()));
  REQUIRE_THROWS_WITH(model->forward_args({Variable(random::normal({4, 3}))}), Catch::Contains("labels"));
}

TEST_CASE("links: save_npz / load_npz restore parameters") {
  auto a = std::make_shared<MLP>(6, 2), b = std::make_shared<MLP>(6, 2);
  Variable x(random::normal({2, 4}));
  (*a)(x);
  (*b)(x);
  const std::string path = (std::filesystem::temp_directory_path() / "chainer_test_links.npz").string();
  save_npz(path, *a);
  TensorMap raw = load_npz(path);
  REQUIRE(raw.count("l1/W") == 1);  // keys as chainer.serializers.save_npz writes them
  load_npz(path, *b);
  const std::string path2 = path + ".copy.npz";
  std::filesystem::copy_file(path, path2, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::remove(path);
  auto pa = a->namedparams(), pb = b->namedparams();
  for (size_t i = 0; i < pa.size(); ++i)
    REQUIRE(pa[i].second.data().to_vector<float>() == pb[i].second.data().to_vector<float>());
  REQUIRE_THROWS_WITH(load_npz("/nonexistent.npz", *b), Catch::Contains("/nonexistent.npz"));
  // A lazily sized link takes its input size from the file, and refuses a W of the wrong size.
  auto lazy = std::make_shared<MLP>(6, 2);
  load_npz(path2, *lazy);
  REQUIRE(lazy->l1->in_size() == 4);
  std::filesystem::remove(path2);
  L::Linear nobias(4, 6, true);
  save_npz(path2, nobias);
  L::Linear wrong(std::nullopt, 7, true);  // without a bias, only the W check can catch it
  REQUIRE_THROWS_WITH(load_npz(path2, wrong), Catch::Contains("W") && Catch::Contains("(6, 4)"));
  std::filesystem::remove(path2);
}
