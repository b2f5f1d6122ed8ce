// ChainerMN's channel-parallel example (examples/chainermn/parallel_convolution/train.py): the
// VGG-style network of apps/cifar_vgg.h whose convolutions are ParallelConvolution2D, each
// process computing a slice of every convolution's output channels for the same batch (the
// slices gathered after each convolution), trained with MomentumSGD (lr 0.05) and
// WeightDecay(5e-4). Rank 0 reads the data; the others iterate create_empty_dataset, and the
// multi-node iterator gives every process rank 0's batches.
//   mpiexec -n 2 build/apps/parallel_convolution [-d cifar10|cifar100|fashion-mnist] [-b 64] [-e 20]
// As in the example, a block whose input has fewer channels than there are processes (the first,
// with 3 or 1 input channels) keeps a whole Convolution2D on every process.
//
// Every process runs the whole network but its convolutions' slices, on the same batch with the
// same dropout masks, so the layers that every process holds (batch normalization, the linear
// layers) stay the same everywhere if their gradients are the same. They are made so by
// ParallelGradients below: the training computes the gradient of the sum of the processes'
// (equal) losses, n times the one loss's, and a replicated parameter upstream of a parallel
// convolution gets on each process only its slice's share of that; averaging the replicated
// gradients over the processes and dividing the slices' by n gives every parameter the gradient
// one process would compute for the whole network.
#include <iostream>
#include <string>

#include "app_common.h"
#include "cifar_vgg.h"

namespace L = chainer::links;
namespace E = chainer::training::extensions;

namespace {

struct Options : apps::CifarOptions {
  Options() : CifarOptions(20) {}
};

const std::string kUsage = std::string(R"(usage: parallel_convolution [options]
Trains ChainerMN's parallel-convolution example: the VGG-style network of train_cifar whose
convolutions each compute a slice of their output channels on every process (channel
parallelism: every process trains on the same batches), with MomentumSGD and weight decay 5e-4.
)") + apps::cifar_usage("MomentumSGD's learning rate (default 0.05)") +
                             apps::common_usage(Options{}, {"--checkpoint-interval"});  // refused: see parse

Options parse(int argc, char** argv) {
  Options o;
  for (apps::Args args(argc, argv, kUsage.c_str()); args.next();) {
    if (apps::read_common_option(args, o)) continue;
    if (!apps::read_cifar_option(args, o)) args.unknown();
  }
  apps::check_cifar_dataset(o);
  if (o.checkpoint_interval)
    throw chainer::Error("--checkpoint-interval: parallel_convolution has no multi-node checkpointer (its processes "
                         "hold different slices of the model, not copies); use -f/--frequency snapshots and -r");
  return o;
}

// See the file comment: replicated gradients averaged over the processes, the slices' divided
// by their number. Runs before WeightDecay, which then adds the decay once.
class ParallelGradients : public chainer::OptimizerHook {
 public:
  ParallelGradients(std::shared_ptr<chainermn::Communicator> comm, std::vector<chainer::Variable> replicated,
                    std::vector<chainer::Variable> slices)
      : comm_(std::move(comm)), replicated_(std::move(replicated)), slices_(std::move(slices)) {}
  std::string name() const override { return "ParallelGradients"; }
  void operator()(chainer::Optimizer&) override {
    const double n = double(comm_->size());
    for (chainer::Variable& p : replicated_)
      if (p.grad().defined())
        p.set_grad(chainer::ops::mul_scalar(comm_->allreduce(p.grad()).to(p.grad().device()), 1.0 / n));
    for (chainer::Variable& p : slices_)
      if (p.grad().defined()) p.set_grad(chainer::ops::mul_scalar(p.grad(), 1.0 / n));
  }

 private:
  std::shared_ptr<chainermn::Communicator> comm_;
  std::vector<chainer::Variable> replicated_, slices_;
};

int run(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const int64_t n_class = o.n_class(), channels = o.channels(), side = o.side();
  auto comm = apps::create_communicator(o.communicator, o.gpu);
  const bool root = comm->rank() == 0;
  const chainer::Device device = apps::choose_device(o.gpu, *comm);
  apps::set_compute(o);
  apps::check_network_memory(o, [&](int64_t) { return apps::vgg_cost(n_class, channels, side); }, device, *comm);

  chainer::datasets::DatasetPtr train, test;
  apps::set_stage("reading " + o.dataset);
  if (root) {
    std::cout << "GPU: " << (o.gpu ? "true" : "false") << "\n# Num process (COMM_WORLD): " << comm->size()
              << "\n# Minibatch-size: " << o.batchsize << "\n# epoch: " << o.epoch << "\n" << std::flush;
    std::tie(train, test) = apps::read_cifar_dataset(o);
    apps::take_subsets(train, test, o);
    std::cout << "# data: " << train->size() << " training, " << test->size() << " test examples\n\n" << std::flush;
    apps::check_batch("-b/--batchsize", o.batchsize, int64_t(train->size()), int64_t(train->size()), 1);
  }
  // [parallel-data]
  // Rank 0 holds the data; the others an empty dataset of the same length.
  train = chainermn::create_empty_dataset_from_root(train, *comm);
  test = chainermn::create_empty_dataset_from_root(test, *comm);
  // [end]
  if (o.gpu && root) {
    train = chainer::datasets::to_device(train, device);
    test = chainer::datasets::to_device(test, device);
  }

  apps::set_stage("building the model");
  // [parallel-model]
  // One seed on every process: each draws every convolution's whole filters and keeps its rows,
  // so the model is the one a single process draws, whatever their number, and the layers every
  // process holds start the same, as do the dropout masks drawn from here on.
  chainer::random::seed(uint64_t(o.seed));
  auto vgg = std::make_shared<apps::VGG>(n_class, channels, [&](int64_t in, int64_t out) {
    if (comm->size() <= in)  // as the example: a whole convolution where the input has fewer channels than processes
      return std::shared_ptr<L::Convolution2D>(
          std::make_shared<chainermn::links::ParallelConvolution2D>(comm, in, out, 3, 1, 1, /*nobias=*/true));
    return std::make_shared<L::Convolution2D>(in, out, 3, 1, 1, /*nobias=*/true);
  });
  auto model = std::make_shared<L::Classifier>(vgg);
  model->to_device(device);
  std::vector<chainer::Variable> replicated, slices;
  for (const chainer::Variable& p : model->params()) {
    bool slice = false;
    for (const auto& block : vgg->blocks())
      if (dynamic_cast<chainermn::links::ParallelConvolution2D*>(block->conv().get()) &&
          block->conv()->W().data().raw_data() == p.data().raw_data())
        slice = true;
    (slice ? slices : replicated).push_back(p);
  }

  auto optimizer = std::make_shared<chainer::optimizers::MomentumSGD>(o.learnrate);
  optimizer->setup(model);
  apps::set_precision(*optimizer, o, /*scale_loss=*/false);  // the loss lives on one rank, or hooks reduce
  optimizer->add_hook(std::make_shared<ParallelGradients>(comm, replicated, slices));
  optimizer->add_hook(std::make_shared<chainer::optimizer_hooks::WeightDecay>(5e-4));

  auto train_iter = chainermn::create_multi_node_iterator(
      std::make_shared<chainer::iterators::SerialIterator>(train, o.batchsize), comm);
  auto test_iter = chainermn::create_multi_node_iterator(
      std::make_shared<chainer::iterators::SerialIterator>(test, o.batchsize, false, false), comm);
  auto updater = std::make_shared<chainer::training::StandardUpdater>(train_iter, optimizer, nullptr,
                                                                      apps::kEagerSteps);
  // Every process evaluates the same batches (its slices are needed); rank 0 reports.
  auto evaluator = std::make_shared<E::Evaluator>(test_iter, model);
  apps::train(updater, evaluator, o, *comm, /*dump_graph=*/true);
  // [end]
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return apps::app_main("parallel_convolution", argc, argv, run); }
