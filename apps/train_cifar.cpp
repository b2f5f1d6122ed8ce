// ChainerMN's CIFAR example (examples/chainermn/cifar/train_cifar.py): the VGG-style network of
// models/VGG.py (apps/cifar_vgg.h) trained data parallel on CIFAR-10 or CIFAR-100, with
// MomentumSGD (lr 0.05) and WeightDecay(5e-4), the learning rate halved every 25 epochs
// (ExponentialShift), the data scattered over the processes (shuffled), the multi-node evaluator
// on the test set after every epoch, snapshots, and the options the other apps share.
//   mpiexec -n 2 build/apps/train_cifar [-d cifar10|cifar100|fashion-mnist] [-b 64] [-e 300] [-l 0.05]
// --dataset fashion-mnist trains the same network on Fashion-MNIST (1 channel, 28x28: the
// poolings cover the whole input, as Chainer's by default), which needs no download where
// Debian's dataset-fashion-mnist is installed.
#include <iostream>
#include <string>

#include "app_common.h"
#include "cifar_vgg.h"

namespace L = chainer::links;
namespace E = chainer::training::extensions;

namespace {

struct Options : apps::CifarOptions {
  Options() : CifarOptions(300) {
    observe_lr = true;  // the lr column shows the ExponentialShift
  }
};

const std::string kUsage = std::string(R"(usage: train_cifar [options]
Trains ChainerMN's CIFAR example, a VGG-style network (13 conv3x3 + batch normalization + ReLU
blocks with dropout, 5 max poolings, 2 linear layers), on CIFAR-10, CIFAR-100 or Fashion-MNIST
(data parallel: each process its share of the data), with MomentumSGD, weight decay 5e-4 and
the learning rate halved every 25 epochs.
)") + apps::cifar_usage("MomentumSGD's learning rate at the start (default 0.05)") + apps::common_usage(Options{});

Options parse(int argc, char** argv) {
  Options o;
  for (apps::Args args(argc, argv, kUsage.c_str()); args.next();) {
    if (apps::read_common_option(args, o)) continue;
    if (!apps::read_cifar_option(args, o)) args.unknown();
  }
  apps::check_cifar_dataset(o);
  return o;
}

int run(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const int64_t n_class = o.n_class(), channels = o.channels(), side = o.side();
  auto comm = apps::create_communicator(o.communicator, o.gpu);
  const bool root = comm->rank() == 0;
  const chainer::Device device = apps::choose_device(o.gpu, *comm);
  apps::set_compute(o);
  apps::check_network_memory(o, [&](int64_t) { return apps::vgg_cost(n_class, channels, side); }, device, *comm);

  // Rank 0 reads the data; every process gets its share.
  chainer::datasets::DatasetPtr train, test;
  apps::set_stage("reading and scattering " + o.dataset);
  if (root) {
    std::cout << "==========================================\nNum process (COMM_WORLD): " << comm->size()
              << "\nUsing " << comm->name() << " communicator\nNum Minibatch-size: " << o.batchsize
              << "\nNum epoch: " << o.epoch << "\nDevice: " << device.str()
              << "\n==========================================\n"
              << std::flush;
    std::tie(train, test) = apps::read_cifar_dataset(o);
    apps::take_subsets(train, test, o);
    std::cout << "# data: " << train->size() << " training, " << test->size() << " test examples\n\n" << std::flush;
  }
  const int64_t n_train = comm->bcast_obj<int64_t>(root ? int64_t(train->size()) : 0);
  train = chainermn::scatter_dataset(train, comm, 0, /*shuffle=*/true, uint64_t(o.seed));
  test = chainermn::scatter_dataset(test, comm, 0, /*shuffle=*/true, uint64_t(o.seed), /*force_equal_length=*/false);
  apps::check_batch("-b/--batchsize", o.batchsize, int64_t(train->size()), n_train, comm->size());
  if (o.gpu) {
    train = chainer::datasets::to_device(train, device);
    test = chainer::datasets::to_device(test, device);
  }

  apps::set_stage("building the model");
  // [cifar-training]
  // Dropout draws other masks on every rank; rank 0's initial parameters are broadcast to all.
  chainer::random::seed(uint64_t(o.seed) + uint64_t(comm->rank()));
  auto model = std::make_shared<L::Classifier>(std::make_shared<apps::VGG>(n_class, channels));
  model->to_device(device);
  auto optimizer =
      chainermn::create_multi_node_optimizer(std::make_shared<chainer::optimizers::MomentumSGD>(o.learnrate), comm);
  optimizer->setup(model);
  apps::set_precision(*optimizer, o);
  optimizer->add_hook(std::make_shared<chainer::optimizer_hooks::WeightDecay>(5e-4));

  // As the example: the scattered share was shuffled once; each process walks it in order.
  auto train_iter = std::make_shared<chainer::iterators::SerialIterator>(train, o.batchsize, /*repeat=*/true,
                                                                         /*shuffle=*/false);
  auto test_iter = std::make_shared<chainer::iterators::SerialIterator>(test, o.batchsize, false, false);
  auto updater = std::make_shared<chainer::training::StandardUpdater>(train_iter, optimizer);
  auto evaluator = chainermn::create_multi_node_evaluator(std::make_shared<E::Evaluator>(test_iter, model), comm);
  auto checkpointer = apps::make_checkpointer("train_cifar", o, comm);
  if (checkpointer) checkpointer->set_scatter(n_train, true, uint64_t(o.seed));
  apps::train(updater, evaluator, o, *comm, /*dump_graph=*/true, {}, checkpointer, [](chainer::training::Trainer& t) {
    t.extend(std::make_shared<E::ExponentialShift>("lr", 0.5), "",
             chainer::training::IntervalTrigger(25, chainer::training::Unit::Epoch));
  });
  // [end]
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return apps::app_main("train_cifar", argc, argv, run); }
