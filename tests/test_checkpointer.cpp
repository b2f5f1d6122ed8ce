// The multi-node checkpointer (file names, atomic saves, garbage collection, the collective
// choice of the iteration to resume, errors on every rank) and multi_node_snapshot (replica
// sets, one writer per set, autoload shared within a set). Run under mpiexec with 1 to 4
// processes; every rank runs the same test cases in the same order, and checks between
// collectives use CHECK (never REQUIRE), so one rank's failure cannot leave the others waiting.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <set>

#include "core/random.h"
#include "datasets/serial_iterator.h"
#include "datasets/tuple_dataset.h"
#include "distributed/communicators/communicator.h"
#include "distributed/datasets/scatter_dataset.h"
#include "distributed/extensions/checkpoint.h"
#include "distributed/extensions/multi_node_snapshot.h"
#include "distributed/optimizers/multi_node_optimizer.h"
#include "nn/links/classifier.h"
#include "nn/links/linear.h"
#include "nn/optimizers/adam.h"
#include "training/extensions/log_report.h"
#include "training/extensions/snapshot.h"
#include "training/trainer.h"
#include "training/updater.h"

using namespace chainer;
namespace E = chainer::training::extensions;
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

// A small data-parallel job: 3 hidden units, Adam, a shuffled share of 13 * size examples in
// batches of 4 (4 iterations per epoch), every rank with its own iterator order.
struct Job {
  std::shared_ptr<L::Classifier> model;
  std::shared_ptr<mn::MultiNodeOptimizer> optimizer;
  std::shared_ptr<training::StandardUpdater> updater;
  std::unique_ptr<training::Trainer> trainer;
  std::shared_ptr<E::LogReport> log;

  Job(const std::shared_ptr<mn::Communicator>& comm, IntervalTrigger stop, const fs::path& out, int64_t hidden = 3) {
    datasets::DatasetPtr all;
    if (comm->rank() == 0) {
      Generator gen(7);
      const int64_t n = 13 * comm->size();
      std::vector<int32_t> t;
      for (int64_t i = 0; i < n; ++i) t.push_back(int32_t(gen.below(2)));
      all = std::make_shared<datasets::TupleDataset>(std::vector<Tensor>{
          random::normal({n, 5}, 0.0, 1.0, DType::Float32, &gen), Tensor::from_vector(t)});
    }
    auto train = mn::scatter_dataset(all, comm, 0, /*shuffle=*/true, 3);
    random::seed(11);
    model = std::make_shared<L::Classifier>(std::make_shared<L::Linear>(5, hidden));
    optimizer = std::make_shared<mn::MultiNodeOptimizer>(std::make_shared<optimizers::Adam>(0.05), comm);
    optimizer->setup(model);
    auto iter = std::make_shared<iterators::SerialIterator>(train, 4, true, true, uint64_t(comm->rank()));
    updater = std::make_shared<training::StandardUpdater>(iter, optimizer);
    trainer = std::make_unique<training::Trainer>(updater, stop, out.string());
    log = std::make_shared<E::LogReport>(std::vector<std::string>{}, IntervalTrigger(2, Unit::Iteration));
    if (comm->rank() == 0) trainer->extend(log);  // the reports of rank 0, as the apps have them
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
    b.trainer->extend(mn::create_multi_node_checkpointer("run", comm), "", IntervalTrigger(2, Unit::Iteration));
    b.trainer->run();
  }
  if (r == n - 1) fs::remove(dir.path / "b" / ("run." + std::to_string(r) + ".6"));
  // What saves killed mid-way leave: the checkpointer's temporary file, and save_npz's own.
  std::ofstream(dir.path / "b" / ("tmp-run." + std::to_string(r) + ".8")) << "half";
  std::ofstream(dir.path / "b" / ("tmp-run." + std::to_string(r) + ".8.tmp.4242.0")) << "half";
  comm->allgather_bytes("");

  // C: a fresh job resumes at 4 on every rank, then ends exactly where A ends.
  Job c(comm, IntervalTrigger(8, Unit::Iteration), dir.path / "b");
  auto checkpointer = mn::create_multi_node_checkpointer("run", comm);
  c.trainer->extend(checkpointer, "", IntervalTrigger(2, Unit::Iteration));
  random::seed(999);  // the checkpoint restores the default generator
  CHECK(checkpointer->maybe_load(*c.trainer, c.optimizer.get()) == 4);
  CHECK(c.updater->iteration() == 4);
  if (r == 0) CHECK(c.log->log().size() == 2);  // the log continues
  CHECK(!fs::exists(dir.path / "b" / ("tmp-run." + std::to_string(r) + ".8")));
  CHECK(!fs::exists(dir.path / "b" / ("tmp-run." + std::to_string(r) + ".8.tmp.4242.0")));
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
    b.trainer->extend(mn::create_multi_node_checkpointer("run", comm), "", IntervalTrigger(2, Unit::Iteration));
    b.trainer->run();
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

TEST_CASE("checkpointer: a checkpoint of another model is an error naming the first mismatch; nothing is overwritten") {
  auto comm = world();
  SharedDir dir(comm);
  {
    Job b(comm, IntervalTrigger(2, Unit::Iteration), dir.path);
    b.trainer->extend(mn::create_multi_node_checkpointer("run", comm), "", IntervalTrigger(2, Unit::Iteration));
    b.trainer->run();
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

TEST_CASE("checkpointer: checkpoints of another process count are an error on every rank saying so") {
  auto comm = world();
  if (comm->size() == 1) return;
  SharedDir dir(comm);
  // Rank 0 alone (a job of 1 process) checkpoints; the job of n then finds checkpoints on rank 0 only.
  auto alone = comm->split(comm->rank(), 0);
  if (comm->rank() == 0) {
    Job one(alone, IntervalTrigger(2, Unit::Iteration), dir.path);
    one.trainer->extend(mn::create_multi_node_checkpointer("run", alone), "", IntervalTrigger(2, Unit::Iteration));
    one.trainer->run();
  }
  comm->allgather_bytes("");
  Job job(comm, IntervalTrigger(4, Unit::Iteration), dir.path);
  CHECK_THROWS_WITH(mn::create_multi_node_checkpointer("run", comm)->maybe_load(*job.trainer),
                    Catch::Contains("was written by a job of 1 processes") &&
                        Catch::Contains("this job has " + std::to_string(comm->size())));
  CHECK(job.updater->iteration() == 0);
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
