// Tutorial step 2: rank 0 reads the data and scatters it, a multi-node evaluator averages the
// validation results over the workers, and only rank 0 prints and logs.
//   mpiexec -n 2 build/docs/tutorial/step2_dataset DATA_DIR [EPOCHS]
#include <chainer.h>
#include <chainermn.h>

#include "mlp.h"

namespace L = chainer::links;
namespace E = chainer::training::extensions;

int main(int argc, char** argv) {
  return chainermn::run_main(argc, argv, [](int argc, char** argv) {
    if (argc < 2) throw chainer::Error("usage: step2_dataset DATA_DIR [EPOCHS]");
    const double epochs = argc > 2 ? std::stod(argv[2]) : 1;
    auto comm = chainermn::create_communicator("naive");
    auto model = std::make_shared<L::Classifier>(std::make_shared<tutorial::MLP>(1000, 10));
    auto optimizer = chainermn::create_multi_node_optimizer(std::make_shared<chainer::optimizers::Adam>(), comm);
    optimizer->setup(model);

    // [step2-scatter]
    chainer::datasets::DatasetPtr train, test;
    if (comm->rank() == 0) std::tie(train, test) = chainer::datasets::get_mnist(argv[1]);
    train = chainermn::scatter_dataset(train, comm, 0, /*shuffle=*/true);
    test = chainermn::scatter_dataset(test, comm, 0, /*shuffle=*/true, /*seed=*/0, /*force_equal_length=*/false);
    // [end]
    auto train_iter = std::make_shared<chainer::iterators::SerialIterator>(train, 100);
    auto test_iter = std::make_shared<chainer::iterators::SerialIterator>(test, 100, false, false);
    auto updater = std::make_shared<chainer::training::StandardUpdater>(train_iter, optimizer);
    chainer::training::Trainer trainer(updater, {epochs, chainer::training::Unit::Epoch}, "result_step2");
    // [step2-evaluator]
    auto evaluator = std::make_shared<E::Evaluator>(test_iter, model);
    trainer.extend(chainermn::create_multi_node_evaluator(evaluator, comm));
    // [end]
    // [step2-rank0]
    if (comm->rank() == 0) {
      trainer.extend(E::dump_graph("main/loss"));
      trainer.extend(std::make_shared<E::LogReport>());
      trainer.extend(std::make_shared<E::PrintReport>(std::vector<std::string>{
          "epoch", "main/loss", "validation/main/loss", "main/accuracy", "validation/main/accuracy", "elapsed_time"}));
      trainer.extend(std::make_shared<E::ProgressBar>());
    }
    // [end]
    trainer.run();
  });
}
