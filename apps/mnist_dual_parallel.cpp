// ChainerMN's train_mnist_dual_parallel.py in C++: data parallelism times model parallelism on
// an even number of processes. Ranks 2k and 2k+1 form a pipeline of the tutorial's MLP cut in
// two (apps/parallel_mlp.h; a communicator made with split(rank / 2)); the first stages of all
// pipelines average their gradients over one communicator (split(rank % 2)) and the second
// stages over another, with the multi-node optimizer. Rank 0 reads MNIST and scatters it over
// the first stages; rank 1 scatters an empty dataset of the same length over the second
// stages, so every pair runs the same iterations.
//   mpiexec -n 4 build/apps/mnist_dual_parallel [-b 100] [-e 20] [-u 1000] [--gpu]
#include <iostream>
#include <string>

#include "app_common.h"
#include "parallel_mlp.h"

namespace L = chainer::links;
namespace E = chainer::training::extensions;
using chainer::Error;

namespace {

const std::string kUsage = std::string(R"(usage: mpiexec -n 2K mnist_dual_parallel [options]
Trains the ChainerMN tutorial MLP on MNIST with data parallelism over K pipelines of two
processes each (model parallel: layer 1 on even ranks, layers 2 and 3 on odd ranks).
      --communicator NAME  the data-parallel communicators' kind (default naive)
)") + apps::common_usage(apps::CommonOptions{});

int run(int argc, char** argv) {
  apps::CommonOptions o;
  std::string communicator = "naive";
  for (apps::Args args(argc, argv, kUsage.c_str()); args.next();) {
    if (apps::read_common_option(args, o)) continue;
    if (args.is(nullptr, "--communicator")) communicator = args.value();
    else args.unknown();
  }
  auto comm = chainermn::create_communicator(communicator);
  if (comm->size() % 2 != 0)
    throw Error(chainer::str("this example runs on an even number of processes (pipelines of two), got ",
                             comm->size()));
  // [dual-split]
  const int data_axis = comm->rank() % 2;   // 0: first stages, 1: second stages
  const int model_axis = comm->rank() / 2;  // which pipeline
  auto data_comm = comm->split(data_axis, comm->rank());
  auto model_comm = comm->split(model_axis, comm->rank());
  // [end]
  const bool root = comm->rank() == 0;
  const chainer::Device device = apps::choose_device(o.gpu, *comm);
  apps::set_compute(o);
  // -u and -b against the memory this process has, before any data is read: its stage's layers.
  apps::check_network_memory(
      o, [first = data_axis == 0](int64_t u) { return first ? apps::dense_cost({{784, u}}) : apps::dense_cost({{u, u}, {u, 10}}); },
      device, *comm);

  // The roots of the two data communicators (ranks 0 and 1) hold the data: MNIST on rank 0, an
  // empty dataset of its length on rank 1.
  chainer::datasets::DatasetPtr train, test;
  apps::set_stage("reading and scattering MNIST");
  if (root) {
    const std::string data_dir = apps::find_mnist(o.data);
    std::cout << "# Num process (COMM_WORLD): " << comm->size() << " (" << comm->size() / 2
              << " pipelines of 2)\n# Using " << communicator << " communicator\n# unit: " << o.unit
              << "\n# Minibatch-size: " << o.batchsize << "\n# epoch: " << o.epoch << "\n# device: " << device.str()
              << "\n# data: " << data_dir << "\n\n" << std::flush;
    std::tie(train, test) = chainer::datasets::get_mnist(data_dir);
    apps::take_subsets(train, test, o);
  }
  const auto sizes = comm->bcast_obj(root ? std::vector<int64_t>{int64_t(train->size()), int64_t(test->size())}
                                          : std::vector<int64_t>{});
  if (comm->rank() == 1) {
    train = chainermn::create_empty_dataset(sizes[0]);
    test = chainermn::create_empty_dataset(sizes[1]);
  }
  train = chainermn::scatter_dataset(train, data_comm, 0, true, uint64_t(o.seed));
  test = chainermn::scatter_dataset(test, data_comm, 0, true, uint64_t(o.seed));
  apps::check_batch("-b/--batchsize", o.batchsize, int64_t(train->size()), sizes[0], data_comm->size());
  if (o.gpu && data_axis == 0) {
    train = chainer::datasets::to_device(train, device);
    test = chainer::datasets::to_device(test, device);
  }

  apps::set_stage("building the model");
  chainer::random::seed(uint64_t(o.seed) + uint64_t(comm->rank()));
  // [dual-model]
  std::shared_ptr<chainer::Link> model;
  if (data_axis == 0) model = std::make_shared<L::Classifier>(apps::first_stage(model_comm, o.unit));
  else model = apps::second_stage(model_comm, o.unit, 10);
  model->to_device(device);
  auto optimizer = chainermn::create_multi_node_optimizer(std::make_shared<chainer::optimizers::Adam>(), data_comm);
  // [end]
  optimizer->setup(model);
  apps::set_precision(*optimizer, o, /*scale_loss=*/false);  // the loss lives on one rank of each pair

  // Both stages of a pipeline take their batches in the same order (the same seed).
  auto train_iter = std::make_shared<chainer::iterators::SerialIterator>(train, o.batchsize, true, true,
                                                                         uint64_t(o.seed) + uint64_t(model_axis));
  auto test_iter = std::make_shared<chainer::iterators::SerialIterator>(test, o.batchsize, false, false);
  auto updater = std::make_shared<chainer::training::StandardUpdater>(train_iter, optimizer, nullptr, apps::kEagerSteps);
  apps::train(updater, chainermn::create_multi_node_evaluator(std::make_shared<E::Evaluator>(test_iter, model), data_comm), o,
              *comm, false, {}, apps::make_checkpointer("mnist_dual_parallel", o, comm));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return apps::app_main("mnist_dual_parallel", argc, argv, run); }
