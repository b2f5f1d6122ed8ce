// What the apps share (the MNIST MLPs and the Fashion-MNIST CNN): reading their options (-b 100,
// --batchsize 100, --batchsize=100), the options every one of them has, finding MNIST, cutting
// the data to a subset, choosing each process's device, per-rank snapshot names, the reports of
// rank 0, and main()'s handling of errors (one process: the message and status 1; several: the
// whole job ends with the message, so no rank waits for the one that failed).
#pragma once
#include <chainer.h>
#include <chainermn.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace apps {

// Reads argv one option at a time:
//   for (apps::Args args(argc, argv, usage); args.next();)
//     if (args.is("-b", "--batchsize")) o.batchsize = args.integer(1); else ... else args.unknown();
// -h/--help prints USAGE on rank 0 and exits 0.
class Args {
 public:
  Args(int argc, char** argv, const char* usage);
  bool next();  // the next option; false after the last
  bool is(const char* short_name, const char* long_name);  // short_name may be nullptr; names errors
  const std::string& option() const { return option_; }
  std::string value();  // the option's value: after '=', or the next word; never empty
  // The value as an integer in [MIN, MAX]; errors name the option as "-b/--batchsize".
  int64_t integer(int64_t min, int64_t max = std::numeric_limits<int64_t>::max());
  // The value as a finite number greater than ABOVE (a learning rate: "0.05", "5e-2").
  double positive_number(double above = 0.0);
  // Whether a value follows (after '=', or a next word that is not an option): for --gpu [ID].
  bool value_follows() const;
  [[noreturn]] void unknown() const;

 private:
  std::vector<std::string> words_;
  const char* usage_;
  size_t at_ = 0;
  std::string option_, names_;
  std::optional<std::string> inline_value_;
};

// The data set an app trains on: what --data names and where it is looked for by default.
// Other: the app reads its own data and documents its own --data.
enum class Data { MNIST, FashionMNIST, Other };

// The options of every app, with the MNIST tutorial's defaults; an app changes a default by
// setting the field before reading the options (common_usage then prints it).
struct CommonOptions {
  int64_t batchsize = 100;
  int64_t epoch = 20;
  int64_t unit = 1000;  // 0: the app has no -u/--unit (no hidden layer of a chosen width)
  int64_t seed = 0;
  int64_t frequency = -1;  // snapshot every N epochs; -1: once, at the end
  int64_t checkpoint_interval = 0;  // --checkpoint-interval: the multi-node checkpointer every N iterations; 0: none
  int threads = 0;  // 0: cores / processes on this node
  std::string out = "result";
  std::string resume;
  std::string data;
  std::optional<int> gpu;
  Data data_set = Data::MNIST;
  int64_t train_size = 0, test_size = 0;  // --train-size, --test-size: the first N examples; 0: all
  bool timing = false;  // --timing: log each epoch's training seconds and the peak RSS
  // --dtype: config::dtype while the app builds and trains its model (nn/autocast.h).
  chainer::config::Dtype dtype = chainer::config::Dtype::Float32;
  // --plot, --no-plot: loss.png and accuracy.png; unset: whenever PlotReport::available()
  std::optional<bool> plot;
  bool observe_lr = false;  // set by an app: report the optimizer's lr (observe_lr) and print its column
  // Set by an app whose model is not a classifier: the report's columns between "epoch" and
  // "elapsed_time", and the plots drawn (file name, keys); empty: a classifier's loss and accuracy.
  std::vector<std::string> report_columns;
  std::vector<std::pair<std::string, std::vector<std::string>>> plots;
  // Set by a model-parallel app: the rank that holds the loss and so logs, prints and plots.
  int report_rank = 0;
};
// How this process computes, set before the app reads data or makes its model: the CPU math
// team's size (--threads, else CHAINER_NUM_THREADS (throws naming a bad value), else the default
// of core/util/parallel.h) and config::dtype (--dtype).
void set_compute(const CommonOptions& o);
// Readies OPTIMIZER for O.dtype: float32 master copies of half parameters (use_fp32_update)
// under float16 and bfloat16, and, with SCALE_LOSS, dynamic loss scaling under float16 and
// mixed16, whose gradients would otherwise underflow (bfloat16 has float32's range and needs
// none). The model-parallel apps pass SCALE_LOSS false: their loss lives on one rank.
void set_precision(chainer::Optimizer& optimizer, const CommonOptions& o, bool scale_loss = true);
// Reads --dtype into DTYPE when it is the current option (a chainer::Error for a bad name or
// float64); false otherwise. Part of read_common_option, for the apps with their own parsing.
bool read_dtype_option(Args& args, chainer::config::Dtype& dtype);
// Reads the current option into O when it is one of CommonOptions'; false otherwise.
bool read_common_option(Args& args, CommonOptions& o);
// Their lines of the usage text, with the defaults and the data set of DEFAULTS (and -u only
// where the app has it), less the options in OWN ("--timing"), which the app describes itself.
std::string common_usage(const CommonOptions& defaults, const std::vector<std::string>& own = {});

// --data, then $MNIST_DIR, then ./data/mnist, then ../shared/datasets/mnist; an error lists
// where it looked and where to get the files.
std::string find_mnist(const std::string& data_flag);

// TRAIN and TEST cut to their first O.train_size and O.test_size examples (unchanged where 0):
// a short run on a subset, as the tests run. More than a set holds is an error naming the option.
void take_subsets(chainer::datasets::DatasetPtr& train, chainer::datasets::DatasetPtr& test, const CommonOptions& o);

// The communicator of a data-parallel app: REQUESTED (--communicator), else pure_nccl for GPUs
// under mpiexec, else naive (ChainerMN's example defaults).
std::shared_ptr<chainermn::Communicator> create_communicator(const std::string& requested, const std::optional<int>& gpu);

// The device of this process: the CPU, or with --gpu ID device (ID + intra_rank) modulo the
// visible devices, made current; a warning (from intra_rank 0) when ranks share a GPU.
// Collective: "rank 0 pid 7472 on simhost0, rank 1 pid ..." for every rank of COMM, printed at
// the start of a job so that the PID and host mpiexec names when a process dies give its rank.
std::string process_table(const chainermn::Communicator& comm);

chainer::Device choose_device(const std::optional<int>& gpu, const chainermn::Communicator& comm);

// The process count N of a per-rank snapshot NAME = STEM.rankR-of-N (R < N, digits only, as
// chainermn::rank_suffix writes them); 0 for any other name (a temporary file of an unfinished
// save, STEM.rank1-of-2.tmp.6944.0, included).
int64_t snapshot_process_count(const std::string& name, const std::string& stem);

// Loads the snapshot PREFIX + chainermn::rank_suffix(comm) into TRAINER, then checks that every rank loaded
// the same iteration. Errors name what is wrong: the process count PREFIX's files were written
// by, or which rank loaded which iteration.
void resume(const std::string& prefix, chainer::training::Trainer& trainer, const chainermn::Communicator& comm);

// How every app trains: O.epoch epochs of UPDATER's steps into O.out, EVALUATOR after every
// epoch, a snapshot per rank every O.frequency epochs (-1: once, at the end), and on rank
// O.report_rank (0 unless the app says otherwise) of COMM the log, the report table, a progress bar, the plots loss.png and accuracy.png against
// the epoch (O.plot; by default whenever PlotReport is available, as Chainer's train_mnist.py)
// and the graph of main/loss with DUMP_GRAPH; resumes from O.resume (plus this rank's suffix) when given. With O.timing the
// log also has, per epoch, train_time (seconds of this epoch's training steps: evaluation,
// reports and snapshots excluded, as the peers' train_s) and peak_rss_mib (rank 0's peak
// resident memory so far, ru_maxrss): what bench/compare_cnn.sh reads. Given DATA_SECONDS (a
// running total of the seconds the steps spent getting their batches, e.g. the training
// iterator's data_seconds), it also has data_time, this epoch's share of train_time.
//
// Given CHECKPOINTER (make_checkpointer: --checkpoint-interval N), it saves every N iterations
// and the run first resumes from the newest checkpoint every rank holds, if any (maybe_load),
// saying so on rank 0. EXTEND, given, adds the app's own extensions (on every rank).
void train(const std::shared_ptr<chainer::training::Updater>& updater,
           const std::shared_ptr<chainer::training::Extension>& evaluator, const CommonOptions& o,
           const chainermn::Communicator& comm, bool dump_graph = false,
           std::function<double()> data_seconds = {},
           const std::shared_ptr<chainermn::MultiNodeCheckpointer>& checkpointer = nullptr,
           const std::function<void(chainer::training::Trainer&)>& extend = {});

// The multi-node checkpointer of app NAME (files OUT/NAME.RANK.ITERATION) when O asks for one
// (--checkpoint-interval), else null. Throws when O also names a snapshot to resume from.
std::shared_ptr<chainermn::MultiNodeCheckpointer> make_checkpointer(const std::string& name, const CommonOptions& o,
                                                                    const std::shared_ptr<chainermn::Communicator>& comm);

// The updater options of the model-parallel apps: on a GPU their steps run eagerly, since a
// step that sends and receives through MPI on the host cannot be captured into a CUDA graph.
inline const chainer::training::UpdaterOptions kEagerSteps{std::nullopt, /*cuda_graph=*/false};

// Bytes as people read them: "512 B", "3.7 GiB", "2.9 TiB".
std::string format_bytes(double bytes);

// How much more memory this process may allocate on the host: the least of its share of the
// kernel's MemAvailable (/proc/meminfo) and of the room under its cgroup's memory limit (v2
// memory.max, v1 memory.limit_in_bytes, of its cgroup and those above it), which the
// PROCESSES_ON_HOST processes of a job on this host share, and the room under its own
// address-space limit (ulimit -v). TEXT says it as "the 22.1 GiB of memory available
// (MemAvailable)", or "the 11.0 GiB of memory available (MemAvailable) for each of the 2
// processes on this host (22.1 GiB in all)".
struct MemoryRoom {
  double bytes = 0;
  std::string text;
};
MemoryRoom host_memory_room(int processes_on_host = 1);

// Options checked against what the machine can hold, before any work (every app, through the
// three checks below): a batch or a network too large for memory, more threads than the cores
// can run, a batch larger than the data.
//
// An option's value, for check_memory: "-b/--batchsize", 100, "examples".
struct FlagValue {
  std::string option;
  int64_t value = 0;
  std::string unit;  // what the value counts, plural: "no more than 1234 examples can fit"
};
// One part of what a process holds (a network's parameters, a batch), charged to FLAGS[FLAG]:
// WHAT describes it ("a batch of 100 examples (...)"), BYTES is a lower estimate of its size.
struct MemoryPart {
  size_t flag = 0;
  std::string what;
  double bytes = 0;
};
// The parts a process holds at the flags' VALUES (in FLAGS' order); each part grows with its
// flag's value and with no other's shrinking.
using MemoryModel = std::function<std::vector<MemoryPart>(const std::vector<int64_t>& values)>;

// Why FLAGS cannot be met in ROOM, or "" when MODEL's parts fit together. It names the flag
// whose part is largest ("-b/--batchsize 1000000000: a batch of ... needs at least 2.9 TiB,
// more than the 22.1 GiB of memory available (MemAvailable)") and the most its value could be
// with the others as given ("no more than 7000000 examples can fit", an upper bound: the
// estimates are lower ones), or that even 1 does not fit beside the others.
std::string memory_refusal(const std::vector<FlagValue>& flags, const MemoryModel& model, const MemoryRoom& room);
// Throws chainer::Error(memory_refusal(...)) for this process's room: on a GPU its memory (shared
// by the processes of this host that choose_device puts on it), else host_memory_room.
void check_memory(const std::vector<FlagValue>& flags, const MemoryModel& model, const chainer::Device& device,
                  const chainermn::Communicator& comm);

// What a fully connected network of LAYERS ({inputs, outputs} each) needs at least, trained in
// float32 with Adam: its parameters with their gradients and Adam's two moments; and per
// example of a batch, the input, the label and every layer's output with its gradient.
struct DenseCost {
  double parameters = 0;  // bytes
  double per_example = 0;  // bytes
  int64_t parameter_count = 0;
};
DenseCost dense_cost(const std::vector<std::pair<int64_t, int64_t>>& layers);
// check_memory of -u/--unit and -b/--batchsize for a network of O.unit units per hidden layer
// whose part in this process is COST(units) (an MLP's or one stage's).
void check_network_memory(const CommonOptions& o, const std::function<DenseCost(int64_t units)>& cost,
                          const chainer::Device& device, const chainermn::Communicator& comm);

// The most threads of one kind (compute threads, image loaders) a process may ask for: 8 for
// each core it may run on (sched_getaffinity), and never more than chainer::kMaxThreads. More
// only take turns on the same cores, and thousands of them took minutes to start and stop.
int max_threads();
// Throws chainer::Error naming OPTION when N threads of WHAT ("compute threads") are more
// than max_threads().
void check_threads(const std::string& option, int64_t n, const std::string& what);

// Throws chainer::Error naming OPTION when a batch of BATCH examples is more than the
// PER_PROCESS training examples each process iterates over (TOTAL in all, split over
// PROCESSES): every batch would repeat examples, and an epoch would be less than one batch.
void check_batch(const std::string& option, int64_t batch, int64_t per_process, int64_t total, int processes);

// What the app is doing, for the message of an error that does not say so itself (a
// std::bad_alloc: "out of memory while reading the data"). app_main starts with "reading the
// options"; the apps and train() set the stages that follow ("training (1200 iterations done,
// epoch 2)": a function, asked only when an error needs it).
void set_stage(std::string what);
void set_stage(std::function<std::string()> what);

// The message app_main prints ("APP: error: " before it) for the exception E: a chainer::Error's
// own message; for std::bad_alloc, "out of memory while STAGE" with the peak resident memory and
// what is still available; for any other exception its type, the stage and its what()
// ("std::invalid_argument while resuming from 'result/snapshot_iter_600': stod"), since the
// C++ library's messages name neither a fault nor a file.
std::string error_message(const std::exception_ptr& e);

// main() of app NAME: runs RUN under chainermn::run_main with the error handling above.
int app_main(const char* name, int argc, char** argv, int (*run)(int, char**));

}  // namespace apps
