// The ChainerMN MNIST tutorial model (train_mnist.py) in C++: an MLP 784-unit-unit-10 with
// ReLU, Classifier (softmax cross-entropy + accuracy), Adam, evaluation on the test set after
// every epoch, a log, a printed report, a progress bar, a graph dump and snapshots.
//   mpiexec -n 2 build/apps/mnist_mlp [-b 100] [-e 20] [-u 1000] [-o result] [-r SNAPSHOT] [--data DIR]
//   mpiexec -n 2 build/apps/mnist_mlp --checkpoint-interval 100   # rerun to resume after a failure
//                                                                  # (with -n 2 or any other count)
//   build/apps/mnist_mlp --gpu [ID]     # model, optimizer and data on CUDA device ID (default 0)
//   mpiexec -n 2 build/apps/mnist_mlp --gpu   # each process on device intra_rank, pure_nccl
// Every process trains on its share of the data with batch -b; gradients are averaged over all.
#include <iostream>
#include <string>

#include "app_common.h"
#include "parallel_mlp.h"

namespace F = chainer::functions;
namespace L = chainer::links;
namespace E = chainer::training::extensions;
using chainer::Error;
using chainer::Variable;

namespace {

struct Options : apps::CommonOptions {
  std::string communicator;  // default: naive on CPUs, pure_nccl on GPUs
  chainermn::Reduction reduction = chainermn::Reduction::Bucketed;
};

const std::string kUsage = std::string(R"(usage: mnist_mlp [options]
Trains the ChainerMN tutorial MLP on MNIST (data parallel: each process its share of the data).
      --communicator NAME  naive (default on CPUs), flat, hierarchical, two_dimensional,
                      single_node, pure_nccl (default with --gpu), non_cuda_aware or dummy
                      (no averaging: times everything but the reduction): the
                      communicator's all-reduce scheme, used as such
                      with --reduction communicator
      --reduction R   how the multi-node optimizer averages gradients: bucketed (default:
                      buckets reduced while backward runs, as PyTorch DDP) or communicator
                      (the communicator's multi_node_mean_grad at update time, as ChainerMN)
(--checkpoint-interval: a rerun with another process count resumes from the newest iteration all
the old processes saved, with the same batch per process, and finishes the interrupted epoch.)
)") + apps::common_usage(apps::CommonOptions{});

Options parse(int argc, char** argv) {
  Options o;
  std::string reduction = chainermn::reduction_name(o.reduction);
  for (apps::Args args(argc, argv, kUsage.c_str()); args.next();) {
    if (apps::read_common_option(args, o)) continue;
    if (args.is(nullptr, "--communicator")) o.communicator = args.value();
    else if (args.is(nullptr, "--reduction")) reduction = args.value();
    else args.unknown();
  }
  o.reduction = chainermn::parse_reduction(reduction, "--reduction");
  return o;
}

int run(int argc, char** argv) {
  const Options o = parse(argc, argv);
  auto comm = apps::create_communicator(o.communicator, o.gpu);
  const bool root = comm->rank() == 0;
  // A GPU that cannot be used is an error before any data is read. Several processes on a host
  // take one device each, in intra_rank order.
  const chainer::Device device = apps::choose_device(o.gpu, *comm);
  apps::set_compute(o);
  // -u and -b against the memory this process has, before any data is read.
  apps::check_network_memory(o, [](int64_t u) { return apps::dense_cost({{784, u}, {u, u}, {u, 10}}); }, device, *comm);

  // Rank 0 reads MNIST; scatter_dataset sends every worker its share, so one epoch is one pass
  // over the whole dataset across all workers.
  chainer::datasets::DatasetPtr train, test;
  apps::set_stage("reading and scattering MNIST");
  const std::string processes = apps::process_table(*comm);
  if (root) {
    const std::string data_dir = apps::find_mnist(o.data);
    std::cout << "# Num process (COMM_WORLD): " << comm->size() << "\n# processes: " << processes << "\n# Using " << comm->name()
              << " communicator, " << chainermn::reduction_name(o.reduction) << " reduction\n# unit: " << o.unit
              << "\n# Minibatch-size: " << o.batchsize
              << "\n# epoch: " << o.epoch << "\n# device: " << device.str()
              << "\n# threads per process: " << chainer::num_threads()
              << "\n# data: " << data_dir << "\n\n"
              << std::flush;
    std::tie(train, test) = chainer::datasets::get_mnist(data_dir);
    apps::take_subsets(train, test, o);
  }
  const int64_t n_train = comm->bcast_obj<int64_t>(root ? int64_t(train->size()) : 0);
  train = chainermn::scatter_dataset(train, comm, 0, true, uint64_t(o.seed));
  // The test set need not be cut into equal shares (no all-reduce waits on its batches; the
  // multi-node evaluator weights each rank by its examples), so every test example counts once.
  test = chainermn::scatter_dataset(test, comm, 0, true, uint64_t(o.seed), /*force_equal_length=*/false);
  apps::check_batch("-b/--batchsize", o.batchsize, int64_t(train->size()), n_train, comm->size());

  // On a GPU the whole dataset is copied there once and batches are gathered on the device.
  if (o.gpu) {
    train = chainer::datasets::to_device(train, device);
    test = chainer::datasets::to_device(test, device);
  }

  apps::set_stage("building the model");
  chainer::random::seed(uint64_t(o.seed));
  auto model = std::make_shared<L::Classifier>(std::make_shared<apps::MLP>(o.unit, 10));
  model->to_device(device);  // the tutorial's model.to_gpu()
  // The two-line change of the tutorial: gradients are averaged over all workers between
  // backward and the update (and rank 0's parameters are broadcast first).
  chainermn::MultiNodeOptimizerOptions multi_node;
  multi_node.reduction = o.reduction;
  auto optimizer =
      chainermn::create_multi_node_optimizer(std::make_shared<chainer::optimizers::Adam>(), comm, multi_node);
  optimizer->setup(model);
  apps::set_precision(*optimizer, o);

  auto train_iter = std::make_shared<chainer::iterators::SerialIterator>(train, o.batchsize, true, true,
                                                                         uint64_t(o.seed) + uint64_t(comm->rank()));
  auto test_iter = std::make_shared<chainer::iterators::SerialIterator>(test, o.batchsize, false, false);

  auto updater = std::make_shared<chainer::training::StandardUpdater>(train_iter, optimizer);
  auto checkpointer = apps::make_checkpointer("mnist_mlp", o, comm);
  // [scatter]
  // The scatter's arguments, so a rerun with another process count maps the interrupted epoch.
  if (checkpointer) checkpointer->set_scatter(n_train, true, uint64_t(o.seed));
  // [end]
  apps::train(updater, chainermn::create_multi_node_evaluator(std::make_shared<E::Evaluator>(test_iter, model), comm), o,
              *comm, /*dump_graph=*/true, {}, checkpointer);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return apps::app_main("mnist_mlp", argc, argv, run); }
