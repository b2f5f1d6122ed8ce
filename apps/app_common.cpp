#include "app_common.h"

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <set>

namespace apps {

using chainer::Error;
using chainer::str;

Args::Args(int argc, char** argv, const char* usage) : words_(argv + 1, argv + argc), usage_(usage) {}

bool Args::next() {
  if (at_ >= words_.size()) return false;
  option_ = words_[at_++];
  inline_value_.reset();
  if (option_ == "-h" || option_ == "--help") {
    if (chainermn::world_rank() == 0) std::cout << usage_;
    std::exit(0);
  }
  if (auto eq = option_.find('='); option_.rfind("--", 0) == 0 && eq != std::string::npos) {
    inline_value_ = option_.substr(eq + 1);
    option_ = option_.substr(0, eq);
  }
  return true;
}

bool Args::is(const char* short_name, const char* long_name) {
  if ((short_name && option_ == short_name) || option_ == long_name) {
    names_ = short_name ? str(short_name, "/", long_name) : std::string(long_name);
    return true;
  }
  return false;
}

std::string Args::value() {
  if (!inline_value_ && at_ >= words_.size()) throw Error(str(option_, " needs a value"));
  std::string v = inline_value_ ? *inline_value_ : words_[at_++];
  if (v.empty()) throw Error(str(option_, " needs a value, got an empty one"));
  return v;
}

int64_t Args::integer(int64_t min, int64_t max) { return chainer::parse_integer(value(), names_, min, max); }

bool Args::value_follows() const { return inline_value_ || (at_ < words_.size() && words_[at_][0] != '-'); }

void Args::unknown() const { throw Error(str("unknown option '", option_, "' (see --help)")); }

bool read_common_option(Args& args, CommonOptions& o) {
  if (args.is("-b", "--batchsize")) o.batchsize = args.integer(1);
  else if (args.is("-e", "--epoch")) o.epoch = args.integer(1);
  else if (o.unit != 0 && args.is("-u", "--unit")) o.unit = args.integer(1);
  else if (args.is(nullptr, "--seed")) o.seed = args.integer(0);
  else if (args.is(nullptr, "--threads")) o.threads = int(args.integer(1, chainer::kMaxThreads));
  else if (args.is("-o", "--out")) o.out = args.value();
  else if (args.is("-r", "--resume")) o.resume = args.value();
  else if (args.is("-f", "--frequency")) {
    o.frequency = args.integer(-1);
    if (o.frequency == 0) throw Error("-f/--frequency must be -1 or positive, got 0");
  }
  else if (args.is(nullptr, "--data")) o.data = args.value();
  else if (args.is("-g", "--gpu")) o.gpu = args.value_follows() ? int(args.integer(0, 1023)) : 0;  // "--gpu" alone: 0
  else if (args.is(nullptr, "--train-size")) o.train_size = args.integer(1);
  else if (args.is(nullptr, "--test-size")) o.test_size = args.integer(1);
  else if (args.is(nullptr, "--timing")) o.timing = true;
  else if (args.is(nullptr, "--checkpoint-interval")) o.checkpoint_interval = args.integer(1);
  else if (args.is(nullptr, "--plot")) o.plot = true;
  else if (args.is(nullptr, "--no-plot")) o.plot = false;
  else return false;
  return true;
}

void set_threads(const CommonOptions& o) { chainer::set_num_threads(o.threads); }

std::string common_usage(const CommonOptions& d) {
  const bool mnist = d.data_set == Data::MNIST;
  return str("  -b, --batchsize N   examples per mini-batch (default ", d.batchsize, ")\n",
             "  -e, --epoch N       passes over the training set (default ", d.epoch, ")\n",
             d.unit != 0 ? str("  -u, --unit N        units in each hidden layer (default ", d.unit, ")\n") : "",
             R"(  -o, --out DIR       directory for the log and snapshots (default result)
  -r, --resume FILE   resume from a snapshot written by an earlier run
  -f, --frequency N   snapshot every N epochs (default -1: once, at the end)
      --checkpoint-interval N  every N iterations each process saves a checkpoint
                      (OUT/APP.RANK.ITERATION, ChainerMN's multi-node checkpointer), and a
                      rerun of the same command resumes from the newest one every process
                      holds (docs/fault_tolerance.md)
  -g, --gpu [ID]      train on CUDA device ID (default 0): model, optimizer and data on the GPU;
                      with several processes each takes device ID + intra_rank (modulo the
                      devices it sees), as the tutorial's device = comm.intra_rank
)",
             mnist ? "      --data DIR      MNIST directory (default: $MNIST_DIR, ./data/mnist, ../shared/datasets/mnist)\n"
                   : "      --data DIR      Fashion-MNIST directory (default: Debian's dataset-fashion-mnist, else\n"
                     "                      pfnet/chainer/fashion-mnist under $CHAINER_DATASET_ROOT or\n"
                     "                      ~/.chainer/dataset, downloaded there)\n",
             R"(      --train-size N  train on the first N training examples only (default: all)
      --test-size N   evaluate on the first N test examples only (default: all)
      --seed N        random seed for initialization and shuffling (default 0)
      --threads N     compute threads per process (default: cores / processes on this node)
      --timing        also log each epoch's training seconds (train_time) and the peak RSS
      --no-plot       draw no loss.png and accuracy.png (default: draw them, where this build
                      has cairo; --plot asks for them, and warns without it)
  -h, --help          show this help
)");
}

std::string find_mnist(const std::string& data_flag) {
  std::vector<std::string> candidates;
  if (!data_flag.empty()) candidates = {data_flag};
  else {
    if (const char* env = std::getenv("MNIST_DIR")) candidates.push_back(env);
    candidates.push_back("data/mnist");
    candidates.push_back("../shared/datasets/mnist");
  }
  for (const auto& c : candidates)
    if (std::filesystem::is_directory(c)) return c;
  std::string looked;
  for (const auto& c : candidates) looked += "\n  " + c;
  throw Error(str("cannot find the MNIST directory; looked in:", looked, "\nPut ",
                  chainer::datasets::mnist_files_help(), " in one of them, or pass --data DIR"));
}

void take_subsets(chainer::datasets::DatasetPtr& train, chainer::datasets::DatasetPtr& test, const CommonOptions& o) {
  auto take = [](chainer::datasets::DatasetPtr& set, int64_t n, const char* option, const char* what) {
    if (n == 0) return;
    if (size_t(n) > set->size())
      throw Error(str(option, " ", n, " is more than the ", set->size(), " ", what, " examples"));
    set = std::make_shared<chainer::datasets::SubDataset>(set, 0, size_t(n));
  };
  take(train, o.train_size, "--train-size", "training");
  take(test, o.test_size, "--test-size", "test");
}

std::shared_ptr<chainermn::Communicator> create_communicator(const std::string& requested, const std::optional<int>& gpu) {
  return chainermn::create_communicator(!requested.empty()                        ? requested
                                        : gpu && chainermn::world_size() > 1 ? "pure_nccl"
                                                                              : "naive");
}

std::string process_table(const chainermn::Communicator& comm) {
  const std::vector<int64_t> pids = comm.allgather_obj(int64_t(::getpid()));
  std::string table;
  for (int r = 0; r < comm.size(); ++r)
    table += chainer::str(r ? ", " : "", "rank ", r, " pid ", pids[size_t(r)], " on ", comm.host_names()[size_t(r)]);
  return table;
}

chainer::Device choose_device(const std::optional<int>& gpu, const chainermn::Communicator& comm) {
  if (!gpu) return chainer::Device::cpu();
  const int visible = chainer::cuda::device_count();
  const int id = visible > 0 ? (*gpu + comm.intra_rank()) % visible : *gpu;
  if (comm.intra_rank() == 0 && comm.intra_size() > visible && visible > 0)
    std::cerr << "warning: " << comm.intra_size() << " processes on this host share " << visible
              << (visible == 1 ? " GPU" : " GPUs") << " (NCCL refuses two ranks on one GPU: use --communicator flat "
              << "or hierarchical there)\n";
  chainer::cuda::get_device(id).use();
  return chainer::cuda::get_device(id).device();
}

void resume(const std::string& prefix, chainer::training::Trainer& trainer, const chainermn::Communicator& comm) {
  namespace fs = std::filesystem;
  const std::string mine = prefix + chainermn::rank_suffix(comm);
  if (!fs::exists(mine)) {
    // Snapshots of a run with another process count beside it: say so.
    const fs::path dir = fs::path(prefix).parent_path().empty() ? fs::path(".") : fs::path(prefix).parent_path();
    const std::string stem = fs::path(prefix).filename().string();
    std::set<std::string> counts;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string name = e.path().filename().string();
      const size_t of = name.rfind("-of-");
      if (name.rfind(stem + ".rank", 0) == 0 && of != std::string::npos) counts.insert(name.substr(of + 4));
      if (name == stem) counts.insert("1");
    }
    if (!counts.empty()) {
      std::string list;
      for (const std::string& c : counts) list += (list.empty() ? "" : " or ") + c;
      throw Error(str("resume: the snapshot '", mine, "' does not exist, but '", prefix, "' was written by a run of ",
                      list, counts.size() == 1 && *counts.begin() == "1" ? " process" : " processes",
                      ": resume with that many (mpiexec -n N), this run has ", comm.size()));
    }
  }
  chainer::training::load_snapshot(mine, trainer);
  // Every rank must go on from the same step: snapshots of different iterations would train out
  // of step until a collective never met.
  const int64_t iteration = trainer.updater().iteration(), epoch = trainer.updater().epoch();
  const std::vector<std::vector<int64_t>> all = comm.allgather_obj(std::vector<int64_t>{iteration, epoch});
  for (const auto& other : all) {
    if (other[0] == iteration) continue;
    std::string loaded;
    for (size_t r = 0; r < all.size(); ++r)
      loaded += str(r ? ", " : "", "rank ", r, " iteration ", all[r][0], " (epoch ", all[r][1], ")");
    throw Error(str("resume: the ranks loaded snapshots of different iterations from '", prefix, ".rank*': ", loaded,
                    "; resume every rank from one iteration's files"));
  }
}

namespace {

// --timing: at the end of each epoch, before the evaluator (a writer) runs, reports the seconds
// since the previous epoch's extensions ended (or since the start) as train_time, the part of
// them DATA_SECONDS counted as data_time (when given), and rank 0's peak RSS; the clocks restart
// after the epoch's last extension.
void add_timing(chainer::training::Trainer& trainer, bool on_gpu, std::function<double()> data_seconds) {
  using clock = std::chrono::steady_clock;
  using chainer::training::Unit;
  struct Start {
    clock::time_point time;
    double data = 0;
  };
  auto start = std::make_shared<Start>();
  auto now = [on_gpu] {
    if (on_gpu) chainer::cuda::synchronize();  // the steps may still be running on the device
    return clock::now();
  };
  chainer::training::MakeExtensionOptions report_options;
  report_options.trigger = {1, Unit::Epoch};
  report_options.default_name = "train_time";
  report_options.priority = chainer::training::PRIORITY_WRITER + 1;  // before the evaluator
  auto restart = [start, now, data_seconds](chainer::training::Trainer&) {
    *start = {now(), data_seconds ? data_seconds() : 0.0};
  };
  report_options.initializer = restart;
  trainer.extend(chainer::training::make_extension(
      [start, now, data_seconds](chainer::training::Trainer&) {
        rusage usage{};
        getrusage(RUSAGE_SELF, &usage);
        chainer::report({{"train_time", std::chrono::duration<double>(now() - start->time).count()},
                         {"peak_rss_mib", double(usage.ru_maxrss) / 1024.0}});
        if (data_seconds) chainer::report({{"data_time", data_seconds() - start->data}});
      },
      report_options));
  chainer::training::MakeExtensionOptions restart_options;
  restart_options.trigger = {1, Unit::Epoch};
  restart_options.default_name = "train_time_restart";
  restart_options.priority = std::numeric_limits<int>::min();  // after every other extension, snapshots included
  trainer.extend(chainer::training::make_extension(restart, restart_options));
}

}  // namespace

void train(const std::shared_ptr<chainer::training::Updater>& updater,
           const std::shared_ptr<chainer::training::Extension>& evaluator, const CommonOptions& o,
           const chainermn::Communicator& comm, bool dump_graph, std::function<double()> data_seconds,
           const std::shared_ptr<chainermn::MultiNodeCheckpointer>& checkpointer) {
  namespace E = chainer::training::extensions;
  using chainer::training::Unit;
  chainer::training::Trainer trainer(updater, {double(o.epoch), Unit::Epoch}, o.out);
  trainer.extend(evaluator);
  trainer.extend(E::snapshot("snapshot_iter_{.updater.iteration}" + chainermn::rank_suffix(comm)), "",
                 chainer::training::IntervalTrigger(o.frequency > 0 ? double(o.frequency) : double(o.epoch),
                                                    Unit::Epoch));
  if (o.timing) add_timing(trainer, o.gpu.has_value(), std::move(data_seconds));
  if (comm.rank() == 0) {  // reports from rank 0 only
    std::cout << "# cpu kernels: " << chainer::cpu::isa_description() << "\n" << std::flush;
    if (dump_graph) trainer.extend(E::dump_graph("main/loss"));
    trainer.extend(std::make_shared<E::LogReport>());
    std::vector<std::string> columns{"epoch",         "main/loss", "validation/main/loss", "main/accuracy",
                                     "validation/main/accuracy", "elapsed_time"};
    if (o.observe_lr) {
      trainer.extend(E::observe_lr());
      columns.push_back("lr");
    }
    trainer.extend(std::make_shared<E::PrintReport>(columns));
    trainer.extend(std::make_shared<E::ProgressBar>());
    if (o.plot.value_or(E::PlotReport::available())) {  // as Chainer's train_mnist.py
      trainer.extend(std::make_shared<E::PlotReport>(std::vector<std::string>{"main/loss", "validation/main/loss"},
                                                     "epoch", chainer::training::IntervalTrigger(1, Unit::Epoch),
                                                     E::PlotReport::Postprocess{}, "loss.png"));
      trainer.extend(std::make_shared<E::PlotReport>(
          std::vector<std::string>{"main/accuracy", "validation/main/accuracy"}, "epoch",
          chainer::training::IntervalTrigger(1, Unit::Epoch), E::PlotReport::Postprocess{}, "accuracy.png"));
    }
  }
  if (!o.resume.empty()) resume(o.resume, trainer, comm);
  if (checkpointer) {
    // [checkpointer]
    // After every extension with state is registered, so the reports continue too.
    trainer.extend(checkpointer, "", chainer::training::IntervalTrigger(double(o.checkpoint_interval), Unit::Iteration));
    if (const int64_t at = checkpointer->maybe_load(trainer); at > 0 && comm.rank() == 0)
      std::cout << "# resumed from the checkpoints of iteration " << at << " (epoch " << trainer.updater().epoch()
                << ") in " << checkpointer->path() << "\n"
                << std::flush;
    // [end]
  }
  trainer.run();
}

std::shared_ptr<chainermn::MultiNodeCheckpointer> make_checkpointer(const std::string& name, const CommonOptions& o,
                                                                    const std::shared_ptr<chainermn::Communicator>& comm) {
  if (o.checkpoint_interval <= 0) return nullptr;
  if (!o.resume.empty())
    throw Error("--checkpoint-interval resumes from its own checkpoints: give it or -r/--resume, not both");
  return chainermn::create_multi_node_checkpointer(name, comm);
}

int app_main(const char* name, int argc, char** argv, int (*run)(int, char**)) {
  return chainermn::run_main(argc, argv, [name, run](int c, char** v) -> int {
    try {
      // Started by another MPI's launcher, every process would run alone as rank 0 of 1, train
      // on everything and write the same files: refuse before any work.
      if (const std::string mismatch = chainermn::launcher_mismatch(); !mismatch.empty())
        throw Error(str("the launcher and MPI disagree: ", mismatch, ": this program was started by another MPI's "
                        "launcher (it is built with MPICH); launch it with MPICH's: mpiexec.mpich -n N ..."));
      return run(c, v);
    } catch (const std::exception& e) {
      if (chainermn::world_size() == 1) {
        std::cerr << name << ": error: " << e.what() << "\n";
        return 1;
      }
      chainermn::abort_job(str(name, ": error: ", e.what()));
    }
  });
}

}  // namespace apps
