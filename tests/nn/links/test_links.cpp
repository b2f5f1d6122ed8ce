#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>

#include "core/io/npz.h"
#include "nn/functions.h"
#include "nn/links/classifier.h"
#include "nn/links/identity.h"
#include "nn/initializers.h"
#include "nn/links/linear.h"
#include "nn/optimizers/sgd.h"
#include "nn/reporter.h"
#include "nn/sequential.h"

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

TEST_CASE("links: Linear takes initialW and initial_bias as Chainer's, also when W is sized lazily") {
  const auto values = [](Variable& v) { return v.data().to_vector<double>(); };
  // A function (Chainer's initializer object), a scalar, an array.
  L::Linear given(3, 2, false, [](const Shape& s) { return initializers::constant(s, 0.5); }, 0.25);
  CHECK(values(given.W()) == std::vector<double>(6, 0.5));
  CHECK(values(*given.b()) == std::vector<double>(2, 0.25));
  const Tensor array = Tensor::arange(6).reshape({2, 3});
  L::Linear from_array(3, 2, true, array);
  CHECK(values(from_array.W()) == array.to_vector<double>());
  REQUIRE_THROWS_WITH(L::Linear(4, 2, true, array),
                      "Linear: initialW: the initializer gave shape (2, 3) (expected (2, 4))");
  // Lazily sized: b is made at construction, W from initialW at the first call, with its input size.
  random::seed(3);
  L::Linear lazy(std::nullopt, 400, false, [](const Shape& s) { return initializers::normal(s, 0.02); }, 1.0);
  CHECK(values(*lazy.b()) == std::vector<double>(400, 1.0));
  CHECK_FALSE(lazy.W().data().defined());
  lazy(Variable(Tensor::zeros({2, 50})));
  REQUIRE(lazy.W().data().shape() == Shape{400, 50});
  const std::vector<double> w = values(lazy.W());
  double sq = 0;
  for (double v : w) sq += v * v;
  CHECK(std::sqrt(sq / double(w.size())) == Approx(0.02).epsilon(0.03));  // Normal(0.02), not LeCunNormal's 0.14
}

TEST_CASE("initializers: HeNormal draws with standard deviation scale * sqrt(2 / fan_in)") {
  random::seed(1);
  for (double scale : {1.0, 0.5}) {
    const std::vector<double> w = initializers::he_normal({400, 50, 3, 3}, scale).to_vector<double>();  // fan_in 450
    double mean = 0, var = 0;
    for (double v : w) mean += v / double(w.size());
    for (double v : w) var += (v - mean) * (v - mean) / double(w.size());
    CHECK(mean == Approx(0).margin(2e-3));
    CHECK(std::sqrt(var) == Approx(scale * std::sqrt(2.0 / 450)).epsilon(0.01));
  }
  REQUIRE_THROWS_WITH(initializers::he_normal({}), Catch::Contains("HeNormal"));
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

TEST_CASE("links: a strict load needs an entry for every parameter, initialized or not, and names the file and the entry") {
  auto trained = std::make_shared<MLP>(6, 2);
  (*trained)(Variable(random::normal({2, 4})));
  const std::string full = (std::filesystem::temp_directory_path() / "chainer_test_links_strict_full.npz").string();
  const std::string partial = (std::filesystem::temp_directory_path() / "chainer_test_links_strict_partial.npz").string();
  save_npz(full, *trained);
  TensorMap entries = load_npz(full);
  entries.erase("l1/W");
  save_npz(partial, entries);

  SECTION("a lazily sized link whose W is missing does not start from fresh random weights") {
    auto lazy = std::make_shared<MLP>(6, 2);
    REQUIRE_THROWS_WITH(load_npz(partial, *lazy), Catch::Contains(partial) && Catch::Contains("'l1/W' is missing") &&
                                                      Catch::Contains("not initialized") &&
                                                      Catch::Contains("strict=false"));
    REQUIRE_FALSE(lazy->l1->W().data().defined());
  }
  SECTION("an initialized W that is missing is an error too") {
    auto initialized = std::make_shared<MLP>(6, 2);
    (*initialized)(Variable(random::normal({2, 4})));
    REQUIRE_THROWS_WITH(load_npz(partial, *initialized), Catch::Contains(partial) && Catch::Contains("'l1/W' is missing"));
  }
  SECTION("under a path, the error names the whole entry") {
    TensorMap nested;
    for (const auto& [k, v] : entries) nested["updater/model:main/predictor/" + k] = v;
    save_npz(partial, nested);
    auto lazy = std::make_shared<MLP>(6, 2);
    REQUIRE_THROWS_WITH(load_npz(partial, *lazy, "updater/model:main/predictor/"),
                        Catch::Contains(partial) && Catch::Contains("'updater/model:main/predictor/l1/W' is missing"));
  }
  SECTION("strict=false leaves the missing parameter uninitialized and loads the rest") {
    auto lazy = std::make_shared<MLP>(6, 2);
    load_npz(partial, *lazy, "", false);
    REQUIRE_FALSE(lazy->l1->W().data().defined());
    REQUIRE(lazy->l2->W().data().to_vector<float>() == trained->l2->W().data().to_vector<float>());
    REQUIRE(lazy->l1->b()->data().to_vector<float>() == trained->l1->b()->data().to_vector<float>());
  }
  SECTION("an uninitialized parameter takes the file's array and its shape") {
    auto lazy = std::make_shared<MLP>(6, 2);
    load_npz(full, *lazy);
    REQUIRE(lazy->l1->W().data().shape() == Shape{6, 4});
    REQUIRE(lazy->l1->W().data().to_vector<float>() == trained->l1->W().data().to_vector<float>());
    REQUIRE(lazy->l1->in_size() == 4);
  }
  std::filesystem::remove(full);
  std::filesystem::remove(partial);
}

TEST_CASE("links: Sequential calls links and functions in order, its links named by their position among links") {
  random::seed(0);
  auto l0 = std::make_shared<L::Linear>(3, 4), l1 = std::make_shared<L::Linear>(4, 2);
  Sequential seq(l0, F::relu, [](const Variable& h) { return F::mul(h, 2.0); });
  seq.append(l1);
  REQUIRE(seq.size() == 4);
  REQUIRE(seq[0].link() == l0);
  REQUIRE(seq[1].link() == nullptr);
  REQUIRE(seq[1].function());
  REQUIRE(seq[3].link() == l1);
  REQUIRE_THROWS_WITH(seq[4], "Sequential: index 4 is out of range for 4 layers");
  std::vector<std::string> names;
  for (auto& [n, p] : seq.namedparams()) names.push_back(n);
  REQUIRE(names == std::vector<std::string>{"/0/W", "/0/b", "/1/W", "/1/b"});  // Chainer's: functions take no name
  Variable x(random::normal({5, 3}));
  const Variable y = seq(x);
  const Variable expected = (*l1)(F::mul(F::relu((*l0)(x)), 2.0));
  REQUIRE(y.data().to_vector<float>() == expected.data().to_vector<float>());
  F::sum(y).backward();
  REQUIRE(l0->W().grad().defined());
  REQUIRE(l1->b()->grad().defined());
  REQUIRE_THROWS_WITH(seq.append(std::shared_ptr<L::Linear>()),
                      "Sequential.append: layer 4 is a null link or an empty function");
  REQUIRE_THROWS_WITH(seq.append(Sequential::Function()),
                      "Sequential.append: layer 4 is a null link or an empty function");
}

TEST_CASE("links: Sequential trains under a Classifier and saves under Chainer's keys") {
  random::seed(1);
  auto make = [] {
    return std::make_shared<Sequential>(std::make_shared<L::Linear>(8), F::relu, std::make_shared<L::Identity>(),
                                        std::make_shared<L::Linear>(2));
  };
  auto model = std::make_shared<L::Classifier>(make());
  optimizers::SGD opt(0.1);
  opt.setup(model);
  // Two separable blobs: the loss must fall.
  std::vector<float> x = random::normal({16, 3}).to_vector<float>();
  std::vector<int32_t> labels(16);
  for (size_t i = 0; i < 16; ++i) {
    labels[i] = int32_t(i % 2);
    for (size_t j = 0; j < 3; ++j) x[i * 3 + j] += labels[i] ? 2.f : -2.f;
  }
  Variable xv(Tensor::from_vector(x, {16, 3})), t(Tensor::from_vector(labels));
  const double first = model->forward_args({xv, t})[0].item();
  for (int step = 0; step < 20; ++step) opt.update([&] { return model->forward_args({xv, t})[0]; });
  REQUIRE(model->forward_args({xv, t})[0].item() < 0.5 * first);

  const std::string path = (std::filesystem::temp_directory_path() / "chainer_test_sequential.npz").string();
  save_npz(path, model->predictor());
  TensorMap raw = load_npz(path);
  std::vector<std::string> keys;
  for (auto& [k, v] : raw) keys.push_back(k);
  REQUIRE(keys == std::vector<std::string>{"0/W", "0/b", "2/W", "2/b"});  // Identity is link 1
  auto copy = make();
  load_npz(path, *copy);  // lazily sized links take their sizes from the file
  std::filesystem::remove(path);
  REQUIRE(copy->forward(xv).data().to_vector<float>() == model->predictor().forward(xv).data().to_vector<float>());
}

TEST_CASE("links: Identity returns its input, the same variable, and has no parameters") {
  L::Identity id;
  Variable x(random::normal({2, 3}), true);
  REQUIRE(id(x).is(x));
  const std::vector<Variable> both = id.forward_args({x, x});
  REQUIRE((both.size() == 2 && both[1].is(x)));
  REQUIRE(id.namedparams().empty());
}

namespace {
// An encoder and a decoder whose weights are one parameter (`dec->param("W") = enc->param("W")`),
// and a child registered under two names.
struct Tied : Chain {
  std::shared_ptr<L::Linear> enc, dec, shared;
  Tied() {
    enc = add_link("enc", std::make_shared<L::Linear>(3, 3));
    dec = add_link("dec", std::make_shared<L::Linear>(3, 3));
    dec->param("W") = enc->param("W");
    shared = add_link("s1", std::make_shared<L::Linear>(3, 2));
    add_link("s2", shared);
  }
  Variable forward(const Variable& x) override { return (*shared)((*dec)(F::relu((*enc)(x)))); }
};

std::vector<std::string> names_of(const std::vector<std::pair<std::string, Variable>>& params) {
  std::vector<std::string> out;
  for (const auto& [name, p] : params) out.push_back(name);
  return out;
}
}  // namespace

TEST_CASE("links: a tied parameter keeps every name in namedparams, once in unique_namedparams and params") {
  Tied model;
  CHECK(names_of(model.namedparams()) == std::vector<std::string>{"/dec/W", "/dec/b", "/enc/W", "/enc/b", "/s1/W",
                                                                   "/s1/b", "/s2/W", "/s2/b"});
  // Each parameter under its first name in namedparams order.
  CHECK(names_of(model.unique_namedparams()) == std::vector<std::string>{"/dec/W", "/dec/b", "/enc/b", "/s1/W", "/s1/b"});
  CHECK(model.params().size() == 5);
  CHECK(model.unique_namedparams()[0].second.is(model.enc->W()));
  CHECK(model.count_params() == 9 + 3 + 9 + 3 + 6 + 2 + 6 + 2);  // Chainer's count_params sums every name
}

TEST_CASE("links: a snapshot of a tied model keeps every name; tied names that disagree are refused, naming both") {
  Tied a, b;
  Serializer saved = Serializer::writer();
  a.serialize(saved);
  for (const char* key : {"enc/W", "dec/W", "s1/W", "s2/W", "s2/b"}) CHECK(saved.entries().count(key) == 1);
  Serializer reader = Serializer::reader(saved.entries());
  b.serialize(reader);
  CHECK(b.dec->W().data().to_vector<float>() == a.enc->W().data().to_vector<float>());
  CHECK(b.dec->W().is(b.enc->W()));
  CHECK(b.shared->W().data().to_vector<float>() == a.shared->W().data().to_vector<float>());

  TensorMap edited = saved.entries();
  edited["dec/W"] = edited["dec/W"].clone();
  edited["dec/W"].data<float>()[4] += 1.0f;
  Serializer wrong = Serializer::reader(edited);
  CHECK_THROWS_WITH(b.serialize(wrong), "deserialize: 'dec/W' and 'enc/W' name one tied parameter but hold different "
                                        "values in the snapshot");
  TensorMap edited_child = saved.entries();
  edited_child["s2/b"] = Tensor::full({2}, 1.0, DType::Float32);
  Serializer wrong_child = Serializer::reader(edited_child);
  CHECK_THROWS_WITH(b.serialize(wrong_child), "deserialize: 's1/b' and 's2/b' name one tied parameter but hold "
                                              "different values in the snapshot");
  // Nothing was loaded from the refused snapshots.
  CHECK(b.dec->W().data().to_vector<float>() == a.enc->W().data().to_vector<float>());
}
