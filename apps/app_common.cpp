#include "app_common.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <new>
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

double Args::positive_number(double above) {
  const std::string text = value();
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v))
    throw Error(str(names_, " expects a number, got '", text, "'"));
  if (!(v > above)) throw Error(str(names_, " must be greater than ", above, ", got ", text));
  return v;
}

bool Args::value_follows() const { return inline_value_ || (at_ < words_.size() && words_[at_][0] != '-'); }

void Args::unknown() const { throw Error(str("unknown option '", option_, "' (see --help)")); }

bool read_dtype_option(Args& args, chainer::config::Dtype& dtype) {
  if (!args.is(nullptr, "--dtype")) return false;
  const std::string name = args.value();
  if (name == "float64") throw Error("--dtype float64 is not supported by the apps (their data are float32)");
  try {
    dtype = chainer::config::parse_dtype(name);
  } catch (const Error& e) {
    throw Error(str("--dtype: ", e.what()));
  }
  return true;
}

bool read_common_option(Args& args, CommonOptions& o) {
  if (args.is("-b", "--batchsize")) o.batchsize = args.integer(1);
  else if (args.is("-e", "--epoch")) o.epoch = args.integer(1);
  else if (o.unit != 0 && args.is("-u", "--unit")) o.unit = args.integer(1);
  else if (args.is(nullptr, "--seed")) o.seed = args.integer(0);
  else if (args.is(nullptr, "--threads")) {
    const int64_t n = args.integer(1);
    check_threads("--threads", n, "compute threads");
    o.threads = int(n);
  }
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
  else if (read_dtype_option(args, o.dtype)) return true;
  else if (args.is(nullptr, "--checkpoint-interval")) o.checkpoint_interval = args.integer(1);
  else if (args.is(nullptr, "--plot")) o.plot = true;
  else if (args.is(nullptr, "--no-plot")) o.plot = false;
  else return false;
  return true;
}

void set_precision(chainer::Optimizer& optimizer, const CommonOptions& o, bool scale_loss) {
  using chainer::config::Dtype;
  if (o.dtype == Dtype::Float16 || o.dtype == Dtype::BFloat16) optimizer.use_fp32_update();
  if (scale_loss && (o.dtype == Dtype::Float16 || o.dtype == Dtype::Mixed16)) optimizer.loss_scaling();
}

void set_compute(const CommonOptions& o) {
  set_stage("starting the compute threads");
  chainer::set_num_threads(o.threads);
  chainer::config::set_dtype(o.dtype);
}

namespace {
// TEXT without the entries of the options in OWN: an entry is its option's line and the lines
// under it that continue its description (indented past the option column).
std::string without_options(const std::string& text, const std::vector<std::string>& own) {
  std::string out;
  bool dropping = false;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    const std::string line = text.substr(at, end - at);
    at = end + 1;
    const bool continuation = line.starts_with(std::string(22, ' '));
    if (!continuation) {
      dropping = false;
      for (const std::string& o : own)
        if (line.find(o + " ") != std::string::npos || line.ends_with(o)) dropping = true;
    }
    if (!dropping) out += line + "\n";
  }
  return out;
}
}  // namespace

std::string common_usage(const CommonOptions& d, const std::vector<std::string>& own) {
  const bool mnist = d.data_set == Data::MNIST;
  return without_options(str("  -b, --batchsize N   examples per mini-batch (default ", d.batchsize, ")\n",
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
             d.data_set == Data::Other ? ""
             : mnist ? "      --data DIR      MNIST directory (default: $MNIST_DIR, ./data/mnist, ../shared/datasets/mnist)\n"
                     : "      --data DIR      Fashion-MNIST directory (default: Debian's dataset-fashion-mnist, else\n"
                     "                      pfnet/chainer/fashion-mnist under $CHAINER_DATASET_ROOT or\n"
                     "                      ~/.chainer/dataset, downloaded there)\n",
             R"(      --train-size N  train on the first N training examples only (default: all)
      --test-size N   evaluate on the first N test examples only (default: all)
      --seed N        random seed for initialization and shuffling (default 0)
      --threads N     compute threads per process (default: cores / processes on this node;
                      at most 8 per core it may run on)
      --dtype D       float32 (default), mixed16, mixed_bf16, float16 or bfloat16: the dtype the
                      model computes in (mixed: float32 parameters, half activations, as
                      Chainer's mixed16 and PyTorch's autocast; float16 and mixed16 scale the
                      loss dynamically; docs/mixed_precision.md)
      --timing        also log each epoch's training seconds (train_time) and the peak RSS
      --no-plot       draw no loss.png and accuracy.png (default: draw them, where this build
                      has cairo; --plot asks for them, and warns without it)
  -h, --help          show this help
)"), own);
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
  set_stage("creating the communicator");
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
  set_stage("choosing the device");
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

int64_t snapshot_process_count(const std::string& name, const std::string& stem) {
  const std::string head = stem + ".rank";
  if (name.size() <= head.size() || name.compare(0, head.size(), head) != 0) return 0;
  // A run of up to 9 digits without leading zeros (rank_suffix writes none) at AT, read past;
  // -1 when there is none.
  auto digits = [&name](size_t& at) -> int64_t {
    const size_t start = at;
    int64_t value = 0;
    for (; at < name.size() && at - start < 9 && std::isdigit(static_cast<unsigned char>(name[at])); ++at)
      value = value * 10 + (name[at] - '0');
    return at == start || (name[start] == '0' && at - start > 1) ? -1 : value;
  };
  size_t at = head.size();
  const int64_t rank = digits(at);
  if (rank < 0 || name.compare(at, 4, "-of-") != 0) return 0;
  at += 4;
  const int64_t count = digits(at);
  return at == name.size() && count > rank ? count : 0;
}

namespace {
// The restored parameters go into the shared updates now, before the first forward (every rank
// resumes, so these collectives are met, in the same order): a graph recorded before the first
// update then sees its step, as in an uninterrupted run (MultiNodeOptimizer::plan_shared_update).
void plan_shared_updates(chainer::training::Trainer& trainer) {
  for (const auto& entry : trainer.updater().get_all_optimizers())
    if (auto* mn = dynamic_cast<chainermn::MultiNodeOptimizer*>(entry.second)) mn->plan_shared_update();
}
}  // namespace

void resume(const std::string& prefix, chainer::training::Trainer& trainer, const chainermn::Communicator& comm) {
  namespace fs = std::filesystem;
  const std::string mine = prefix + chainermn::rank_suffix(comm);
  if (!fs::exists(mine)) {
    // Snapshots of a run with another process count beside it: say so.
    const fs::path dir = fs::path(prefix).parent_path().empty() ? fs::path(".") : fs::path(prefix).parent_path();
    const std::string stem = fs::path(prefix).filename().string();
    // Only names the snapshot extension writes count: STEM itself (one process) and
    // STEM.rankR-of-N with R < N, digits only. A save cut short leaves its temporary file
    // (STEM.rank1-of-2.tmp.PID.K), which names no process count.
    std::set<int64_t> counts;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string name = e.path().filename().string();
      if (name == stem) counts.insert(1);
      else if (const int64_t n = snapshot_process_count(name, stem); n > 0) counts.insert(n);
    }
    if (!counts.empty()) {
      std::string list;
      for (const int64_t c : counts) list += str(list.empty() ? "" : " or ", c);
      throw Error(str("resume: the snapshot '", mine, "' does not exist, but '", prefix, "' was written by a run of ",
                      list, counts.size() == 1 && *counts.begin() == 1 ? " process" : " processes",
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
  // Debug mode: the replicas of a data-parallel model must have loaded the same parameters.
  for (const auto& [name, optimizer] : trainer.updater().get_all_optimizers())
    if (auto* mn = dynamic_cast<chainermn::MultiNodeOptimizer*>(optimizer);
        mn && mn->communicator().debug() && mn->communicator().averages_gradients())
      mn->communicator().check_params_consistent(mn->target(), str("resume: '", prefix, "' (optimizer '", name, "')"));
  plan_shared_updates(trainer);
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
           const std::shared_ptr<chainermn::MultiNodeCheckpointer>& checkpointer,
           const std::function<void(chainer::training::Trainer&)>& extend) {
  namespace E = chainer::training::extensions;
  using chainer::training::Unit;
  chainer::training::Trainer trainer(updater, {double(o.epoch), Unit::Epoch}, o.out);
  trainer.extend(evaluator);
  trainer.extend(E::snapshot("snapshot_iter_{.updater.iteration}" + chainermn::rank_suffix(comm)), "",
                 chainer::training::IntervalTrigger(o.frequency > 0 ? double(o.frequency) : double(o.epoch),
                                                    Unit::Epoch));
  if (o.timing) add_timing(trainer, o.gpu.has_value(), std::move(data_seconds));
  if (extend) extend(trainer);
  if (comm.rank() == o.report_rank) {  // reports from one rank only
    std::cout << "# cpu kernels: " << chainer::cpu::isa_description() << "\n" << std::flush;
    if (dump_graph) trainer.extend(E::dump_graph("main/loss"));
    trainer.extend(std::make_shared<E::LogReport>());
    std::vector<std::string> columns{"epoch"};
    if (o.report_columns.empty())
      columns.insert(columns.end(),
                     {"main/loss", "validation/main/loss", "main/accuracy", "validation/main/accuracy"});
    else columns.insert(columns.end(), o.report_columns.begin(), o.report_columns.end());
    columns.push_back("elapsed_time");
    if (o.observe_lr) {
      trainer.extend(E::observe_lr());
      columns.push_back("lr");
    }
    trainer.extend(std::make_shared<E::PrintReport>(columns));
    trainer.extend(std::make_shared<E::ProgressBar>());
    if (o.plot.value_or(E::PlotReport::available())) {  // as Chainer's train_mnist.py
      std::vector<std::pair<std::string, std::vector<std::string>>> plots = o.plots;
      if (plots.empty())
        plots = {{"loss.png", {"main/loss", "validation/main/loss"}},
                 {"accuracy.png", {"main/accuracy", "validation/main/accuracy"}}};
      for (const auto& [file, keys] : plots)
        trainer.extend(std::make_shared<E::PlotReport>(keys, "epoch",
                                                       chainer::training::IntervalTrigger(1, Unit::Epoch),
                                                       E::PlotReport::Postprocess{}, file));
    }
  }
  if (!o.resume.empty()) {
    set_stage(str("resuming from '", o.resume, "'"));
    resume(o.resume, trainer, comm);
  }
  if (checkpointer) {
    set_stage(str("looking for checkpoints to resume from in '", o.out, "'"));
    // [checkpointer]
    // After every extension with state is registered, so the reports continue too.
    trainer.extend(checkpointer, "", chainer::training::IntervalTrigger(double(o.checkpoint_interval), Unit::Iteration));
    if (const int64_t at = checkpointer->maybe_load(trainer); at > 0 && comm.rank() == 0)
      std::cout << "# resumed from the checkpoints of iteration " << at << " (epoch " << trainer.updater().epoch()
                << ") in " << checkpointer->path() << "\n"
                << std::flush;
    // [end]
    plan_shared_updates(trainer);
  }
  set_stage([updater] {
    return str("training (", updater->iteration(), " iterations done, epoch ", updater->epoch(), ")");
  });
  trainer.run();
}

std::shared_ptr<chainermn::MultiNodeCheckpointer> make_checkpointer(const std::string& name, const CommonOptions& o,
                                                                    const std::shared_ptr<chainermn::Communicator>& comm) {
  if (o.checkpoint_interval <= 0) return nullptr;
  if (!o.resume.empty())
    throw Error("--checkpoint-interval resumes from its own checkpoints: give it or -r/--resume, not both");
  return chainermn::create_multi_node_checkpointer(name, comm);
}

std::string format_bytes(double bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  size_t unit = 0;
  for (; bytes >= 1024 && unit + 1 < std::size(units); ++unit) bytes /= 1024;
  char text[64];
  if (unit == 0) std::snprintf(text, sizeof text, "%.0f B", bytes);
  else std::snprintf(text, sizeof text, "%.1f %s", bytes, units[unit]);
  return text;
}

namespace {

// The number in the first line of PATH, or nullopt (no such file, "max", not a number).
std::optional<double> read_number(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word.empty() || !std::isdigit(static_cast<unsigned char>(word[0]))) return std::nullopt;
  return std::strtod(word.c_str(), nullptr);
}

// The value in kB of the line "KEY: N kB" of /proc/FILE, in bytes.
std::optional<double> proc_kib(const char* file, const std::string& key) {
  std::ifstream in(std::string("/proc/") + file);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key + ":", 0) == 0) return std::strtod(line.c_str() + key.size() + 1, nullptr) * 1024;
  return std::nullopt;
}

// The least room under the memory limits of this process's cgroup and those above it: v2's
// memory.max (one hierarchy, the line "0::PATH" of /proc/self/cgroup), else v1's memory
// controller (the line "N:memory:PATH"). Inside a container the path may not exist under the
// mount (it shows the container's own cgroup at the root): the mount's root counts then.
// LIMIT_TEXT gets the limit, as "the cgroup's memory limit of 4.0 GiB (FILE)".
std::optional<double> cgroup_room(std::string& limit_text) {
  std::ifstream in("/proc/self/cgroup");
  std::optional<double> best;
  auto consider = [&](const std::filesystem::path& dir, const char* max_file, const char* usage_file) {
    const std::optional<double> max = read_number(dir / max_file), usage = read_number(dir / usage_file);
    if (!max || !usage || *max >= double(int64_t(1) << 62)) return;  // v1 writes "no limit" as 2^63 - 4096
    const double room = std::max(0.0, *max - *usage);
    if (best && room >= *best) return;
    best = room;
    limit_text = str("the cgroup's memory limit of ", format_bytes(*max), " (", (dir / max_file).string(), ")");
  };
  for (std::string line; std::getline(in, line);) {
    const size_t c1 = line.find(':'), c2 = c1 == std::string::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string::npos) continue;
    const std::string controllers = line.substr(c1 + 1, c2 - c1 - 1), path = line.substr(c2 + 1);
    std::filesystem::path mount;
    const char *max_file = nullptr, *usage_file = nullptr;
    if (line.rfind("0::", 0) == 0) mount = "/sys/fs/cgroup", max_file = "memory.max", usage_file = "memory.current";
    else if (controllers == "memory")
      mount = "/sys/fs/cgroup/memory", max_file = "memory.limit_in_bytes", usage_file = "memory.usage_in_bytes";
    else continue;
    for (std::filesystem::path dir = mount / std::filesystem::path(path).relative_path();; dir = dir.parent_path()) {
      consider(dir, max_file, usage_file);
      if (dir.string().size() <= mount.string().size()) break;
    }
  }
  return best;
}

}  // namespace

MemoryRoom host_memory_room(int processes_on_host) {
  const int k = std::max(1, processes_on_host);
  MemoryRoom room{std::numeric_limits<double>::infinity(), "no known limit"};
  // A limit the processes of this host share: each has its share of it.
  auto shared = [&room, k](double bytes, const std::string& what) {
    if (bytes / k >= room.bytes) return;
    room.bytes = bytes / k;
    room.text = k == 1 ? str("the ", format_bytes(bytes), " ", what)
                       : str("the ", format_bytes(bytes / k), " ", what, " for each of the ", k,
                             " processes on this host (", format_bytes(bytes), " in all)");
  };
  if (const std::optional<double> available = proc_kib("meminfo", "MemAvailable"))
    shared(*available, "of memory available (MemAvailable)");
  std::string cgroup_limit;
  if (const std::optional<double> cgroup = cgroup_room(cgroup_limit))
    shared(*cgroup, "left under " + cgroup_limit);
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {  // each process's own
    const double used = proc_kib("self/status", "VmSize").value_or(0);
    const double left = std::max(0.0, double(limit.rlim_cur) - used);
    if (left < room.bytes)
      room = {left, str("the ", format_bytes(left), " left under this process's address-space limit (ulimit -v) of ",
                        format_bytes(double(limit.rlim_cur)))};
  }
  return room;
}

std::string memory_refusal(const std::vector<FlagValue>& flags, const MemoryModel& model, const MemoryRoom& room) {
  std::vector<int64_t> values;
  for (const FlagValue& f : flags) values.push_back(f.value);
  auto total = [&model](const std::vector<int64_t>& at) {
    double sum = 0;
    for (const MemoryPart& part : model(at)) sum += part.bytes;
    return sum;
  };
  const std::vector<MemoryPart> parts = model(values);
  double sum = 0;
  const MemoryPart* largest = nullptr;
  for (const MemoryPart& part : parts) {
    sum += part.bytes;
    if (!largest || part.bytes > largest->bytes) largest = &part;
  }
  if (!largest || sum <= room.bytes) return "";
  // The most each flag could be with the others as given (0: not even 1 fits), by bisection:
  // the total grows with every flag.
  std::vector<int64_t> most(flags.size(), 0);
  for (size_t i = 0; i < flags.size(); ++i) {
    std::vector<int64_t> at = values;
    auto fits = [&](int64_t v) {
      at[i] = v;
      return total(at) <= room.bytes;
    };
    if (values[i] < 1 || !fits(1)) continue;
    int64_t lo = 1, hi = values[i];  // fits(lo), !fits(hi)
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      (fits(mid) ? lo : hi) = mid;
    }
    most[i] = lo;
  }
  // The flag to name: of those that could make it fit alone, the one furthest beyond its most
  // (--insize 1000000000 rather than the -B 16 whose batch it makes huge); when none can, the
  // owner of the largest part, which no other option can shrink below the room.
  size_t named = largest->flag;
  double furthest = 0;
  for (size_t i = 0; i < flags.size(); ++i)
    if (most[i] > 0 && double(values[i]) / double(most[i]) > furthest)
      named = i, furthest = double(values[i]) / double(most[i]);
  const FlagValue& flag = flags[named];
  std::string message = str(flag.option, " ", flag.value, ": ", largest->what, " needs at least ",
                            format_bytes(largest->bytes));
  if (sum - largest->bytes > 0.05 * sum) message += str(" (", format_bytes(sum), " with the rest)");
  message += str(", more than ", room.text);
  if (most[named] > 0) return message + str("; no more than ", most[named], " ", flag.unit, " can fit");
  std::string others;
  for (size_t i = 0; i < flags.size(); ++i)
    if (i != named) others += str(others.empty() ? "" : " ", flags[i].option, " ", flags[i].value);
  return message + str("; even ", flag.option, " 1 does not fit beside the other options (", others, ")");
}

void check_memory(const std::vector<FlagValue>& flags, const MemoryModel& model, const chainer::Device& device,
                  const chainermn::Communicator& comm) {
  MemoryRoom room;
  if (device.is_cuda()) {
    const double total = double(chainer::cuda::device_properties(device.index).total_memory_bytes);
    const int visible = std::max(1, chainer::cuda::device_count());
    const int sharing = (comm.intra_size() + visible - 1) / visible;  // choose_device deals devices round
    room = sharing > 1 ? MemoryRoom{total / sharing, str("the ", format_bytes(total / sharing), " of ", device.str(),
                                                         " for each of the ", sharing, " processes sharing it")}
                       : MemoryRoom{total, str("the ", format_bytes(total), " of ", device.str())};
  } else {
    room = host_memory_room(comm.intra_size());
  }
  if (const std::string refusal = memory_refusal(flags, model, room); !refusal.empty()) throw Error(refusal);
}

DenseCost dense_cost(const std::vector<std::pair<int64_t, int64_t>>& layers) {
  DenseCost cost;
  double parameters = 0, activations = 0;
  for (const auto& [in, out] : layers) {
    parameters += double(in) * double(out) + double(out);
    activations += double(out);
  }
  cost.parameter_count = parameters < 9e18 ? int64_t(parameters) : std::numeric_limits<int64_t>::max();
  cost.parameters = parameters * 4 * 4;  // float32: the values, the gradients, Adam's m and v
  cost.per_example = layers.empty() ? 0 : (double(layers.front().first) + 1 + 2 * activations) * 4;
  return cost;
}

void check_network_memory(const CommonOptions& o, const std::function<DenseCost(int64_t units)>& cost,
                          const chainer::Device& device, const chainermn::Communicator& comm) {
  const bool units = o.unit != 0;
  std::vector<FlagValue> flags{{"-b/--batchsize", o.batchsize, "examples"}};
  if (units) flags.push_back({"-u/--unit", o.unit, "units"});
  check_memory(
      flags,
      [&cost, units](const std::vector<int64_t>& v) {
        const DenseCost c = cost(units ? v[1] : 0);
        std::vector<MemoryPart> parts{
            {0, str("a batch of ", v[0], " examples (each its input, its label and every layer's output with its ",
                    "gradient, float32)"),
             double(v[0]) * c.per_example}};
        if (units)
          parts.push_back({1, str("a network of ", v[1], " units per hidden layer (the ", c.parameter_count,
                                  " parameters this process holds, with their gradients and Adam's two moments, ",
                                  "float32)"),
                           c.parameters});
        return parts;
      },
      device, comm);
}

int max_threads() {
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  const int cores = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? std::max(1, CPU_COUNT(&cpus)) : 1;
  return std::min(chainer::kMaxThreads, 8 * cores);
}

void check_threads(const std::string& option, int64_t n, const std::string& what) {
  const int most = max_threads();
  if (n <= most) return;
  const int cores = most / 8;
  throw Error(str(option, " ", n, ": ", n, " ", what, " are more than this process can use: at most ", most,
                  most == chainer::kMaxThreads
                      ? std::string()
                      : str(", 8 for each of the ", cores, cores == 1 ? " core" : " cores", " it may run on"),
                  "; more would only take turns on the same cores"));
}

void check_batch(const std::string& option, int64_t batch, int64_t per_process, int64_t total, int processes) {
  if (batch <= per_process) return;
  throw Error(str(option, " ", batch, ": a batch of ", batch, " examples is more than the ",
                  processes > 1 ? str(per_process, " training examples each of the ", processes,
                                      " processes iterates over (", total, " in all)")
                                : str(total, " training examples"),
                  ": every batch would repeat examples; at most ", per_process));
}

namespace {

std::function<std::string()> g_stage = [] { return std::string("starting"); };

std::string stage() {
  try {
    return g_stage();
  } catch (...) {
    return "an unknown stage";
  }
}

}  // namespace

void set_stage(std::string what) {
  g_stage = [what = std::move(what)] { return what; };
}

void set_stage(std::function<std::string()> what) { g_stage = std::move(what); }

std::string error_message(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const Error& error) {
    return error.what();
  } catch (const std::bad_alloc&) {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    const MemoryRoom room = host_memory_room();
    return str("out of memory while ", stage(), ": an allocation failed (std::bad_alloc) with this process at ",
               format_bytes(double(usage.ru_maxrss) * 1024), " resident at its peak, and ",
               std::isfinite(room.bytes) ? room.text : std::string("no known limit"),
               " left; a smaller batch or model, or fewer processes on this host, needs less");
  } catch (const std::exception& other) {
    return str(chainermn::exception_type_name(other), " while ", stage(), ": ", other.what());
  } catch (...) {
    return str("an exception of unknown type while ", stage());
  }
}

int app_main(const char* name, int argc, char** argv, int (*run)(int, char**)) {
  return chainermn::run_main(argc, argv, [name, run](int c, char** v) -> int {
    try {
      set_stage("reading the options");
      // Started by another MPI's launcher, every process would run alone as rank 0 of 1, train
      // on everything and write the same files: refuse before any work.
      if (const std::string mismatch = chainermn::launcher_mismatch(); !mismatch.empty())
        throw Error(str("the launcher and MPI disagree: ", mismatch, ": this program was started by another MPI's "
                        "launcher (it is built with MPICH); launch it with MPICH's: mpiexec.mpich -n N ..."));
      return run(c, v);
    } catch (...) {
      const std::string message = error_message(std::current_exception());
      if (chainermn::world_size() == 1) {
        std::cerr << name << ": error: " << message << "\n";
        return 1;
      }
      chainermn::abort_job(str(name, ": error: ", message));
    }
  });
}

}  // namespace apps
