// The averaging ensemble of ChainerMN's model-parallel guide (its example 2) in C++: every
// process holds its own MLP (the tutorial's, initialized from its own seed); all of them see
// the same batches (rank 0 reads MNIST, a multi-node iterator broadcasts its batches), and the
// ensemble's prediction is the mean of the members' logits, gathered with the differentiable
// chainermn::functions::allgather, stacked and averaged. The loss is the ensemble's, so each
// member learns to complement the others. Every rank computes the same loss and backward
// through allgather sums the ranks' gradients of each member's output (its adjoint), so each
// member's gradient is size() times that of the one loss, as in ChainerMN; Adam, the optimizer
// here, is invariant to that scale.
//   mpiexec -n 4 build/apps/mnist_ensemble [-b 100] [-e 20] [-u 1000] [--gpu]
#include <iostream>
#include <string>

#include "app_common.h"
#include "parallel_mlp.h"

namespace F = chainer::functions;
namespace L = chainer::links;
namespace E = chainer::training::extensions;
namespace mnf = chainermn::functions;
using chainer::Variable;

namespace {

const std::string kUsage = std::string(R"(usage: mpiexec -n N mnist_ensemble [options]
Trains an ensemble of N MLPs on MNIST, one per process, whose averaged logits are the
prediction (allgather + stack + average); rank 0 reports the ensemble's loss and accuracy.
)") + apps::common_usage(apps::CommonOptions{});

// This process's member and the averaging across all of them.
class Ensemble : public chainer::Chain {
 public:
  Ensemble(std::shared_ptr<chainermn::Communicator> comm, int64_t n_units, int64_t n_out) : comm_(std::move(comm)) {
    member_ = add_link("member", std::make_shared<apps::MLP>(n_units, n_out));
  }
  // [ensemble-forward]
  Variable forward(const Variable& x) override {
    const std::vector<Variable> ys = mnf::allgather(comm_, (*member_)(x));
    return F::mean(F::stack(ys, 0), 0);
  }
  // [end]

 private:
  std::shared_ptr<chainermn::Communicator> comm_;
  std::shared_ptr<apps::MLP> member_;
};

int run(int argc, char** argv) {
  apps::CommonOptions o;
  for (apps::Args args(argc, argv, kUsage.c_str()); args.next();)
    if (!apps::read_common_option(args, o)) args.unknown();
  auto comm = chainermn::create_communicator("naive");
  const bool root = comm->rank() == 0;
  const chainer::Device device = apps::choose_device(o.gpu, *comm);
  apps::set_compute(o);
  // -u and -b against the memory this process has, before any data is read.
  apps::check_network_memory(o, [](int64_t u) { return apps::dense_cost({{784, u}, {u, u}, {u, 10}}); }, device, *comm);

  std::shared_ptr<chainer::iterators::Iterator> train_iter, test_iter;
  apps::set_stage("reading MNIST");
  if (root) {
    const std::string data_dir = apps::find_mnist(o.data);
    std::cout << "# Num process (COMM_WORLD): " << comm->size() << " (an ensemble of " << comm->size()
              << " MLPs)\n# unit: " << o.unit << "\n# Minibatch-size: " << o.batchsize << "\n# epoch: " << o.epoch
              << "\n# device: " << device.str() << "\n# data: " << data_dir << "\n\n" << std::flush;
    chainer::datasets::DatasetPtr train, test;
    std::tie(train, test) = chainer::datasets::get_mnist(data_dir);
    apps::take_subsets(train, test, o);
    apps::check_batch("-b/--batchsize", o.batchsize, int64_t(train->size()), int64_t(train->size()), 1);
    train_iter = std::make_shared<chainer::iterators::SerialIterator>(train, o.batchsize, true, true, uint64_t(o.seed));
    test_iter = std::make_shared<chainer::iterators::SerialIterator>(test, o.batchsize, false, false);
  }
  // [ensemble-iterators]
  // Every rank gets rank 0's batches.
  train_iter = chainermn::create_multi_node_iterator(train_iter, comm);
  test_iter = chainermn::create_multi_node_iterator(test_iter, comm);
  // [end]

  apps::set_stage("building the model");
  chainer::random::seed(uint64_t(o.seed) + uint64_t(comm->rank()));  // members start apart
  auto model = std::make_shared<L::Classifier>(std::make_shared<Ensemble>(comm, o.unit, 10));
  model->to_device(device);
  auto optimizer = std::make_shared<chainer::optimizers::Adam>();
  optimizer->setup(model);
  apps::set_precision(*optimizer, o, /*scale_loss=*/false);  // the loss lives on one rank, or hooks reduce

  auto updater = std::make_shared<chainer::training::StandardUpdater>(train_iter, optimizer, nullptr, apps::kEagerSteps);
  apps::train(updater, std::make_shared<E::Evaluator>(test_iter, model), o, *comm, false, {},
              apps::make_checkpointer("mnist_ensemble", o, comm));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return apps::app_main("mnist_ensemble", argc, argv, run); }
