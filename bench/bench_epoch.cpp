// Training-epoch time of the tutorial model (MLP 784-1000-1000-10, ReLU, Classifier, Adam,
// batch 100 per process, shuffled): seconds per epoch and images per second, training only,
// plus the test accuracy after each epoch so a fast-but-wrong engine cannot hide.
//   build/bench/bench_epoch [--epochs 3] [--threads N] [--data DIR] [--unfused] [--communicator naive]
//                           [--double-buffering]
//   mpiexec -n 2 build/bench/bench_epoch      # data-parallel: 2 processes x 1 thread here
//   build/bench/bench_epoch --gpu [ID] [--eager] [--tf32]   # one CUDA device, as torch_gpu.py
// On a GPU the data set lives on the device, the StandardUpdater runs the steps (whole-step CUDA
// graphs unless --eager) and losses are summed on the device; the device is synchronized around
// each timed part. It also prints kernel launches per step and the peak of device memory in use.
// --threads defaults to the library's default (cores / ranks on this node), as mnist_mlp uses.
// Under mpiexec rank 0 scatters the data, gradients are averaged by the multi-node optimizer
// (bucketed, during backward; with --double-buffering each step applies the previous step's
// means while its own are summed), and an epoch is one pass over the data across all processes.
// Rank 0 prints one line per epoch in the peers' format, then a JSON line.
#include <chainer.h>
#include <chainermn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "core/cpu/isa.h"

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
int run_gpu(int id, int epochs, bool fused, bool graphs, bool tf32, const std::string& data) {
  namespace cuda = chainer::cuda;
  cuda::get_device(id).use();
  const chainer::Device device = cuda::get_device(id).device();
  cuda::set_allow_tf32(tf32);
  chainer::random::seed(0);
  auto [train_host, test_host] = chainer::datasets::get_mnist(data);
  auto train = chainer::datasets::to_device(train_host, device), test = chainer::datasets::to_device(test_host, device);
  auto mlp = std::make_shared<MLP>(1000);
  mlp->fused = fused;
  auto model = std::make_shared<L::Classifier>(mlp);
  model->to_device(device);
  auto adam = std::make_shared<chainer::optimizers::Adam>();
  adam->setup(model);
  auto it = std::make_shared<chainer::iterators::SerialIterator>(train, 100, true, true, 0);
  chainer::training::StandardUpdater updater(it, adam, {}, {.device = device, .cuda_graph = graphs});
  chainer::Reporter reporter;
  reporter.add_observer("main", model.get());
  using clock = std::chrono::steady_clock;
  double total = 0, total_after_first = 0, last_acc = 0;
  for (int e = 1; e <= epochs; ++e) {
    chainer::DictSummary summary;
    cuda::synchronize();
    const cuda::LaunchCounts before = cuda::launch_counts();
    const auto start = clock::now();
    int64_t steps = 0;
    do {
      chainer::Observation observation;
      {
        chainer::Reporter::Scope scope(reporter, observation);
        updater.update();
      }
      summary.add(observation);
      ++steps;
    } while (!it->is_new_epoch());
    cuda::synchronize();
    const double train_s = std::chrono::duration<double>(clock::now() - start).count();
    const cuda::LaunchCounts after = cuda::launch_counts();
    total += train_s;
    if (e > 1) total_after_first += train_s;
    const chainer::Observation mean = summary.compute_mean();
    const auto eval_start = clock::now();
    chainer::training::extensions::Evaluator evaluator(
        std::make_shared<chainer::iterators::SerialIterator>(test, 100, false, false), model);
    const chainer::Observation result = evaluator.evaluate();
    cuda::synchronize();
    const double eval_s = std::chrono::duration<double>(clock::now() - eval_start).count();
    last_acc = result.at("validation/main/accuracy");
    std::printf("epoch %d train_loss %.4f train_acc %.4f test_loss %.4f test_acc %.4f train_s %.3f eval_s %.3f "
                "images_per_s %.0f step_us %.1f kernels_per_step %.1f graphs_per_step %.2f peak_mib %.1f\n",
                e, mean.at("main/loss").value(), mean.at("main/accuracy").value(),
                result.at("validation/main/loss").value(), last_acc, train_s, eval_s, double(steps) * 100 / train_s,
                1e6 * train_s / double(steps), double(after.kernels - before.kernels) / double(steps),
                double(after.graphs - before.graphs) / double(steps),
                double(cuda::memory_stats().peak_in_use_bytes) / double(1 << 20));
    std::fflush(stdout);
  }
  const cuda::MemoryStats mem = cuda::memory_stats();
  std::printf("{\"engine\": \"chainermn-cpp\", \"cpu_kernels\": \"%s\", \"device\": \"%s\", \"mode\": \"%s\", "
              "\"tf32\": %s, \"fused\": %s, "
              "\"epochs\": %d, \"mean_train_s\": %.4f, \"mean_train_s_excl_first\": %.4f, \"graphs_captured\": %zu, "
              "\"peak_mib\": %.1f, \"reserved_mib\": %.1f, \"cuda_mallocs\": %lld, \"test_acc\": %.4f}\n",
              chainer::cpu::isa_description().c_str(), device.str().c_str(), graphs ? "graphs" : "eager",
              tf32 ? "true" : "false", fused ? "true" : "false", epochs,
              total / epochs, epochs > 1 ? total_after_first / (epochs - 1) : total,
              updater.cuda_graph_step().captures(), double(mem.peak_in_use_bytes) / double(1 << 20),
              double(mem.reserved_bytes) / double(1 << 20), (long long)mem.device_mallocs, last_acc);
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  return chainermn::run_main(argc, argv, [](int argc, char** argv) -> int {
  int epochs = 3, threads = 0;  // 0: the library default
  bool fused = true, graphs = true, tf32 = false, double_buffering = false;
  int gpu = -1;
  std::string communicator = "naive";
  std::string data = "../shared/datasets/mnist";
  if (const char* env = std::getenv("MNIST_DIR")) data = env;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--epochs") && i + 1 < argc) epochs = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--data") && i + 1 < argc) data = argv[++i];
    else if (!std::strcmp(argv[i], "--unfused")) fused = false;
    else if (!std::strcmp(argv[i], "--communicator") && i + 1 < argc) communicator = argv[++i];
    else if (!std::strcmp(argv[i], "--double-buffering")) double_buffering = true;
    else if (!std::strcmp(argv[i], "--gpu")) gpu = i + 1 < argc && argv[i + 1][0] != '-' ? std::atoi(argv[++i]) : 0;
    else if (!std::strcmp(argv[i], "--eager")) graphs = false;
    else if (!std::strcmp(argv[i], "--tf32")) tf32 = true;
    else {
      std::fprintf(stderr, "usage: bench_epoch [--epochs N] [--threads N] [--data DIR] [--unfused] [--communicator NAME]\n"
                           "                   [--double-buffering] [--gpu [ID] [--eager] [--tf32]]\n");
      return 2;
    }
  }
  if (gpu >= 0) return run_gpu(gpu, epochs, fused, graphs, tf32, data);
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
    if (comm->size() > 1) adam = chainermn::create_multi_node_optimizer(adam, comm, double_buffering);
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
        }, /*retain_graph=*/false);  // StandardUpdater's step: saved tensors freed as backward goes
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
      std::printf("{\"engine\": \"chainermn-cpp\", \"cpu_kernels\": \"%s\", \"processes\": %d, \"threads\": %d, "
                  "\"fused\": %s, \"double_buffering\": %s, "
                  "\"epochs\": %d, \"mean_train_s\": %.3f, \"test_acc\": %.4f}\n",
                  chainer::cpu::isa_description().c_str(), comm->size(), chainer::num_threads(), fused ? "true" : "false",
                  double_buffering ? "true" : "false", epochs, total / epochs, last_acc);
    return 0;
  });
}
