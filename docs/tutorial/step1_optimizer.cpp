// Tutorial step 1: a communicator and a multi-node optimizer -- the two-line change that makes
// a Chainer training script data-parallel. Every worker still reads the whole dataset; step 2
// scatters it.
//   mpiexec -n 2 build/docs/tutorial/step1_optimizer DATA_DIR [EPOCHS]
#include <chainer.h>
#include <chainermn.h>

#include <iostream>

#include "mlp.h"

namespace L = chainer::links;
namespace E = chainer::training::extensions;

int main(int argc, char** argv) {
  return chainermn::run_main(argc, argv, [](int argc, char** argv) {
    if (argc < 2) throw chainer::Error("usage: step1_optimizer DATA_DIR [EPOCHS]");
    const double epochs = argc > 2 ? std::stod(argv[2]) : 1;
    // [step1-communicator]
    auto comm = chainermn::create_communicator("naive");
    // [end]
    // [step1-optimizer]
    auto model = std::make_shared<L::Classifier>(std::make_shared<tutorial::MLP>(1000, 10));
    auto optimizer = chainermn::create_multi_node_optimizer(std::make_shared<chainer::optimizers::Adam>(), comm);
    optimizer->setup(model);
    // [end]
    auto [train, test] = chainer::datasets::get_mnist(argv[1]);
    auto train_iter = std::make_shared<chainer::iterators::SerialIterator>(train, 100);
    auto test_iter = std::make_shared<chainer::iterators::SerialIterator>(test, 100, false, false);
    auto updater = std::make_shared<chainer::training::StandardUpdater>(train_iter, optimizer);
    chainer::training::Trainer trainer(updater, {epochs, chainer::training::Unit::Epoch}, "result_step1");
    trainer.extend(std::make_shared<E::Evaluator>(test_iter, model));
    trainer.extend(std::make_shared<E::LogReport>());
    trainer.extend(std::make_shared<E::PrintReport>(std::vector<std::string>{
        "epoch", "main/loss", "validation/main/loss", "main/accuracy", "validation/main/accuracy"}));
    trainer.run();
  });
}
