// The programs of the ChainerMN tutorial in C++ (docs/tutorial.md) and of the README, in one
// file that includes nothing but the installed headers: the single-process Chainer script the
// tutorial starts from, step 1 (a communicator and a multi-node optimizer: every worker still
// reads the whole dataset) and step 2 (the dataset scattered, a multi-node evaluator, reports
// and snapshots from rank 0), and step 1 with gradient accumulation (batches of 400 per worker
// in micro-batches of 100).
//   build/docs/tutorial/tutorial single DATA_DIR [EPOCHS]
//   mpiexec -n 2 build/docs/tutorial/tutorial step1 DATA_DIR [EPOCHS]
//   mpiexec -n 2 build/docs/tutorial/tutorial accumulate DATA_DIR [EPOCHS]
//   mpiexec -n 2 build/docs/tutorial/tutorial step2 DATA_DIR [EPOCHS [SNAPSHOT]]  (SNAPSHOT: resume from it)
// [preamble]
#include <chainer.h>
#include <chainermn.h>

namespace F = chainer::functions;
namespace L = chainer::links;
namespace E = chainer::training::extensions;
// [end]

#include <cstdlib>
#include <string>

// [mlp]
struct MLP : chainer::Chain {
  std::shared_ptr<L::Linear> l1, l2, l3;
  MLP(int64_t units, int64_t out) {
    l1 = add_link("l1", std::make_shared<L::Linear>(units));  // input size inferred at the first call
    l2 = add_link("l2", std::make_shared<L::Linear>(units));
    l3 = add_link("l3", std::make_shared<L::Linear>(out));
  }
  chainer::Variable forward(const chainer::Variable& x) override {
    return (*l3)(F::relu((*l2)(F::relu((*l1)(x)))));
  }
};
// [end]

namespace {

// The reports every program prints.
const std::vector<std::string> kReport{"epoch",         "main/loss", "validation/main/loss", "main/accuracy",
                                       "validation/main/accuracy", "elapsed_time"};

void single(const std::string& data_dir, double epochs) {
  // [single]
  auto model = std::make_shared<L::Classifier>(std::make_shared<MLP>(1000, 10));
  auto optimizer = std::make_shared<chainer::optimizers::Adam>();
  optimizer->setup(model);
  auto [train, test] = chainer::datasets::get_mnist(data_dir);
  auto train_iter = std::make_shared<chainer::iterators::SerialIterator>(train, 100);
  auto test_iter = std::make_shared<chainer::iterators::SerialIterator>(test, 100, /*repeat=*/false, /*shuffle=*/false);
  auto updater = std::make_shared<chainer::training::StandardUpdater>(train_iter, optimizer);
  chainer::training::Trainer trainer(updater, {epochs, chainer::training::Unit::Epoch}, "result");
  trainer.extend(std::make_shared<E::Evaluator>(test_iter, model));
  trainer.extend(std::make_shared<E::LogReport>());
  trainer.extend(std::make_shared<E::PrintReport>(kReport));
  trainer.run();
  // [end]
}

void step1(const std::string& data_dir, double epochs) {
  // [step1-communicator]
  auto comm = chainermn::create_communicator("naive");
  // [end]
  // [step1-optimizer]
  auto model = std::make_shared<L::Classifier>(std::make_shared<MLP>(1000, 10));
  auto optimizer = chainermn::create_multi_node_optimizer(std::make_shared<chainer::optimizers::Adam>(), comm);
  optimizer->setup(model);
  // [end]
  auto [train, test] = chainer::datasets::get_mnist(data_dir);
  auto train_iter = std::make_shared<chainer::iterators::SerialIterator>(train, 100);
  auto test_iter = std::make_shared<chainer::iterators::SerialIterator>(test, 100, false, false);
  auto updater = std::make_shared<chainer::training::StandardUpdater>(train_iter, optimizer);
  chainer::training::Trainer trainer(updater, {epochs, chainer::training::Unit::Epoch}, "result_step1");
  trainer.extend(std::make_shared<E::Evaluator>(test_iter, model));
  trainer.extend(std::make_shared<E::LogReport>());
  trainer.extend(std::make_shared<E::PrintReport>(kReport));
  trainer.run();
}

// Step 1 with each worker's batch of 400 run as 4 micro-batches of 100 and one update.
void accumulate(const std::string& data_dir, double epochs) {
  auto comm = chainermn::create_communicator("naive");
  auto model = std::make_shared<L::Classifier>(std::make_shared<MLP>(1000, 10));
  auto optimizer = chainermn::create_multi_node_optimizer(std::make_shared<chainer::optimizers::Adam>(), comm);
  optimizer->setup(model);
  auto [train, test] = chainer::datasets::get_mnist(data_dir);
  auto test_iter = std::make_shared<chainer::iterators::SerialIterator>(test, 100, false, false);
  // [accumulate-updater]
  auto train_iter = std::make_shared<chainer::iterators::SerialIterator>(train, 400);  // the batch of one update
  chainer::training::UpdaterOptions options;
  options.micro_batches = 4;  // forward and backward on 100 examples at a time
  auto updater = std::make_shared<chainer::training::StandardUpdater>(train_iter, optimizer, nullptr, options);
  // [end]
  chainer::training::Trainer trainer(updater, {epochs, chainer::training::Unit::Epoch}, "result_accumulate");
  trainer.extend(std::make_shared<E::Evaluator>(test_iter, model));
  if (comm->rank() == 0) {
    trainer.extend(std::make_shared<E::LogReport>());
    trainer.extend(std::make_shared<E::PrintReport>(kReport));
  }
  trainer.run();
}

void step2(const std::string& data_dir, double epochs, const std::string& resume) {
  auto comm = chainermn::create_communicator("naive");
  auto model = std::make_shared<L::Classifier>(std::make_shared<MLP>(1000, 10));
  auto optimizer = chainermn::create_multi_node_optimizer(std::make_shared<chainer::optimizers::Adam>(), comm);
  optimizer->setup(model);

  // [step2-scatter]
  chainer::datasets::DatasetPtr train, test;
  if (comm->rank() == 0) std::tie(train, test) = chainer::datasets::get_mnist(data_dir);
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
    trainer.extend(std::make_shared<E::PrintReport>(kReport));
    trainer.extend(std::make_shared<E::ProgressBar>());
    trainer.extend(E::snapshot());  // every epoch: the replicas are identical, one file serves all
  }
  // [end]
  // [step2-resume]
  if (!resume.empty()) chainer::training::load_snapshot(resume, trainer);  // on every rank
  // [end]
  trainer.run();
}

}  // namespace

// [main]
int main(int argc, char** argv) {
  return chainermn::run_main(argc, argv, [](int argc, char** argv) {
    const std::string usage = "usage: tutorial single|step1|step2|accumulate DATA_DIR [EPOCHS [SNAPSHOT]]";
    if (argc < 3) throw chainer::Error(usage);
    const std::string program = argv[1], data_dir = argv[2];
    double epochs = 1;
    if (argc > 3) {
      char* end = nullptr;
      epochs = std::strtod(argv[3], &end);
      if (end == argv[3] || *end != '\0' || !(epochs > 0))
        throw chainer::Error(usage + ": EPOCHS must be a positive number, got '" + argv[3] + "'");
    }
    if (program == "single") single(data_dir, epochs);
    else if (program == "step1") step1(data_dir, epochs);
    else if (program == "step2") step2(data_dir, epochs, argc > 4 ? argv[4] : "");
    else if (program == "accumulate") accumulate(data_dir, epochs);
    else throw chainer::Error(usage);
  });
}
// [end]
