// The multi-node checkpointer (file names, atomic saves, garbage collection, the collective
// choice of the iteration to resume, errors on every rank) and multi_node_snapshot (replica
// sets, one writer per set, autoload shared within a set). Run under mpiexec with 1 to 4
// processes; every rank runs the same test cases in the same order, and checks between
// collectives use CHECK (never REQUIRE), so one rank's failure cannot leave the others waiting.
#include <catch2/catch.hpp>

#include "catch_session.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/io/npz.h"
#include "core/util/random.h"
#include "datasets/iterators/serial_iterator.h"
#include "datasets/tuple_dataset.h"
#include "distributed/communicators/communicator.h"
#include "distributed/datasets/scatter_dataset.h"
#include "distributed/extensions/checkpoint.h"
#include "distributed/extensions/multi_node_snapshot.h"
#include "distributed/optimizers/multi_node_optimizer.h"
#include "nn/functions.h"
#include "nn/links/batch_normalization.h"
#include "nn/links/classifier.h"
#include "nn/links/linear.h"
#include "nn/optimizers/adam.h"
#include "nn/sequential.h"
#include "training/extensions/log_report.h"
#include "training/extensions/snapshot.h"
#include "training/trainer.h"
#include "training/updater.h"

using namespace chainer;
namespace E = chainer::training::extensions;
namespace F = chainer::functions;
namespace L = chainer::links;
namespace mn = chainermn;
namespace fs = std::filesystem;
using training::IntervalTrigger;
using training::Unit;

namespace {

std::shared_ptr<mn::Communicator> world() { return mn::create_communicator("naive"); }

// A directory every rank shares (one host), made by rank 0 and removed by it at the end.
struct SharedDir {
  std::shared_ptr<mn::Communicator> comm;
  fs::path path;
  explicit SharedDir(std::shared_ptr<mn::Communicator> c) : comm(std::move(c)) {
    std::string p;
    if (comm->rank() == 0) {
      p = (fs::temp_directory_path() / ("chainermn_test_checkpointer_" + std::to_string(::getpid()))).string();
      fs::remove_all(p);
      fs::create_directories(p);
    }
    path = comm->bcast_obj(p);
  }
  ~SharedDir() {
    comm->allgather_bytes("");  // every rank is done with the files
    std::error_code ec;
    if (comm->rank() == 0) fs::remove_all(path, ec);
  }
};

std::set<std::string> files_in(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

// A small data-parallel job: 3 hidden units, Adam, a shuffled share (seed 3) of 13 * size
// examples (or N_TOTAL) in batches of 4 (4 iterations per epoch with 13 each), every rank with
// its own iterator order. With BATCH_NORM, the model normalizes a hidden layer of 4 in between,
// so each rank gathers its own running statistics (persistent values) from its share.
struct Job {
  std::shared_ptr<L::Classifier> model;
  std::shared_ptr<mn::MultiNodeOptimizer> optimizer;
  std::shared_ptr<training::StandardUpdater> updater;
  std::unique_ptr<training::Trainer> trainer;
  std::shared_ptr<E::LogReport> log;
  std::shared_ptr<mn::Communicator> comm;

  Job(const std::shared_ptr<mn::Communicator>& comm, IntervalTrigger stop, const fs::path& out, int64_t hidden = 3,
      int64_t n_total = 0, bool batch_norm = false, bool lazy = false)
      : comm(comm) {
    datasets::DatasetPtr all;
    if (comm->rank() == 0) {
      Generator gen(7);
      const int64_t n = n_total > 0 ? n_total : 13 * comm->size();
      std::vector<int32_t> t;
      for (int64_t i = 0; i < n; ++i) t.push_back(int32_t(gen.below(2)));
      all = std::make_shared<datasets::TupleDataset>(std::vector<Tensor>{
          random::normal({n, 5}, 0.0, 1.0, DType::Float32, &gen), Tensor::from_vector(t)});
    }
    auto train = mn::scatter_dataset(all, comm, 0, /*shuffle=*/true, 3);
    random::seed(11);
    if (batch_norm)
      model = std::make_shared<L::Classifier>(std::make_shared<Sequential>(
          std::make_shared<L::Linear>(5, 4), std::make_shared<L::BatchNormalization>(4), F::relu,
          std::make_shared<L::Linear>(4, hidden)));
    else if (lazy)  // its input size is learnt from the first batch (or a load)
      model = std::make_shared<L::Classifier>(std::make_shared<L::Linear>(hidden));
    else
      model = std::make_shared<L::Classifier>(std::make_shared<L::Linear>(5, hidden));
    optimizer = std::make_shared<mn::MultiNodeOptimizer>(std::make_shared<optimizers::Adam>(0.05), comm);
    optimizer->setup(model);
    auto iter = std::make_shared<iterators::SerialIterator>(train, 4, true, true, uint64_t(comm->rank()));
    updater = std::make_shared<training::StandardUpdater>(iter, optimizer);
    trainer = std::make_unique<training::Trainer>(updater, stop, out.string());
    log = std::make_shared<E::LogReport>(std::vector<std::string>{}, IntervalTrigger(2, Unit::Iteration));
    if (comm->rank() == 0) trainer->extend(log);  // the reports of rank 0, as the apps have them
  }
  // Trains to the stop trigger, every rank saving checkpoints of run "run" every EVERY iterations.
  void run_saving_every(double every) {
    trainer->extend(mn::create_multi_node_checkpointer("run", comm), "", IntervalTrigger(every, Unit::Iteration));
    trainer->run();
  }
  iterators::SerialIterator& iterator() const {
    return dynamic_cast<iterators::SerialIterator&>(updater->get_iterator("main"));
  }
  std::vector<std::vector<double>> parameters() const {
    std::vector<std::vector<double>> out;
    for (auto& [name, p] : model->namedparams()) out.push_back(p.data().to_vector<double>());
    return out;
  }
};

}  // namespace

TEST_CASE("checkpointer: each rank writes <name>.<rank>.<iteration>; garbage collection keeps the newest cp_interval") {
  auto comm = world();
  SharedDir dir(comm);
  const int r = comm->rank();
  // Files that are not this checkpointer's, beside it: never touched.
  if (r == 0)
    for (const char* name : {"run.0.3.bak", "run.0.x", "other.0.1", "run.0"}) std::ofstream(dir.path / name) << "x";
  comm->allgather_bytes("");
  Job job(comm, IntervalTrigger(7, Unit::Iteration), dir.path);
  // cp_interval 2, gc_interval 1: more than 3 kept after a save -> the newest 2 of all ranks stay.
  auto checkpointer = mn::create_multi_node_checkpointer("run", comm, 2, 1);
  CHECK(checkpointer->get_stats() == "No stats available");
  job.trainer->extend(checkpointer, "", IntervalTrigger(1, Unit::Iteration));
  job.trainer->run();
  comm->allgather_bytes("");  // every rank's saves are done
  // Saves 1..4 -> 3, 4; 5, 6 -> 5, 6; 7.
  CHECK(checkpointer->local_iterations() == std::vector<int64_t>{5, 6, 7});
  const std::string p = "run." + std::to_string(r) + ".";
  std::set<std::string> mine;
  for (const std::string& f : files_in(dir.path))
    if (f.rfind(p, 0) == 0) mine.insert(f);
  if (r == 0) CHECK(mine == std::set<std::string>{p + "3.bak", p + "5", p + "6", p + "7", p + "x"});
  else CHECK(mine == std::set<std::string>{p + "5", p + "6", p + "7"});
  for (const std::string& f : files_in(dir.path)) CHECK(f.find("tmp") == std::string::npos);  // no temporary left
  if (r == 0) CHECK(files_in(dir.path).count("run.0.x") + files_in(dir.path).count("other.0.1") == 2);
  CHECK(checkpointer->timings().size() == 7);
  CHECK(checkpointer->get_stats().rfind("Snapshot duration stats (sec): avg=", 0) == 0);
  CHECK(checkpointer->filename(12) == p + "12");
}

TEST_CASE("checkpointer: maybe_load resumes from the newest iteration every rank saved, bit for bit") {
  auto comm = world();
  SharedDir dir(comm);
  const int r = comm->rank(), n = comm->size();
  // A: 8 iterations (two epochs) straight.
  Job a(comm, IntervalTrigger(8, Unit::Iteration), dir.path / "a");
  a.trainer->run();

  // B: stops at 6, checkpointing every 2 iterations; the last rank's checkpoint of 6 is lost,
  // and a save killed before its rename left a temporary file.
  {
    Job b(comm, IntervalTrigger(6, Unit::Iteration), dir.path / "b");
    b.run_saving_every(2);
  }
  if (r == n - 1) fs::remove(dir.path / "b" / ("run." + std::to_string(r) + ".6"));
  // What a save killed mid-way leaves: save_npz's temporary file.
  std::ofstream(dir.path / "b" / ("run." + std::to_string(r) + ".8.tmp.4242.0")) << "half";
  comm->allgather_bytes("");

  // C: a fresh job resumes at 4 on every rank, then ends exactly where A ends.
  Job c(comm, IntervalTrigger(8, Unit::Iteration), dir.path / "b");
  auto checkpointer = mn::create_multi_node_checkpointer("run", comm);
  c.trainer->extend(checkpointer, "", IntervalTrigger(2, Unit::Iteration));
  random::seed(999);  // the checkpoint restores the default generator
  CHECK(checkpointer->maybe_load(*c.trainer, c.optimizer.get()) == 4);
  CHECK(c.updater->iteration() == 4);
  if (r == 0) CHECK(c.log->log().size() == 2);  // the log continues
  CHECK(!fs::exists(dir.path / "b" / ("run." + std::to_string(r) + ".8.tmp.4242.0")));
  c.trainer->run();
  CHECK(c.updater->iteration() == 8);
  CHECK(c.parameters() == a.parameters());
  CHECK(c.optimizer->t() == a.optimizer->t());
  if (r == 0) CHECK(c.log->log().size() == 4);
  CHECK(c.optimizer->broadcast_count() == 0);  // the ranks loaded the same state: no broadcast

  // Nothing saved under this name: nothing loaded, iteration 0.
  Job d(comm, IntervalTrigger(8, Unit::Iteration), dir.path / "b");
  CHECK(mn::create_multi_node_checkpointer("other", comm)->maybe_load(*d.trainer) == 0);
  CHECK(d.updater->iteration() == 0);
}

TEST_CASE("checkpointer: a file that cannot be loaded is an error on every rank naming it; nothing is loaded") {
  auto comm = world();
  SharedDir dir(comm);
  const int r = comm->rank(), n = comm->size();
  {
    Job b(comm, IntervalTrigger(2, Unit::Iteration), dir.path);
    b.run_saving_every(2);
  }
  const std::string bad = (dir.path / ("run." + std::to_string(n - 1) + ".2")).string();
  if (r == n - 1) fs::resize_file(bad, fs::file_size(bad) / 2);  // a torn file
  comm->allgather_bytes("");
  Job c(comm, IntervalTrigger(4, Unit::Iteration), dir.path);
  const auto before = c.parameters();
  CHECK_THROWS_WITH(mn::create_multi_node_checkpointer("run", comm)->maybe_load(*c.trainer),
                    Catch::Contains("cannot resume run 'run' from iteration 2") &&
                        Catch::Contains("rank " + std::to_string(n - 1) + ": cannot read the checkpoint '" + bad + "'"));
  CHECK(c.updater->iteration() == 0);
  CHECK(c.parameters() == before);
  CHECK(c.log->log().empty());
}

TEST_CASE("checkpointer: a rank that lost all its files is an error on every rank; the others' files stay", "[peers]") {
  auto comm = world();
  const int r = comm->rank(), n = comm->size();
  SKIP_UNLESS(n >= 2, "needs a peer: 2 or more processes");  // one rank either has checkpoints or starts afresh
  SharedDir dir(comm);
  {
    Job b(comm, IntervalTrigger(4, Unit::Iteration), dir.path);
    b.run_saving_every(2);
  }
  const auto lost = [&](int64_t it) { return dir.path / ("run." + std::to_string(n - 1) + "." + std::to_string(it)); };
  if (r == n - 1) fs::remove(lost(2)), fs::remove(lost(4));
  comm->allgather_bytes("");
  Job c(comm, IntervalTrigger(8, Unit::Iteration), dir.path);
  CHECK_THROWS_WITH(mn::create_multi_node_checkpointer("run", comm)->maybe_load(*c.trainer),
                    Catch::Contains("rank " + std::to_string(n - 1) + ": holds no checkpoint in") &&
                        Catch::Contains("a checkpoint file is missing"));
  CHECK(c.updater->iteration() == 0);
  if (r == 0) CHECK(fs::exists(dir.path / "run.0.4"));  // nothing was removed or overwritten
}

TEST_CASE("checkpointer: a checkpoint of another model is an error naming the first mismatch; nothing is overwritten") {
  auto comm = world();
  SharedDir dir(comm);
  {
    Job b(comm, IntervalTrigger(2, Unit::Iteration), dir.path);
    b.run_saving_every(2);
  }
  const fs::path mine = dir.path / ("run." + std::to_string(comm->rank()) + ".2");
  const auto size = fs::file_size(mine);
  Job wider(comm, IntervalTrigger(4, Unit::Iteration), dir.path, /*hidden=*/4);
  const auto before = wider.parameters();
  CHECK_THROWS_WITH(mn::create_multi_node_checkpointer("run", comm)->maybe_load(*wider.trainer),
                    Catch::Contains("does not match this trainer (nothing was loaded)") &&
                        Catch::Contains("'updater/optimizer:main/predictor/W/m' has shape (3, 5) but its parameter "
                                        "has shape (4, 5)"));
  CHECK(wider.updater->iteration() == 0);
  CHECK(wider.parameters() == before);
  CHECK(fs::file_size(mine) == size);
}

// A lazily sized layer is initialized by the load itself (its W's shape from the file); a load
// that fails after that must leave it uninitialized again, and the error must be the load's,
// not one from putting the state back.
TEST_CASE("checkpointer: a failed load leaves a lazily sized layer uninitialized and names the real mismatch") {
  auto comm = world();
  SharedDir dir(comm);
  {
    Job b(comm, IntervalTrigger(2, Unit::Iteration), dir.path);
    b.run_saving_every(2);
  }
  Job lazy(comm, IntervalTrigger(4, Unit::Iteration), dir.path, /*hidden=*/4, 0, false, /*lazy=*/true);
  CHECK_THROWS_WITH(mn::create_multi_node_checkpointer("run", comm)->maybe_load(*lazy.trainer),
                    Catch::Contains("does not match this trainer (nothing was loaded)") &&
                        Catch::Contains("predictor/b") && !Catch::Contains("is missing"));
  CHECK(lazy.updater->iteration() == 0);
  bool uninitialized = false;
  for (auto& [name, p] : lazy.model->namedparams())
    if (name == "/predictor/W") uninitialized = !p.data().defined();
  CHECK(uninitialized);
}

// Debug mode: after a load, the ranks of a data-parallel job must hold the same parameters. A
// rank whose file was changed (here by hand) is caught at once, on every rank, naming the entry.
TEST_CASE("checkpointer: in debug mode, ranks that loaded different parameters are an error on every rank") {
  auto comm = world();
  SharedDir dir(comm);
  {
    Job b(comm, IntervalTrigger(2, Unit::Iteration), dir.path);
    b.run_saving_every(2);
  }
  if (comm->rank() == comm->size() - 1 && comm->size() > 1) {
    const std::string file = (dir.path / ("run." + std::to_string(comm->rank()) + ".2")).string();
    TensorMap entries = load_npz(file);
    Tensor& w = entries.at("updater/model:main/predictor/W");
    w = ops::add_scalar(w, 1.0);
    save_npz(file, entries);
  }
  comm->allgather_bytes("");  // every rank sees the changed file
  Job c(comm, IntervalTrigger(4, Unit::Iteration), dir.path);
  comm->set_debug(true);
  if (comm->size() == 1) {
    CHECK(mn::create_multi_node_checkpointer("run", comm)->maybe_load(*c.trainer) == 2);
  } else {
    CHECK_THROWS_WITH(mn::create_multi_node_checkpointer("run", comm)->maybe_load(*c.trainer),
                      Catch::Contains("MultiNodeCheckpointer.maybe_load: run 'run' after its load") &&
                          Catch::Contains("W"));
  }
  comm->set_debug(false);
}

namespace {

// IDS sorted: a multiset to compare.
std::vector<int64_t> sorted_ids(std::vector<int64_t> ids) {
  std::sort(ids.begin(), ids.end());
  return ids;
}

// Every rank's VALUES, concatenated in rank order (collective).
std::vector<int64_t> concatenated(const mn::Communicator& comm, const std::vector<int64_t>& values) {
  std::vector<int64_t> out;
  for (const auto& v : comm.allgather_obj(values)) out.insert(out.end(), v.begin(), v.end());
  return out;
}

// A job of N ranks checkpoints 3 iterations into an epoch; a job of M ranks resumes from it. The
// whole dataset is 37 examples (shares of 37, 19, 13 and 10 for 1 to 4 ranks), batches of 4.
void resume_with_another_count(const std::shared_ptr<mn::Communicator>& comm, int n, int m) {
  CAPTURE(n, m);
  SharedDir dir(comm);
  const int r = comm->rank();
  constexpr int64_t kTotal = 37, kBatch = 4;
  const auto scattered = [](int64_t size, int k) { return mn::share_indices(kTotal, int(size), k, true, 3); };

  // The old job, and what its ranks had yet to visit of the epoch: U as example ids.
  std::vector<int64_t> unvisited;
  std::vector<std::vector<double>> old_parameters;
  int64_t old_epoch = -1, old_t = -1;
  auto old_comm = comm->split(r < n ? 0 : 1, r);
  if (r < n) {
    Job a(old_comm, IntervalTrigger(3, Unit::Iteration), dir.path, 3, kTotal);
    auto checkpointer = mn::create_multi_node_checkpointer("run", old_comm);
    checkpointer->set_scatter(kTotal, true, 3);
    a.trainer->extend(checkpointer, "", IntervalTrigger(3, Unit::Iteration));
    a.trainer->run();
    Serializer w = Serializer::writer();
    a.iterator().serialize(w);
    const auto order = w.entries().at("order").to_vector<int64_t>();
    const int64_t position = a.iterator().current_position();
    CHECK(position > 0);  // mid-epoch
    const auto share = scattered(n, r);
    for (size_t q = size_t(position); q < order.size(); ++q) unvisited.push_back(share[size_t(order[q])]);
    old_parameters = a.parameters();
    old_epoch = a.iterator().epoch();
    old_t = int64_t(a.optimizer->t());
    if (r == 0) CHECK(a.log->log().size() == 1);
  }
  unvisited = concatenated(*comm, unvisited);
  old_parameters = comm->bcast_obj(old_parameters);
  old_epoch = comm->bcast_obj(old_epoch);
  old_t = comm->bcast_obj(old_t);

  // The new job.
  auto new_comm = comm->split(r < m ? 0 : 1, r);
  std::vector<int64_t> rest;  // this rank's R_k as example ids
    if (r < m) {
    Job c(new_comm, IntervalTrigger(100, Unit::Iteration), dir.path, 3, kTotal);
    auto checkpointer = mn::create_multi_node_checkpointer("run", new_comm);
    checkpointer->set_scatter(kTotal, true, 3);
    c.trainer->extend(checkpointer, "", IntervalTrigger(3, Unit::Iteration));
    random::seed(999);
    CHECK(checkpointer->maybe_load(*c.trainer, c.optimizer.get()) == 3);
    REQUIRE(checkpointer->process_count_change().has_value());
    const mn::ProcessCountChange& change = *checkpointer->process_count_change();
    CHECK(change.old_size == n);
    CHECK(change.iteration == 3);
    CHECK(change.epoch == old_epoch);
    CHECK(change.message == "resumed from " + std::to_string(n) + " processes at iteration 3 (epoch " +
                                std::to_string(old_epoch) + "); the global batch was " + std::to_string(n) + "*4 = " +
                                std::to_string(4 * n) + ", now " + std::to_string(m) + "*4 = " + std::to_string(4 * m));
    CHECK(c.updater->iteration() == 3);
    CHECK(c.updater->epoch() == old_epoch);
    CHECK(c.parameters() == old_parameters);  // old rank 0's replica
    CHECK(int64_t(c.optimizer->t()) == old_t);
    if (r == 0) CHECK(c.log->log().size() == 1);  // the log continues

    // The rest of the epoch: R_k from its start, repeated up to L on every rank.
    const auto share = scattered(m, r);
    for (int64_t j : change.rest_of_epoch) rest.push_back(share[size_t(j)]);
    const auto lengths = new_comm->allgather_obj(int64_t(change.rest_of_epoch.size()));
    const int64_t longest = *std::max_element(lengths.begin(), lengths.end());
    CHECK(change.epoch_length == longest);
    const std::vector<int64_t>& epoch = c.iterator().epoch_indices();
    REQUIRE(int64_t(epoch.size()) == longest);
    for (size_t i = 0; i < epoch.size(); ++i) {
      const auto& from = change.rest_of_epoch;
      CHECK(epoch[i] == (from.empty() ? int64_t(i % share.size()) : from[i % from.size()]));
    }
    CHECK(std::is_sorted(change.rest_of_epoch.begin(), change.rest_of_epoch.end()));  // the share's order

    // The epoch ends at the same iteration on every rank, after ceil(L / b) updates.
    int64_t updates = 0;
    do {
      c.updater->update();
      ++updates;
    } while (!c.iterator().is_new_epoch());
    CHECK(updates == (longest + kBatch - 1) / kBatch);
    CHECK(c.iterator().epoch() == old_epoch + 1);
    CHECK(c.iterator().epoch_indices().empty());
    // Later epochs are normal ones over the new share.
    Serializer w = Serializer::writer();
    c.iterator().serialize(w);
    CHECK(w.entries().at("order").numel() == int64_t(share.size()));
    CHECK(c.iterator().dataset()->size() == share.size());
    const auto iterations = new_comm->allgather_obj(int64_t(c.updater->iteration()));
    CHECK(std::set<int64_t>(iterations.begin(), iterations.end()).size() == 1);
  }
  // Over all new ranks, the rest of the epoch visits exactly U (before the padding).
  CHECK(sorted_ids(concatenated(*comm, rest)) == sorted_ids(unvisited));
}

}  // namespace

TEST_CASE("checkpointer: a job of N processes resumes with M: the replica, the log, the rest of the epoch over U") {
  auto comm = world();
  const int size = comm->size();
  for (const auto& [n, m] : std::vector<std::pair<int, int>>{{4, 2}, {2, 3}, {1, 2}, {3, 1}})
    if (std::max(n, m) <= size) resume_with_another_count(comm, n, m);
}

TEST_CASE("checkpointer: a checkpoint taken at an epoch's end resumes without an interrupted epoch", "[peers]") {
  auto comm = world();
  SKIP_UNLESS(comm->size() >= 2, "needs a peer: 2 or more processes");
  SharedDir dir(comm);
  const int r = comm->rank();
  // 2 ranks, shares of 8 (16 examples), 2 iterations of 4 end epoch 0 exactly; resumed with 1.
  auto two = comm->split(r < 2 ? 0 : 1, r);
  if (r < 2) {
    Job a(two, IntervalTrigger(2, Unit::Iteration), dir.path, 3, 16);
    auto checkpointer = mn::create_multi_node_checkpointer("run", two);
    checkpointer->set_scatter(16, true, 3);
    a.trainer->extend(checkpointer, "", IntervalTrigger(2, Unit::Iteration));
    a.trainer->run();
    CHECK(a.iterator().is_new_epoch());
  }
  auto one = comm->split(r == 0 ? 0 : 1, r);
  if (r == 0) {
    Job c(one, IntervalTrigger(100, Unit::Iteration), dir.path, 3, 16);
    auto checkpointer = mn::create_multi_node_checkpointer("run", one);
    checkpointer->set_scatter(16, true, 3);
    CHECK(checkpointer->maybe_load(*c.trainer) == 2);
    REQUIRE(checkpointer->process_count_change().has_value());
    CHECK(checkpointer->process_count_change()->epoch == 1);
    CHECK(checkpointer->process_count_change()->epoch_length == 0);
    CHECK(checkpointer->process_count_change()->rest_of_epoch.empty());
    CHECK(c.iterator().epoch_indices().empty());
    CHECK(c.iterator().epoch() == 1);
    CHECK(c.iterator().current_position() == 0);
  }
  comm->allgather_bytes("");
}

TEST_CASE("checkpointer: a job of another count that went on from the common checkpoints is resumed from", "[peers]") {
  auto comm = world();
  SKIP_UNLESS(comm->size() >= 2, "needs a peer: 2 or more processes");
  SharedDir dir(comm);
  const int r = comm->rank();
  auto two = comm->split(r < 2 ? 0 : 1, r);
  auto one = comm->split(r == 0 ? 0 : 1, r);
  const auto run = [&](const std::shared_ptr<mn::Communicator>& c, int64_t stop) {
    Job job(c, IntervalTrigger(double(stop), Unit::Iteration), dir.path, 3, 26);
    auto checkpointer = mn::create_multi_node_checkpointer("run", c);
    checkpointer->set_scatter(26, true, 3);
    job.trainer->extend(checkpointer, "", IntervalTrigger(3, Unit::Iteration));
    const int64_t at = checkpointer->maybe_load(*job.trainer);
    job.trainer->run();
    return std::make_pair(at, checkpointer->process_count_change());
  };
  if (r < 2) CHECK(run(two, 3).first == 0);  // 2 processes save iteration 3
  comm->allgather_bytes("");
  if (r == 0) CHECK(run(one, 6).first == 3);  // 1 process goes on from it and saves iteration 6
  comm->allgather_bytes("");
  if (r < 2) {  // both ranks hold iteration 3 of their own count, but rank 0's 6 is newer
    const auto [at, change] = run(two, 7);
    CHECK(at == 6);
    REQUIRE(change.has_value());
    CHECK(change->old_size == 1);
  }
  comm->allgather_bytes("");
}

TEST_CASE("checkpointer: without set_scatter the interrupted epoch starts again over the new shares", "[peers]") {
  auto comm = world();
  SKIP_UNLESS(comm->size() >= 2, "needs a peer: 2 or more processes");
  SharedDir dir(comm);
  const int r = comm->rank();
  auto two = comm->split(r < 2 ? 0 : 1, r);
  if (r < 2) {
    Job a(two, IntervalTrigger(3, Unit::Iteration), dir.path, 3, 26);
    a.run_saving_every(3);
  }
  auto one = comm->split(r == 0 ? 0 : 1, r);
  if (r == 0) {
    Job c(one, IntervalTrigger(100, Unit::Iteration), dir.path, 3, 26);
    auto checkpointer = mn::create_multi_node_checkpointer("run", one);
    CHECK(checkpointer->maybe_load(*c.trainer) == 3);
    REQUIRE(checkpointer->process_count_change().has_value());
    CHECK_THAT(checkpointer->process_count_change()->message,
               Catch::EndsWith("the interrupted epoch starts again over the new shares (set_scatter was not called)"));
    CHECK(c.iterator().epoch() == 0);
    CHECK(c.iterator().current_position() == 0);
    CHECK(c.iterator().epoch_indices().empty());
  }
  comm->allgather_bytes("");
}

TEST_CASE("checkpointer: old ranks whose parameters differ cannot be mapped to another count; the error on every rank "
          "names the entry and the ranks", "[peers]") {
  auto comm = world();
  SKIP_UNLESS(comm->size() >= 2, "needs a peer: 2 or more processes");
  SharedDir dir(comm);
  const int r = comm->rank(), m = comm->size() >= 3 ? 3 : 1;
  auto two = comm->split(r < 2 ? 0 : 1, r);
  if (r < 2) {
    Job a(two, IntervalTrigger(3, Unit::Iteration), dir.path, 3, 26);
    a.run_saving_every(3);
  }
  comm->allgather_bytes("");
  const fs::path second = dir.path / "run.1.3";
  if (r == 1) {  // other values of the same parameter, as ranks that are not replicas hold
    TensorMap entries = load_npz(second.string());
    const Tensor b = entries.at("updater/model:main/predictor/b");
    std::vector<float> shifted = b.to_vector<float>();
    shifted[1] += 1.0f;
    entries["updater/model:main/predictor/b"] = Tensor::from_vector(shifted).reshape(b.shape());
    save_npz(second.string(), entries);
  }
  comm->allgather_bytes("");
  auto job_comm = comm->split(r < m ? 0 : 1, r);
  if (r < m) {
    Job c(job_comm, IntervalTrigger(100, Unit::Iteration), dir.path, 3, 26);
    const auto before = c.parameters();
    auto checkpointer = mn::create_multi_node_checkpointer("run", job_comm);
    checkpointer->set_scatter(26, true, 3);
    CHECK_THROWS_WITH(checkpointer->maybe_load(*c.trainer),
                      Catch::StartsWith("MultiNodeCheckpointer.maybe_load: cannot resume run 'run' from iteration 3 of a "
                                        "job of 2 processes in a job of " + std::to_string(m) + " (nothing was loaded): "
                                        "the model and optimizer state, which a job of another process count takes "
                                        "from old rank 0's '" + (dir.path / "run.0.3").string() + "', must be the same "
                                        "bit for bit in every old rank's file (persistent values aside), and is not: "
                                        "old rank 1's '" + second.string() + "': 'updater/model:main/predictor/b' "
                                        "differs: element 1 is ") &&
                          Catch::Contains(" in old rank 0's and ") && Catch::EndsWith(" in old rank 1's") &&
                          !Catch::Contains("parallel"));
    CHECK(c.updater->iteration() == 0);
    CHECK(c.parameters() == before);
    CHECK_FALSE(checkpointer->process_count_change().has_value());
  }
  comm->allgather_bytes("");
}

TEST_CASE("checkpointer: checkpoints of another process count without a complete set are an error on every rank", "[peers]") {
  auto comm = world();
  SKIP_UNLESS(comm->size() >= 2, "needs a peer: 2 or more processes");
  SharedDir dir(comm);
  // A job of 2 checkpoints twice, and old rank 1's files are lost: no iteration has all of them.
  const int r = comm->rank();
  auto two = comm->split(r < 2 ? 0 : 1, r);
  if (r < 2) {
    Job a(two, IntervalTrigger(4, Unit::Iteration), dir.path, 3, 26);
    a.run_saving_every(2);
  }
  comm->allgather_bytes("");
  if (r == 1) fs::remove(dir.path / "run.1.2"), fs::remove(dir.path / "run.1.4");
  comm->allgather_bytes("");
  auto one = comm->split(r == 0 ? 0 : 1, r);
  if (r == 0) {
    Job job(one, IntervalTrigger(4, Unit::Iteration), dir.path, 3, 26);
    CHECK_THROWS_WITH(mn::create_multi_node_checkpointer("run", one)->maybe_load(*job.trainer),
                      Catch::Contains("was written by a job of 2 processes") &&
                          Catch::Contains("this job has 1, and rank 0 finds no iteration with the checkpoints of "
                                          "every rank of the job that wrote them"));
    CHECK(job.updater->iteration() == 0);
  }
  comm->allgather_bytes("");
}

namespace {

// BatchNormalization's running mean in the Job's model with batch_norm (the Sequential's link 1).
const std::string kAvgMean = "updater/model:main/predictor/1/avg_mean";

std::vector<double> avg_mean(const Job& job) {
  for (const auto& [name, value] : job.model->namedpersistents())
    if (name == "/predictor/1/avg_mean") return value.to_vector<double>();
  FAIL("the model has no /predictor/1/avg_mean");
  return {};
}

std::vector<double> entry(const fs::path& file, const std::string& key) {
  return load_npz(file.string()).at(key).to_vector<double>();
}

// N processes train a model with batch normalization to iteration 3 and save; M resume.
void resume_batch_norm(const std::shared_ptr<mn::Communicator>& comm, int n, int m) {
  INFO(n << " processes, then " << m);
  SharedDir dir(comm);
  const int r = comm->rank();
  std::vector<double> mean;  // the old ranks' running means, averaged
  auto old_comm = comm->split(r < n ? 0 : 1, r);
  if (r < n) {
    Job a(old_comm, IntervalTrigger(3, Unit::Iteration), dir.path, 3, 26, /*batch_norm=*/true);
    a.trainer->run();
    const auto own = old_comm->allgather_obj(avg_mean(a));
    if (n > 1) CHECK(own[0] != own[1]);  // each rank's statistics of its own share
    for (size_t i = 0; i < own[0].size(); ++i) {
      double sum = 0;
      for (const auto& values : own) sum += values[i];
      mean.push_back(sum / n);
    }
    auto checkpointer = mn::create_multi_node_checkpointer("run", old_comm);
    a.trainer->extend(checkpointer, "", IntervalTrigger(100, Unit::Iteration));  // saved by hand below
    checkpointer->save(*a.trainer, 3);
    // The rank goes on with the mean, and its file holds exactly what it goes on with.
    const std::vector<double> now = avg_mean(a);
    for (size_t i = 0; i < mean.size(); ++i) CHECK(now[i] == Approx(mean[i]).epsilon(1e-6));
    CHECK(entry(dir.path / ("run." + std::to_string(r) + ".3"), kAvgMean) == now);
    const auto saved = old_comm->allgather_obj(now);
    CHECK(std::set<std::vector<double>>(saved.begin(), saved.end()).size() == 1);  // the same in every file
  }
  mean = comm->bcast_obj(mean);
  auto new_comm = comm->split(r < m ? 0 : 1, r);
  if (r < m) {
    Job c(new_comm, IntervalTrigger(5, Unit::Iteration), dir.path, 3, 26, /*batch_norm=*/true);
    auto checkpointer = mn::create_multi_node_checkpointer("run", new_comm);
    checkpointer->set_scatter(26, true, 3);
    c.trainer->extend(checkpointer, "", IntervalTrigger(5, Unit::Iteration));
    CHECK(checkpointer->maybe_load(*c.trainer) == 3);
    CHECK(checkpointer->process_count_change().has_value() == (n != m));
    const std::vector<double> loaded = avg_mean(c);
    for (size_t i = 0; i < mean.size(); ++i) CHECK(loaded[i] == Approx(mean[i]).epsilon(1e-6));
    c.trainer->run();
    CHECK(c.updater->iteration() == 5);
  }
  comm->allgather_bytes("");
}

}  // namespace

TEST_CASE("checkpointer: a model with batch normalization resumes with another count: every file holds the running "
          "statistics averaged over the ranks") {
  auto comm = world();
  const int size = comm->size();
  for (const auto& [n, m] : std::vector<std::pair<int, int>>{{2, 1}, {1, 2}, {2, 2}, {4, 2}, {2, 3}, {3, 1}})
    if (std::max(n, m) <= size) resume_batch_norm(comm, n, m);
}

TEST_CASE("checkpointer: ranks whose models differ (not replicas) each save their own running statistics", "[peers]") {
  auto comm = world();
  SKIP_UNLESS(comm->size() >= 2, "needs a peer: 2 or more processes");
  SharedDir dir(comm);
  const int r = comm->rank();
  // An ensemble: each rank trains its own model (its own initial parameters, no averaging) on
  // its own data, as model-parallel stages also hold their own.
  random::seed(11 + uint64_t(r));
  auto model = std::make_shared<L::Classifier>(std::make_shared<Sequential>(
      std::make_shared<L::Linear>(5, 4), std::make_shared<L::BatchNormalization>(4), F::relu,
      std::make_shared<L::Linear>(4, 3)));
  auto optimizer = std::make_shared<optimizers::Adam>(0.05);
  optimizer->setup(model);
  Generator gen(7 + uint64_t(r));
  std::vector<int32_t> labels;
  for (int i = 0; i < 13; ++i) labels.push_back(int32_t(gen.below(2)));
  auto data = std::make_shared<datasets::TupleDataset>(
      std::vector<Tensor>{random::normal({13, 5}, 0.0, 1.0, DType::Float32, &gen), Tensor::from_vector(labels)});
  auto updater = std::make_shared<training::StandardUpdater>(
      std::make_shared<iterators::SerialIterator>(data, 4, true, true, uint64_t(r)), optimizer);
  training::Trainer trainer(updater, IntervalTrigger(3, Unit::Iteration), dir.path.string());
  auto checkpointer = mn::create_multi_node_checkpointer("run", comm);
  trainer.extend(checkpointer, "", IntervalTrigger(3, Unit::Iteration));
  std::vector<double> own;  // the running mean just before the checkpointer saves
  training::MakeExtensionOptions before;
  before.trigger = {3, Unit::Iteration};
  before.priority = training::PRIORITY_WRITER;  // before the checkpointer (PRIORITY_READER)
  trainer.extend(training::make_extension(
      [&](training::Trainer&) {
        for (const auto& [name, value] : model->namedpersistents())
          if (name == "/predictor/1/avg_mean") own = value.to_vector<double>();
      },
      before));
  trainer.run();
  const auto all = comm->allgather_obj(own);
  CHECK(all[0] != all[1]);
  CHECK(entry(dir.path / ("run." + std::to_string(r) + ".3"), kAvgMean) == own);
  CHECK(model->namedpersistents()[0].second.to_vector<double>() == own);  // "/predictor/1/avg_mean" sorts first
  comm->allgather_bytes("");
}

TEST_CASE("checkpointer: running statistics that differ between the old ranks' files come from old rank 0's", "[peers]") {
  auto comm = world();
  SKIP_UNLESS(comm->size() >= 2, "needs a peer: 2 or more processes");
  SharedDir dir(comm);
  const int r = comm->rank();
  auto two = comm->split(r < 2 ? 0 : 1, r);
  if (r < 2) {
    Job a(two, IntervalTrigger(3, Unit::Iteration), dir.path, 3, 26, /*batch_norm=*/true);
    a.run_saving_every(3);
  }
  comm->allgather_bytes("");
  if (r == 1) {  // as a file written without averaging holds
    TensorMap entries = load_npz((dir.path / "run.1.3").string());
    std::vector<float> own = entries.at(kAvgMean).to_vector<float>();
    for (float& v : own) v += 1.0f;
    entries[kAvgMean] = Tensor::from_vector(own);
    save_npz((dir.path / "run.1.3").string(), entries);
  }
  comm->allgather_bytes("");
  auto one = comm->split(r == 0 ? 0 : 1, r);
  if (r == 0) {
    Job c(one, IntervalTrigger(4, Unit::Iteration), dir.path, 3, 26, /*batch_norm=*/true);
    auto checkpointer = mn::create_multi_node_checkpointer("run", one);
    checkpointer->set_scatter(26, true, 3);
    CHECK(checkpointer->maybe_load(*c.trainer) == 3);
    CHECK(avg_mean(c) == entry(dir.path / "run.0.3", kAvgMean));
  }
  comm->allgather_bytes("");
}

namespace {

// The checkpoints of run "run" in DIR (every rank's), by file name.
std::set<std::string> checkpoints_in(const fs::path& dir) {
  std::set<std::string> out;
  for (const std::string& f : files_in(dir))
    if (f.rfind("run.", 0) == 0) out.insert(f);
  return out;
}

// The names `run.RANK.ITERATION` for RANKS ranks at each of ITERATIONS.
std::set<std::string> names(int ranks, std::initializer_list<int64_t> iterations) {
  std::set<std::string> out;
  for (int r = 0; r < ranks; ++r)
    for (int64_t it : iterations) out.insert("run." + std::to_string(r) + "." + std::to_string(it));
  return out;
}

// Trains on COMM to STOP with run "run" checkpointed every iteration, keeping 2 (cp_interval 2,
// gc_interval 1: a rank holding more than 3 checkpoints after a save starts a collection), after
// maybe_load. Returns the iteration loaded and the checkpoints this rank holds at the end.
std::pair<int64_t, std::vector<int64_t>> train_keeping_two(const std::shared_ptr<mn::Communicator>& c, int64_t stop,
                                                          const fs::path& dir, int64_t every = 1) {
  Job job(c, IntervalTrigger(double(stop), Unit::Iteration), dir, 3, 26);
  auto checkpointer = mn::create_multi_node_checkpointer("run", c, 2, 1);
  checkpointer->set_scatter(26, true, 3);
  job.trainer->extend(checkpointer, "", IntervalTrigger(double(every), Unit::Iteration));
  const int64_t at = checkpointer->maybe_load(*job.trainer);
  job.trainer->run();
  return {at, checkpointer->local_iterations()};
}

}  // namespace

TEST_CASE("checkpointer: ranks holding different numbers of checkpoints collect garbage together: after a restart "
          "from fewer processes, and after a job killed between two ranks' deletions", "[peers]") {
  auto comm = world();
  SKIP_UNLESS(comm->size() >= 2, "needs a peer: 2 or more processes");
  SharedDir dir(comm);
  const int r = comm->rank(), n = comm->size(), last = n - 1;
  auto one = comm->split(r == 0 ? 0 : 1, r);
  if (r == 0) CHECK(train_keeping_two(one, 3, dir.path) == std::pair<int64_t, std::vector<int64_t>>{0, {1, 2, 3}});
  comm->allgather_bytes("");

  // Every rank resumes 1 process's iteration 3; at the save of 4, rank 0 holds 4 checkpoints and
  // the others 1. The ranks collect together: iteration 4 is the only one every rank holds.
  CHECK(train_keeping_two(comm, 5, dir.path) == std::pair<int64_t, std::vector<int64_t>>{3, {4, 5}});
  comm->allgather_bytes("");
  CHECK(checkpoints_in(dir.path) == names(n, {4, 5}));
  comm->allgather_bytes("");

  // The last rank was killed before it removed two old checkpoints (copies stand for them): at the
  // save of 6 it holds 5 and the others 3.
  const fs::path mine = dir.path / ("run." + std::to_string(last) + ".4");
  if (r == last)
    for (const char* old : {".1", ".2"}) fs::copy_file(mine, dir.path / ("run." + std::to_string(last) + old));
  comm->allgather_bytes("");
  CHECK(train_keeping_two(comm, 7, dir.path) == std::pair<int64_t, std::vector<int64_t>>{5, {5, 6, 7}});
  comm->allgather_bytes("");
  CHECK(checkpoints_in(dir.path) == names(n, {5, 6, 7}));
  comm->allgather_bytes("");

  // A rerun resumes from the newest and goes on collecting.
  CHECK(train_keeping_two(comm, 8, dir.path) == std::pair<int64_t, std::vector<int64_t>>{7, {7, 8}});
  comm->allgather_bytes("");
  CHECK(checkpoints_in(dir.path) == names(n, {7, 8}));
  comm->allgather_bytes("");
}

TEST_CASE("checkpointer: after a restart with fewer processes, the old ranks beyond the new count lose their files "
          "once the new job has saved newer complete sets", "[peers]") {
  auto comm = world();
  SKIP_UNLESS(comm->size() >= 2, "needs a peer: 2 or more processes");
  SharedDir dir(comm);
  const int r = comm->rank(), n = comm->size();
  CHECK(train_keeping_two(comm, 4, dir.path, 2).second == std::vector<int64_t>{2, 4});
  comm->allgather_bytes("");
  auto one = comm->split(r == 0 ? 0 : 1, r);
  if (r == 0) {
    // Each save collects the old ranks' files of the iterations it no longer keeps: 2 at the
    // save of 6, 4 at the save of 8.
    CHECK(train_keeping_two(one, 8, dir.path, 2) == std::pair<int64_t, std::vector<int64_t>>{4, {6, 8}});
    CHECK(checkpoints_in(dir.path) == names(1, {6, 8}));
  }
  comm->allgather_bytes("");
  // A rerun with every process resumes the 1 process's newest.
  CHECK(train_keeping_two(comm, 9, dir.path).first == 8);
  comm->allgather_bytes("");
  std::set<std::string> expected = names(n, {9});
  expected.merge(names(1, {6, 8}));  // rank 0's: 3 checkpoints are not yet a collection
  CHECK(checkpoints_in(dir.path) == expected);
  comm->allgather_bytes("");
}

namespace {

// What a job of N processes killed in its first save (of iteration 2) leaves in DIR: every rank's
// file but the last rank's, which has only its temporary file. The notice of the rerun that
// removes them.
std::string kill_in_first_save(const std::shared_ptr<mn::Communicator>& comm, const fs::path& dir) {
  const int r = comm->rank(), n = comm->size(), last = n - 1;
  {
    Job a(comm, IntervalTrigger(2, Unit::Iteration), dir);
    a.run_saving_every(2);
  }
  if (r == last) {
    fs::remove(dir / ("run." + std::to_string(last) + ".2"));
    std::ofstream(dir / ("run." + std::to_string(last) + ".2.tmp.4242.0")) << "half";
  }
  comm->allgather_bytes("");
  std::string found;
  for (int k = 0; k < last; ++k)
    found += (k ? ", '" : "'") + (dir / ("run." + std::to_string(k) + ".2")).string() + "' (iteration 2, rank " +
             std::to_string(k) + " of a job of " + std::to_string(n) + " processes)";
  return "no complete set of checkpoints of run 'run' in '" + dir.string() + "', only what the first save of a job "
         "killed part of the way left: " + found + "; removed " + (last == 1 ? "it" : "them") + ", starting afresh";
}

}  // namespace

TEST_CASE("checkpointer: after a job killed in its first save, a rerun removes what its ranks left and starts afresh, "
          "saying which files", "[peers]") {
  auto comm = world();
  SKIP_UNLESS(comm->size() >= 2, "needs a peer: 2 or more processes");  // one rank's rename either happened or did not
  SharedDir dir(comm);
  const std::string notice = kill_in_first_save(comm, dir.path);
  Job c(comm, IntervalTrigger(4, Unit::Iteration), dir.path);
  auto checkpointer = mn::create_multi_node_checkpointer("run", comm);
  c.trainer->extend(checkpointer, "", IntervalTrigger(2, Unit::Iteration));
  CHECK(checkpointer->maybe_load(*c.trainer) == 0);
  CHECK(checkpointer->notice() == notice);
  comm->allgather_bytes("");
  CHECK(checkpoints_in(dir.path).empty());
  comm->allgather_bytes("");
  c.trainer->run();
  comm->allgather_bytes("");
  CHECK(checkpoints_in(dir.path) == names(comm->size(), {2, 4}));
  // The next rerun resumes as usual.
  Job d(comm, IntervalTrigger(6, Unit::Iteration), dir.path);
  auto again = mn::create_multi_node_checkpointer("run", comm);
  CHECK(again->maybe_load(*d.trainer) == 4);
  CHECK(again->notice().empty());
}

TEST_CASE("checkpointer: after a job killed in its first save, a rerun with another process count starts afresh too", "[peers]") {
  auto comm = world();
  SKIP_UNLESS(comm->size() >= 2, "needs a peer: 2 or more processes");
  SharedDir dir(comm);
  const int r = comm->rank();
  const std::string notice = kill_in_first_save(comm, dir.path);
  auto one = comm->split(r == 0 ? 0 : 1, r);
  if (r == 0) {  // rank 0 also removes the files of the ranks the job of 1 does not have
    Job c(one, IntervalTrigger(2, Unit::Iteration), dir.path);
    auto checkpointer = mn::create_multi_node_checkpointer("run", one);
    CHECK(checkpointer->maybe_load(*c.trainer) == 0);
    CHECK(checkpointer->notice() == notice);
    CHECK(checkpoints_in(dir.path).empty());
    CHECK(files_in(dir.path).count("run." + std::to_string(comm->size() - 1) + ".2.tmp.4242.0") == 0);
  }
  comm->allgather_bytes("");
}

TEST_CASE("checkpointer: bad arguments name the argument") {
  auto comm = world();
  CHECK_THROWS_WITH(mn::create_multi_node_checkpointer("", comm), "create_multi_node_checkpointer: name must not be empty");
  CHECK_THROWS_WITH(mn::create_multi_node_checkpointer("run", comm, 0),
                    "create_multi_node_checkpointer: cp_interval must be at least 1, got 0");
  CHECK_THROWS_WITH(mn::create_multi_node_checkpointer("run", comm, 5, -1),
                    "create_multi_node_checkpointer: gc_interval must be at least 1, got -1");
  CHECK_THROWS_WITH(mn::create_multi_node_checkpointer("run", nullptr),
                    "create_multi_node_checkpointer: the communicator is null");
}

TEST_CASE("multi_node_snapshot: replica sets as ChainerMN parses them") {
  using Sets = std::vector<std::set<int>>;
  CHECK(mn::extensions::parse_replica_sets({{0}}, 4) == Sets{{0}, {1, 2, 3}});
  CHECK(mn::extensions::parse_replica_sets({{0}, {1}}, 4) == Sets{{0}, {1}, {2, 3}});
  CHECK(mn::extensions::parse_replica_sets({{0, 1}, {2, 3}}, 4) == Sets{{0, 1}, {2, 3}});
  CHECK(mn::extensions::parse_replica_sets({}, 4) == Sets{{0, 1, 2, 3}});
  CHECK(mn::extensions::parse_replica_sets({{0, 2, 4, 6}}, 8) == Sets{{0, 2, 4, 6}, {1, 3, 5, 7}});
  CHECK(mn::extensions::parse_replica_sets({{0}}, 1) == Sets{{0}});
  CHECK_THROWS_WITH(mn::extensions::parse_replica_sets({{0, 4}}, 4),
                    "multi_node_snapshot: rank 4 in replica_sets is not a rank of a communicator of size 4");
  CHECK_THROWS_WITH(mn::extensions::parse_replica_sets({{0, 1}, {1}}, 4), "multi_node_snapshot: rank 1 is in two replica sets");
}

TEST_CASE("multi_node_snapshot: the smallest rank of each replica set writes; autoload shares what it loaded") {
  auto comm = world();
  SharedDir dir(comm);
  const int n = comm->size();
  {
    Job job(comm, IntervalTrigger(3, Unit::Iteration), dir.path);
    auto snapshot = mn::extensions::multi_node_snapshot(comm, E::snapshot(), {{0}});
    CHECK(snapshot->master() == (comm->rank() == 0 ? 0 : 1));
    job.trainer->extend(snapshot, "", IntervalTrigger(3, Unit::Iteration));
    job.trainer->run();
  }
  comm->allgather_bytes("");
  std::set<std::string> expected = {"log", "snapshot_iter_3.0"};
  if (n > 1) expected.insert("snapshot_iter_3.1");
  CHECK(files_in(dir.path) == expected);
  // A restart: every rank, with a file of its own or not, continues from iteration 3 with its master's state.
  Job again(comm, IntervalTrigger(4, Unit::Iteration), dir.path);
  auto autoloading = E::snapshot();
  autoloading->set_autoload(true);
  again.trainer->extend(mn::extensions::multi_node_snapshot(comm, autoloading, {{0}}), "", IntervalTrigger(3, Unit::Iteration));
  again.trainer->run();
  CHECK(again.updater->iteration() == 4);
  CHECK(again.optimizer->t() == 3);  // loaded at 3 (t counts the steps after the first update's broadcast), one more step
  CHECK(again.optimizer->broadcast_count() == 0);
}
