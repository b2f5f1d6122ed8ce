// ChainerMN's train_mnist_model_parallel.py in C++: the tutorial's MLP cut in two across exactly
// two processes (apps/parallel_mlp.h). Rank 0 reads MNIST, runs l1 and computes the loss and
// accuracy on the logits rank 1 sends back; rank 1 runs l2 and l3 on what rank 0 sent. Each
// trains its own layers with its own Adam; backward crosses the processes through
// chainermn::functions::send/recv. Rank 1 holds no data: it iterates an empty dataset of the
// same length in the same order (a synchronized iterator), so both run the same iterations.
//   mpiexec -n 2 build/apps/mnist_model_parallel [-b 100] [-e 20] [-u 1000] [--gpu]
#include <iostream>
#include <string>

#include "app_common.h"
#include "parallel_mlp.h"

namespace L = chainer::links;
namespace E = chainer::training::extensions;
using chainer::Error;

namespace {

const std::string kUsage = std::string(R"(usage: mpiexec -n 2 mnist_model_parallel [options]
Trains the ChainerMN tutorial MLP on MNIST split across exactly two processes (model parallel):
layer 1 on rank 0, layers 2 and 3 on rank 1.
)") + apps::common_usage(apps::CommonOptions{});

int run(int argc, char** argv) {
  apps::CommonOptions o;
  for (apps::Args args(argc, argv, kUsage.c_str()); args.next();)
    if (!apps::read_common_option(args, o)) args.unknown();
  auto comm = chainermn::create_communicator("naive");
  if (comm->size() != 2)
    throw Error(chainer::str("this example runs on exactly 2 processes (mpiexec -n 2), got ", comm->size()));
  const bool first = comm->rank() == 0;
  const chainer::Device device = apps::choose_device(o.gpu, *comm);
  apps::set_compute(o);
  // -u and -b against the memory this process has, before any data is read: its stage's layers.
  apps::check_network_memory(
      o, [first](int64_t u) { return first ? apps::dense_cost({{784, u}}) : apps::dense_cost({{u, u}, {u, 10}}); },
      device, *comm);

  // Rank 0 reads MNIST.
  chainer::datasets::DatasetPtr train, test;
  apps::set_stage("reading MNIST");
  if (first) {
    const std::string data_dir = apps::find_mnist(o.data);
    std::cout << "# Num process (COMM_WORLD): 2 (model parallel: layer 1 on rank 0, layers 2-3 on rank 1)\n# unit: "
              << o.unit << "\n# Minibatch-size: " << o.batchsize << "\n# epoch: " << o.epoch
              << "\n# device: " << device.str() << "\n# data: " << data_dir << "\n\n" << std::flush;
    std::tie(train, test) = chainer::datasets::get_mnist(data_dir);
    apps::take_subsets(train, test, o);
  }
  // [model-parallel-data]
  // Rank 1 iterates empty examples, as many as rank 0 has.
  train = chainermn::create_empty_dataset_from_root(train, *comm);
  test = chainermn::create_empty_dataset_from_root(test, *comm);
  // [end]
  apps::check_batch("-b/--batchsize", o.batchsize, int64_t(train->size()), int64_t(train->size()), 1);
  if (first && o.gpu) {
    train = chainer::datasets::to_device(train, device);
    test = chainer::datasets::to_device(test, device);
  }

  apps::set_stage("building the model");
  chainer::random::seed(uint64_t(o.seed) + uint64_t(comm->rank()));
  std::shared_ptr<chainer::Link> model;
  if (first) model = std::make_shared<L::Classifier>(apps::first_stage(comm, o.unit));
  else model = apps::second_stage(comm, o.unit, 10);
  model->to_device(device);
  auto optimizer = std::make_shared<chainer::optimizers::Adam>();
  optimizer->setup(model);
  apps::set_precision(*optimizer, o, /*scale_loss=*/false);  // the loss lives on one rank, or hooks reduce

  // [model-parallel-iterator]
  auto train_iter = chainermn::create_synchronized_iterator(
      std::make_shared<chainer::iterators::SerialIterator>(train, o.batchsize, true, true, uint64_t(o.seed)), comm);
  // [end]
  auto updater = std::make_shared<chainer::training::StandardUpdater>(train_iter, optimizer, nullptr, apps::kEagerSteps);
  // [model-parallel-evaluator]
  // Both ranks evaluate (apps::train extends the trainer with it on every rank): rank 1's
  // Evaluator runs the second stage over its empty test examples, meeting every send and recv
  // of rank 0's evaluation.
  auto test_iter = std::make_shared<chainer::iterators::SerialIterator>(test, o.batchsize, false, false);
  auto evaluator = std::make_shared<E::Evaluator>(test_iter, model);
  // [end]
  apps::train(updater, evaluator, o, *comm, false, {}, apps::make_checkpointer("mnist_model_parallel", o, comm));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return apps::app_main("mnist_model_parallel", argc, argv, run); }
