// Training-epoch time of the tutorial model (MLP 784-1000-1000-10, ReLU, Classifier, Adam,
// batch 100 per process, shuffled): seconds per epoch and images per second, training only,
// plus the test accuracy after each epoch so a fast-but-wrong engine cannot hide.
//   build/bench/bench_epoch [--epochs 3] [--threads N] [--data DIR] [--unfused] [--communicator naive]
//   mpiexec -n 2 build/bench/bench_epoch      # data-parallel: 2 processes x 1 thread here
// --threads defaults to the library's default (cores / ranks on this node), as mnist_mlp uses.
// Under mpiexec rank 0 scatters the data, gradients are averaged by the multi-node optimizer
// (bucketed, during backward), and an epoch is one pass over the data across all processes.
// Rank 0 prints one line per epoch in the peers' format, then a JSON line.
#include <chainer.h>
#include <chainermn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

namespace F = chainer::functions;
namespace L = chainer::links;
using chainer::Tensor;
using chainer::Variable;

namespace {
struct MLP : chainer::Chain {
  std::shared_ptr<L::Linear> l1, l2, l3;
  bool fused = true;
  explicit MLP(int64_t units) {
    l1 = add_link("l1", std::make_shared<L::Linear>(784, units));
    l2 = add_link("l2", std::make_shared<L::Linear>(units, units));
    l3 = add_link("l3", std::make_shared<L::Linear>(units, 10));
  }
  Variable forward(const Variable& x) override {
    if (fused) return (*l3)(l2->forward_relu(l1->forward_relu(x)));
    return (*l3)(F::relu((*l2)(F::relu((*l1)(x)))));
  }
};
}  // namespace

int main(int argc, char** argv) {
  return chainermn::run_main(argc, argv, [](int argc, char** argv) -> int {
  int epochs = 3, threads = 0;  // 0: the library default
  bool fused = true;
  std::string communicator = "naive";
  std::string data = "../shared/datasets/mnist";
  if (const char* env = std::getenv("MNIST_DIR")) data = env;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--epochs") && i + 1 < argc) epochs = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--data") && i + 1 < argc) data = argv[++i];
    else if (!std::strcmp(argv[i], "--unfused")) fused = false;
    else if (!std::strcmp(argv[i], "--communicator") && i + 1 < argc) communicator = argv[++i];
    else {
      std::fprintf(stderr, "usage: bench_epoch [--epochs N] [--threads N] [--data DIR] [--unfused] [--communicator NAME]\n");
      return 2;
    }
  }
    chainer::set_num_threads(threads);
    chainer::random::seed(0);
    auto comm = chainermn::create_communicator(communicator);
    const bool root = comm->rank() == 0;
    chainer::datasets::DatasetPtr train, test;
    if (root) std::tie(train, test) = chainer::datasets::get_mnist(data);
    if (comm->size() > 1) {
      train = chainermn::scatter_dataset(train, comm, 0, true);
      test = chainermn::scatter_dataset(test, comm, 0, true);
    }
    auto mlp = std::make_shared<MLP>(1000);
    mlp->fused = fused;
    auto model = std::make_shared<L::Classifier>(mlp);
    std::shared_ptr<chainer::Optimizer> adam = std::make_shared<chainer::optimizers::Adam>();
    if (comm->size() > 1) adam = chainermn::create_multi_node_optimizer(adam, comm);
    adam->setup(model);
    chainer::iterators::SerialIterator it(train, 100, true, true, uint64_t(comm->rank()));
    double total = 0, last_acc = 0;
    for (int e = 1; e <= epochs; ++e) {
      double loss_sum = 0, acc_sum = 0;
      int64_t n = 0;
      std::vector<double> step_s;  // per iteration, for a figure the machine's noise moves less
      const auto start = std::chrono::steady_clock::now();
      auto step_start = start;
      do {
        std::vector<Tensor> batch = it.next_batch();
        Variable x(batch[0]), t(batch[1]);
        adam->update([&] {
          Variable loss = model->forward_args({x, t})[0];
          loss_sum += loss.item();
          acc_sum += model->accuracy().item();
          ++n;
          return loss;
        });
        const auto now = std::chrono::steady_clock::now();
        step_s.push_back(std::chrono::duration<double>(now - step_start).count());
        step_start = now;
      } while (!it.is_new_epoch());
      if (comm->size() > 1) MPI_Barrier(comm->mpi_comm());  // the epoch ends when the slowest rank ends it
      const double train_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      total += train_s;
      // The median iteration times the number of iterations: an epoch without the machine's
      // slow spells (this VM's speed swings by tens of percent within minutes).
      std::nth_element(step_s.begin(), step_s.begin() + step_s.size() / 2, step_s.end());
      const double median_s = step_s[step_s.size() / 2] * double(step_s.size());
      // Test accuracy (not timed as training).
      chainer::NoBackpropMode no_backprop;
      chainer::iterators::SerialIterator test_it(test, 100, false, false);
      double test_acc = 0, test_loss = 0;
      int64_t m = 0;
      while (test_it.has_next()) {
        std::vector<Tensor> batch = test_it.next_batch();
        test_loss += model->forward_args({Variable(batch[0]), Variable(batch[1])})[0].item();
        test_acc += model->accuracy().item();
        ++m;
      }
      // Example-weighted over the ranks (every rank evaluated m batches of 100).
      std::vector<double> all = comm->allreduce_obj(std::vector<double>{test_acc, test_loss, double(m), loss_sum, acc_sum, double(n)});
      test_acc = all[0], test_loss = all[1], m = int64_t(all[2]), loss_sum = all[3], acc_sum = all[4];
      const int64_t images = int64_t(all[5]) * 100;
      n = int64_t(all[5]);
      last_acc = test_acc / double(m);
      if (root) std::printf("epoch %d train_loss %.4f train_acc %.4f test_loss %.4f test_acc %.4f train_s %.3f images_per_s %.0f median_step_train_s %.3f\n", e,
                  loss_sum / double(n), acc_sum / double(n), test_loss / double(m), last_acc, train_s,
                  double(images) / train_s, median_s);
      std::fflush(stdout);
    }
    if (root)
      std::printf("{\"engine\": \"chainermn-cpp\", \"processes\": %d, \"threads\": %d, \"fused\": %s, \"epochs\": %d, "
                  "\"mean_train_s\": %.3f, \"test_acc\": %.4f}\n",
                  comm->size(), chainer::num_threads(), fused ? "true" : "false", epochs, total / epochs, last_acc);
    return 0;
  });
}
