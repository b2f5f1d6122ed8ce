// End to end: one epoch of the tutorial model (apps/mnist_mlp.cpp: MLP 784-1000-1000-10 with
// ReLU, Classifier, Adam, batch 100, seed 0) on the real MNIST through Trainer, StandardUpdater,
// Evaluator and LogReport must reach 95% test accuracy. Without the data ($MNIST_DIR) it fails,
// saying where the data should be. Its own main (no Catch2): one plain pass/fail check.
#include <unistd.h>

#include <chainer.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

namespace L = chainer::links;
namespace E = chainer::training::extensions;
namespace fs = std::filesystem;
using chainer::Variable;

namespace {

class MLP : public chainer::Chain {
 public:
  MLP(int64_t n_units, int64_t n_out) {
    l1 = add_link("l1", std::make_shared<L::Linear>(n_units));
    l2 = add_link("l2", std::make_shared<L::Linear>(n_units));
    l3 = add_link("l3", std::make_shared<L::Linear>(n_out));
  }
  Variable forward(const Variable& x) override { return (*l3)(l2->forward_relu(l1->forward_relu(x))); }

 private:
  std::shared_ptr<L::Linear> l1, l2, l3;
};

int fail(const std::string& why) {
  std::cerr << "test_mnist_e2e: FAILED: " << why << "\n";
  return 1;
}

int run() {
  const char* env = std::getenv("MNIST_DIR");
  if (!env || !fs::is_directory(env))
    return fail(std::string("MNIST_DIR ") + (env ? "('" + std::string(env) + "') is not a directory" : "is not set") +
                ": the suite needs the real MNIST files (../shared/datasets/mnist beside the clone, or meson "
                "configure build -Dmnist_dir=DIR)");
  const fs::path out = fs::temp_directory_path() / ("chainer_test_mnist_e2e_" + std::to_string(::getpid()));
  fs::remove_all(out);

  chainer::random::seed(0);
  auto model = std::make_shared<L::Classifier>(std::make_shared<MLP>(1000, 10));
  auto optimizer = std::make_shared<chainer::optimizers::Adam>();
  optimizer->setup(model);
  auto [train, test] = chainer::datasets::get_mnist(env);
  if (train->size() != 60000 || test->size() != 10000) return fail("unexpected MNIST sizes");
  auto train_iter = std::make_shared<chainer::iterators::SerialIterator>(train, 100, true, true, 0);
  auto test_iter = std::make_shared<chainer::iterators::SerialIterator>(test, 100, false, false);
  auto updater = std::make_shared<chainer::training::StandardUpdater>(train_iter, optimizer);
  chainer::training::Trainer trainer(updater, {1, chainer::training::Unit::Epoch}, out.string());
  auto evaluator = std::make_shared<E::Evaluator>(test_iter, model);
  trainer.extend(evaluator);
  auto log = std::make_shared<E::LogReport>();
  trainer.extend(log);
  trainer.extend(std::make_shared<E::PrintReport>(std::vector<std::string>{
      "epoch", "main/loss", "validation/main/loss", "main/accuracy", "validation/main/accuracy", "elapsed_time"}));
  trainer.run();

  const auto entries = E::LogReport::from_json([&] {
    std::ifstream f(out / "log");
    return std::string(std::istreambuf_iterator<char>(f), {});
  }());
  fs::remove_all(out);
  if (entries.size() != 1 || log->log().size() != 1) return fail("expected one log entry");
  const chainer::Observation& e = entries[0];
  for (const char* key : {"epoch", "iteration", "main/loss", "main/accuracy", "validation/main/loss",
                          "validation/main/accuracy", "elapsed_time"})
    if (!e.count(key)) return fail(std::string("the log entry has no ") + key);
  if (e.at("epoch") != 1 || e.at("iteration") != 600) return fail("expected epoch 1 at iteration 600");
  if (evaluator->last_example_count() != 10000) return fail("the evaluator did not see the 10000 test examples");
  const double accuracy = e.at("validation/main/accuracy");
  std::cout << "test accuracy after one epoch: " << accuracy << " (loss " << e.at("validation/main/loss")
            << "), train loss " << e.at("main/loss") << ", " << e.at("elapsed_time") << " s\n";
  if (!std::isfinite(e.at("main/loss")) || !std::isfinite(e.at("validation/main/loss"))) return fail("non-finite loss");
  if (!(accuracy >= 0.95)) return fail("test accuracy " + std::to_string(accuracy) + " is below 0.95");
  return 0;
}

}  // namespace

int main() {
  try {
    return run();
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}
