// The ChainerMN MNIST tutorial model (train_mnist.py) in C++: an MLP 784-unit-unit-10 with
// ReLU, Classifier (softmax cross-entropy + accuracy), Adam, evaluation on the test set after
// every epoch, a log, a printed report, a progress bar, a graph dump and snapshots.
//   mpiexec -n 2 build/apps/mnist_mlp [-b 100] [-e 20] [-u 1000] [-o result] [-r SNAPSHOT] [--data DIR]
//   build/apps/mnist_mlp --gpu [ID]     # model, optimizer and data on CUDA device ID (default 0)
//   mpiexec -n 2 build/apps/mnist_mlp --gpu   # each process on device intra_rank, pure_nccl
// Every process trains on its share of the data with batch -b; gradients are averaged over all.
#include <chainer.h>
#include <chainermn.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <optional>
#include <string>

namespace F = chainer::functions;
namespace L = chainer::links;
namespace E = chainer::training::extensions;
using chainer::Error;
using chainer::Variable;

namespace {

// The tutorial's network: two hidden layers with ReLU (bias + ReLU fused), then the output.
class MLP : public chainer::Chain {
 public:
  MLP(int64_t n_units, int64_t n_out) {
    l1 = add_link("l1", std::make_shared<L::Linear>(n_units));  // input size inferred
    l2 = add_link("l2", std::make_shared<L::Linear>(n_units));
    l3 = add_link("l3", std::make_shared<L::Linear>(n_out));
  }
  Variable forward(const Variable& x) override {
    Variable h1 = l1->forward_relu(x);
    Variable h2 = l2->forward_relu(h1);
    return (*l3)(h2);
  }

 private:
  std::shared_ptr<L::Linear> l1, l2, l3;
};

struct Options {
  int64_t batchsize = 100;
  int64_t epoch = 20;
  int64_t unit = 1000;
  int64_t frequency = -1;
  int64_t seed = 0;
  int threads = 0;
  std::string out = "result";
  std::string resume;
  std::string data;
  std::string communicator;  // default: naive on CPUs, pure_nccl on GPUs
  std::string reduction = "bucketed";
  std::optional<int> gpu;  // --gpu: the CUDA device
};

const char* kUsage = R"(usage: mnist_mlp [options]
Trains the ChainerMN tutorial MLP on MNIST.
  -b, --batchsize N   examples per mini-batch (default 100)
  -e, --epoch N       passes over the training set (default 20)
  -u, --unit N        units in each hidden layer (default 1000)
  -o, --out DIR       directory for the log, graph and snapshots (default result)
  -r, --resume FILE   resume from a snapshot written by an earlier run
  -f, --frequency N   snapshot every N epochs (default -1: once, at the end)
  -g, --gpu [ID]      train on CUDA device ID (default 0): model, optimizer and data on the GPU;
                      with several processes each takes device ID + intra_rank (modulo the
                      devices it sees), as the tutorial's device = comm.intra_rank
      --data DIR      MNIST directory (default: $MNIST_DIR, ./data/mnist, ../shared/datasets/mnist)
      --seed N        random seed for initialization and shuffling (default 0)
      --threads N     compute threads per process (default: cores / processes on this node)
      --communicator NAME  naive (default on CPUs), flat, hierarchical, two_dimensional,
                      single_node, pure_nccl (default with --gpu) or non_cuda_aware: the
                      communicator's all-reduce scheme, used as such
                      with --reduction communicator
      --reduction R   how the multi-node optimizer averages gradients: bucketed (default:
                      buckets reduced while backward runs, as PyTorch DDP) or communicator
                      (the communicator's multi_node_mean_grad at update time, as ChainerMN)
  -h, --help          show this help
)";

int64_t parse_int(const std::string& flag, const std::string& text, int64_t min,
                  int64_t max = std::numeric_limits<int64_t>::max()) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty())
    throw Error(chainer::str(flag, " expects an integer, got '", text, "'"));
  if (v < min) throw Error(chainer::str(flag, " must be at least ", min, ", got ", v));
  if (v > max) throw Error(chainer::str(flag, " must be at most ", max, ", got ", v));
  return v;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    std::optional<std::string> value;  // from --flag=value
    if (a == "-h" || a == "--help") {
      if (chainermn::world_rank() == 0) std::cout << kUsage;
      std::exit(0);
    }
    if (auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) value = a.substr(eq + 1), a = a.substr(0, eq);
    auto next = [&]() -> std::string {
      if (!value && i + 1 >= argc) throw Error(chainer::str(a, " needs a value"));
      std::string v = value ? *value : argv[++i];
      if (v.empty()) throw Error(chainer::str(a, " needs a value, got an empty one"));
      return v;
    };
    if (a == "-b" || a == "--batchsize") o.batchsize = parse_int("-b/--batchsize", next(), 1);
    else if (a == "-e" || a == "--epoch") o.epoch = parse_int("-e/--epoch", next(), 1);
    else if (a == "-u" || a == "--unit") o.unit = parse_int("-u/--unit", next(), 1);
    else if (a == "-f" || a == "--frequency") o.frequency = parse_int("-f/--frequency", next(), -1);
    else if (a == "--seed") o.seed = parse_int("--seed", next(), 0);
    else if (a == "--threads") o.threads = int(parse_int("--threads", next(), 1, 1024));
    else if (a == "-o" || a == "--out") o.out = next();
    else if (a == "-r" || a == "--resume") o.resume = next();
    else if (a == "--data") o.data = next();
    else if (a == "--communicator") o.communicator = next();
    else if (a == "--reduction") o.reduction = next();
    else if (a == "-g" || a == "--gpu") {
      // The ID is optional: "--gpu" alone means device 0, as does a following option.
      const bool has_id = value || (i + 1 < argc && argv[i + 1][0] != '-');
      o.gpu = has_id ? int(parse_int("-g/--gpu", next(), 0, 1023)) : 0;
    }
    else throw Error(chainer::str("unknown option '", a, "' (see --help)"));
  }
  if (o.frequency == 0) throw Error("-f/--frequency must be -1 or positive, got 0");
  if (o.reduction != "bucketed" && o.reduction != "communicator")
    throw Error(chainer::str("--reduction must be bucketed or communicator, got '", o.reduction, "'"));
  return o;
}

// --data, then $MNIST_DIR, then ./data/mnist, then ../shared/datasets/mnist.
std::string find_data(const Options& o) {
  std::vector<std::string> candidates;
  if (!o.data.empty()) candidates = {o.data};
  else {
    if (const char* env = std::getenv("MNIST_DIR")) candidates.push_back(env);
    candidates.push_back("data/mnist");
    candidates.push_back("../shared/datasets/mnist");
  }
  for (const auto& c : candidates)
    if (std::filesystem::is_directory(c)) return c;
  std::string looked;
  for (const auto& c : candidates) looked += "\n  " + c;
  throw Error(chainer::str("cannot find the MNIST directory; looked in:", looked,
                           "\nPut the four IDX files (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, "
                           "t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz; http://yann.lecun.com/exdb/mnist/ or a mirror such as "
                           "https://ossci-datasets.s3.amazonaws.com/mnist/) "
                           "in one of them, or pass --data DIR"));
}

// Each rank of a multi-process job snapshots its own state (its share of the data, its
// iterator): "snapshot_iter_600.rank1-of-4". A 1-process job keeps Chainer's plain name.
std::string rank_suffix(const chainermn::Communicator& comm) {
  return comm.size() == 1 ? std::string() : chainer::str(".rank", comm.rank(), "-of-", comm.size());
}

int run(int argc, char** argv) {
  const Options o = parse(argc, argv);
  auto comm = chainermn::create_communicator(
      !o.communicator.empty() ? o.communicator : o.gpu && chainermn::world_size() > 1 ? "pure_nccl" : "naive");
  const bool root = comm->rank() == 0;
  // A GPU that cannot be used is an error before any data is read. Several processes on a host
  // take one device each, in intra_rank order.
  chainer::Device device = chainer::Device::cpu();
  if (o.gpu) {
    const int visible = chainer::cuda::device_count();
    const int id = visible > 0 ? (*o.gpu + comm->intra_rank()) % visible : *o.gpu;
    if (comm->intra_rank() == 0 && comm->intra_size() > visible && visible > 0)
      std::cerr << "warning: " << comm->intra_size() << " processes on this host share " << visible
                << (visible == 1 ? " GPU" : " GPUs") << " (NCCL refuses two ranks on one GPU: use --communicator flat "
                << "or hierarchical there)\n";
    device = chainer::cuda::get_device(id).device();
    chainer::cuda::get_device(id).use();
  }
  if (o.threads > 0) chainer::set_num_threads(o.threads);

  // Rank 0 reads MNIST; scatter_dataset sends every worker its share, so one epoch is one pass
  // over the whole dataset across all workers.
  chainer::datasets::DatasetPtr train, test;
  if (root) {
    const std::string data_dir = find_data(o);
    std::cout << "# Num process (COMM_WORLD): " << comm->size() << "\n# Using " << comm->name()
              << " communicator, " << o.reduction << " reduction\n# unit: " << o.unit << "\n# Minibatch-size: " << o.batchsize
              << "\n# epoch: " << o.epoch << "\n# device: " << device.str()
              << "\n# threads per process: " << chainer::num_threads()
              << "\n# data: " << data_dir << "\n\n"
              << std::flush;
    std::tie(train, test) = chainer::datasets::get_mnist(data_dir);
  }
  train = chainermn::scatter_dataset(train, comm, 0, true, uint64_t(o.seed));
  // The test set need not be cut into equal shares (no all-reduce waits on its batches; the
  // multi-node evaluator weights each rank by its examples), so every test example counts once.
  test = chainermn::scatter_dataset(test, comm, 0, true, uint64_t(o.seed), /*force_equal_length=*/false);

  // On a GPU the whole dataset is copied there once and batches are gathered on the device.
  if (o.gpu) {
    train = chainer::datasets::to_device(train, device);
    test = chainer::datasets::to_device(test, device);
  }

  chainer::random::seed(uint64_t(o.seed));
  auto model = std::make_shared<L::Classifier>(std::make_shared<MLP>(o.unit, 10));
  model->to_device(device);  // the tutorial's model.to_gpu()
  // The two-line change of the tutorial: gradients are averaged over all workers between
  // backward and the update (and rank 0's parameters are broadcast first).
  chainermn::MultiNodeOptimizerOptions multi_node;
  multi_node.reduction = o.reduction;
  auto optimizer =
      chainermn::create_multi_node_optimizer(std::make_shared<chainer::optimizers::Adam>(), comm, multi_node);
  optimizer->setup(model);

  auto train_iter = std::make_shared<chainer::iterators::SerialIterator>(train, o.batchsize, true, true,
                                                                         uint64_t(o.seed) + uint64_t(comm->rank()));
  auto test_iter = std::make_shared<chainer::iterators::SerialIterator>(test, o.batchsize, false, false);

  auto updater = std::make_shared<chainer::training::StandardUpdater>(train_iter, optimizer);
  chainer::training::Trainer trainer(updater, {double(o.epoch), chainer::training::Unit::Epoch}, o.out);
  trainer.extend(chainermn::create_multi_node_evaluator(std::make_shared<E::Evaluator>(test_iter, model), comm));
  const double frequency = o.frequency == -1 ? double(o.epoch) : double(o.frequency);
  trainer.extend(E::snapshot("snapshot_iter_{.updater.iteration}" + rank_suffix(*comm)), "",
                 chainer::training::IntervalTrigger(frequency, chainer::training::Unit::Epoch));
  if (root) {  // reports from rank 0 only
    trainer.extend(E::dump_graph("main/loss"));
    trainer.extend(std::make_shared<E::LogReport>());
    trainer.extend(std::make_shared<E::PrintReport>(std::vector<std::string>{
        "epoch", "main/loss", "validation/main/loss", "main/accuracy", "validation/main/accuracy", "elapsed_time"}));
    trainer.extend(std::make_shared<E::ProgressBar>());
  }
  if (!o.resume.empty()) chainer::training::load_snapshot(o.resume + rank_suffix(*comm), trainer);
  trainer.run();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return chainermn::run_main(argc, argv, [](int c, char** v) -> int {
    try {
      return run(c, v);
    } catch (const std::exception& e) {
      // One process: a plain message and status 1. Several: end the whole job, so no rank is
      // left waiting in a collective for the one that failed.
      if (chainermn::world_size() == 1) {
        std::cerr << "mnist_mlp: error: " << e.what() << "\n";
        return 1;
      }
      chainermn::abort_job(std::string("mnist_mlp: error: ") + e.what());
    }
  });
}
