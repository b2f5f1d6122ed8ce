// A convolutional network on Fashion-MNIST, trained as the MNIST tutorial's MLP is (mnist_mlp):
// two blocks of two 3x3 convolutions with batch normalization and ReLU, each block ending in a
// 2x2 max pooling (28x28 -> 14x14 -> 7x7), then dropout and a linear layer; Classifier (softmax
// cross-entropy + accuracy), Adam, evaluation on the test set after every epoch, a log, a
// printed report, a progress bar and snapshots.
//   mpiexec -n 2 build/apps/fashion_mnist_cnn [-b 100] [-e 10] [-o result] [-r SNAPSHOT] [--data DIR]
//   build/apps/fashion_mnist_cnn --gpu [ID]     # model, optimizer and data on CUDA device ID
// Every process trains on its share of the data with batch -b; gradients are averaged over all.
// Each process normalizes its batches with their own statistics (L::BatchNormalization), as
// ChainerMN's examples do: the parameters are the same on every process, but each keeps (and
// evaluates its share of the test set with, and snapshots) its own running averages.
#include <iostream>
#include <string>

#include "app_common.h"

namespace F = chainer::functions;
namespace L = chainer::links;
namespace E = chainer::training::extensions;
using chainer::Variable;

namespace {

// [cnn-model]
// conv3x3 - BN - ReLU, twice, then 2x2 max pooling; two such blocks (32 then 64 channels), then
// dropout and the classifier. The convolutions have no bias: the batch normalization after each
// one subtracts the mean, so a bias would cancel out (its beta is the shift).
class CNN : public chainer::Chain {
 public:
  explicit CNN(int64_t n_out) {
    const int64_t channels[][2] = {{1, 32}, {32, 32}, {32, 64}, {64, 64}};
    for (int i = 0; i < 4; ++i) {
      const auto [in, out] = channels[i];
      conv[i] = add_link("conv" + std::to_string(i + 1),
                         std::make_shared<L::Convolution2D>(in, out, 3, /*stride=*/1, /*pad=*/1, /*nobias=*/true));
      bn[i] = add_link("bn" + std::to_string(i + 1), std::make_shared<L::BatchNormalization>(out));
    }
    fc = add_link("fc", std::make_shared<L::Linear>(64 * 7 * 7, n_out));
  }

  Variable forward(const Variable& x) override {
    Variable h = x;  // (N, 1, 28, 28)
    for (int i = 0; i < 4; ++i) {
      h = F::relu((*bn[i])((*conv[i])(h)));
      if (i % 2 == 1) h = F::max_pooling_2d(h, 2);  // (N, 32, 14, 14), then (N, 64, 7, 7)
    }
    return (*fc)(F::dropout(h, 0.5));  // Linear flattens (N, 64, 7, 7) to (N, 3136)
  }

 private:
  std::shared_ptr<L::Convolution2D> conv[4];
  std::shared_ptr<L::BatchNormalization> bn[4];
  std::shared_ptr<L::Linear> fc;
};
// [end]

// What the CNN holds per example of a batch at least: its input and label, and the output of
// every convolution and pooling with its gradient (float32). Its parameters are few (0.1 M).
apps::DenseCost cnn_cost(int64_t) {
  apps::DenseCost cost;
  cost.per_example = 4.0 * (28 * 28 + 1 + 2 * (2 * 32 * 28 * 28 + 32 * 14 * 14 + 2 * 64 * 14 * 14 + 64 * 7 * 7 + 10));
  return cost;
}

struct Options : apps::CommonOptions {
  Options() {
    epoch = 10;
    unit = 0;  // no -u: the network's widths are fixed
    data_set = apps::Data::FashionMNIST;
  }
  std::string communicator;  // default: naive on CPUs, pure_nccl on GPUs
};

const std::string kUsage = std::string(R"(usage: fashion_mnist_cnn [options]
Trains a convolutional network (4 conv3x3 + batch normalization, 2 max poolings, dropout,
linear) on Fashion-MNIST (data parallel: each process its share of the data).
      --communicator NAME  naive (default on CPUs), flat, hierarchical, two_dimensional,
                      single_node, pure_nccl (default with --gpu), non_cuda_aware or dummy
                      (no averaging: times everything but the reduction)
)") + apps::common_usage(Options{});

Options parse(int argc, char** argv) {
  Options o;
  for (apps::Args args(argc, argv, kUsage.c_str()); args.next();) {
    if (apps::read_common_option(args, o)) continue;
    if (args.is(nullptr, "--communicator")) o.communicator = args.value();
    else args.unknown();
  }
  return o;
}

int run(int argc, char** argv) {
  const Options o = parse(argc, argv);
  auto comm = apps::create_communicator(o.communicator, o.gpu);
  const bool root = comm->rank() == 0;
  const chainer::Device device = apps::choose_device(o.gpu, *comm);
  apps::set_compute(o);
  apps::check_network_memory(o, cnn_cost, device, *comm);  // -b, before any data is read

  // Rank 0 reads the data; every worker gets its share.
  chainer::datasets::DatasetPtr train, test;
  apps::set_stage("reading and scattering Fashion-MNIST");
  if (root) {
    std::cout << "# Num process (COMM_WORLD): " << comm->size() << "\n# Using " << comm->name()
              << " communicator\n# Minibatch-size: " << o.batchsize << "\n# epoch: " << o.epoch
              << "\n# device: " << device.str() << "\n# threads per process: " << chainer::num_threads() << "\n"
              << std::flush;
    // [cnn-data]
    // Images of shape (1, 28, 28) (ndim 3), pixels / 255; from --data, else Debian's
    // dataset-fashion-mnist, else Chainer's dataset root (downloading them there).
    std::tie(train, test) = o.data.empty() ? chainer::datasets::get_fashion_mnist(true, 3)
                                           : chainer::datasets::get_fashion_mnist(o.data, true, 3);
    // [end]
    apps::take_subsets(train, test, o);
    std::cout << "# data: " << train->size() << " training, " << test->size() << " test examples\n\n" << std::flush;
  }
  const int64_t n_train = comm->bcast_obj<int64_t>(comm->rank() == 0 ? int64_t(train->size()) : 0);
  train = chainermn::scatter_dataset(train, comm, 0, true, uint64_t(o.seed));
  test = chainermn::scatter_dataset(test, comm, 0, true, uint64_t(o.seed), /*force_equal_length=*/false);
  apps::check_batch("-b/--batchsize", o.batchsize, int64_t(train->size()), n_train, comm->size());
  if (o.gpu) {
    train = chainer::datasets::to_device(train, device);
    test = chainer::datasets::to_device(test, device);
  }

  apps::set_stage("building the model");
  // [cnn-training]
  // Dropout draws other masks on every rank; rank 0's initial parameters are broadcast to all.
  chainer::random::seed(uint64_t(o.seed) + uint64_t(comm->rank()));
  auto model = std::make_shared<L::Classifier>(std::make_shared<CNN>(10));
  model->to_device(device);
  auto optimizer = chainermn::create_multi_node_optimizer(std::make_shared<chainer::optimizers::Adam>(1e-3), comm);
  optimizer->setup(model);
  apps::set_precision(*optimizer, o);

  auto train_iter = std::make_shared<chainer::iterators::SerialIterator>(train, o.batchsize, true, true,
                                                                         uint64_t(o.seed) + uint64_t(comm->rank()));
  auto test_iter = std::make_shared<chainer::iterators::SerialIterator>(test, o.batchsize, false, false);
  auto updater = std::make_shared<chainer::training::StandardUpdater>(train_iter, optimizer);
  auto evaluator = chainermn::create_multi_node_evaluator(std::make_shared<E::Evaluator>(test_iter, model), comm);
  auto checkpointer = apps::make_checkpointer("fashion_mnist_cnn", o, comm);
  if (checkpointer) checkpointer->set_scatter(n_train, true, uint64_t(o.seed));  // as mnist_mlp
  apps::train(updater, evaluator, o, *comm, false, {}, checkpointer);  // as mnist_mlp: log, report, snapshots, resume
  // [end]
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return apps::app_main("fashion_mnist_cnn", argc, argv, run); }
