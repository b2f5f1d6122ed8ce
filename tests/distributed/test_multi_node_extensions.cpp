// ChainerMN's trainer extensions and communicator extras: AllreducePersistent,
// ObservationAggregator, MultiNodeEarlyStoppingTrigger, the dummy communicator and
// set_config/get_config. Run under mpiexec with 1 to 4 processes; every rank runs the same test
// cases in the same order, each rank's values follow a rule of its rank, and every expected
// value is that rule's closed form. Checks between collectives use CHECK (never REQUIRE), so one
// rank's failure cannot leave the others waiting in a collective.
#include <catch2/catch.hpp>

#include "catch_session.h"
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/io/npz.h"
#include "core/ops/ops.h"
#include "distributed/communicators/communicator.h"
#include "distributed/communicators/dummy_communicator.h"
#include "distributed/extensions/allreduce_persistent.h"
#include "distributed/extensions/multi_node_early_stopping_trigger.h"
#include "distributed/extensions/multi_node_snapshot.h"
#include "distributed/extensions/observation_aggregator.h"
#include "distributed/optimizers/multi_node_optimizer.h"
#include "nn/links/batch_normalization.h"
#include "nn/optimizers/sgd.h"
#include "nn/reporter.h"
#include "training/extensions/snapshot.h"
#include "training/trainer.h"
#include "training/updater.h"

using namespace chainer;
using chainer::training::IntervalTrigger;
using chainer::training::Trainer;
using chainer::training::Unit;
namespace mn = chainermn;
namespace mne = chainermn::extensions;

namespace {

std::shared_ptr<mn::Communicator> world(const std::string& name = "naive") { return mn::create_communicator(name); }

// An updater without data or optimizers: iteration i (from 1) calls REPORT(i), which reports
// the rank's values; ITERATIONS_PER_EPOCH iterations make an epoch.
class ScriptedUpdater : public training::Updater {
 public:
  ScriptedUpdater(int64_t iterations_per_epoch, std::function<void(int64_t)> report)
      : per_epoch_(iterations_per_epoch), report_(std::move(report)) {}
  void update() override { report_(++iteration_); }
  int64_t iteration() const override { return iteration_; }
  int64_t epoch() const override { return iteration_ / per_epoch_; }
  double epoch_detail() const override { return double(iteration_) / double(per_epoch_); }
  bool is_new_epoch() const override { return iteration_ % per_epoch_ == 0; }
  Optimizer& get_optimizer(const std::string& name) override { throw Error("ScriptedUpdater: no optimizer " + name); }
  std::map<std::string, Optimizer*> get_all_optimizers() override { return {}; }
  iterators::Iterator& get_iterator(const std::string& name) override { throw Error("ScriptedUpdater: no iterator " + name); }
  void serialize(Serializer& s) override { s.value("iteration", iteration_); }

 private:
  int64_t per_epoch_;
  std::function<void(int64_t)> report_;
  int64_t iteration_ = 0;
};

// The trainers' output folder: this process's own, removed when the process ends.
const std::string& out_dir() {
  static const struct OutDir {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("test_multi_node_extensions_" + std::to_string(getpid()));
    ~OutDir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  } dir;
  static const std::string path = dir.path.string();
  return path;
}

// A trainer over a ScriptedUpdater for ITERATIONS iterations.
std::unique_ptr<Trainer> scripted_trainer(int64_t iterations, int64_t per_epoch, std::function<void(int64_t)> report) {
  return std::make_unique<Trainer>(std::make_shared<ScriptedUpdater>(per_epoch, std::move(report)),
                                   IntervalTrigger(double(iterations), Unit::Iteration), out_dir());
}

// What a reader extension sees of KEY after each iteration: iteration -> value (absent: not reported).
std::map<int64_t, double> record(Trainer& trainer, const std::string& key) {
  auto seen = std::make_shared<std::map<int64_t, double>>();
  trainer.extend([seen, key](Trainer& t) {
    if (auto it = t.observation().find(key); it != t.observation().end()) (*seen)[t.updater().iteration()] = it->second;
  });
  trainer.run();
  return *seen;
}

// A link with persistents of three dtypes: float64 "scale" (averaged) and int64 "count" (left alone).
struct Counter : Link {
  Counter() {
    add_persistent("scale", Tensor::zeros({2}, DType::Float64));
    add_persistent("count", Tensor::zeros({1}, DType::Int64));
  }
};

struct WithPersistents : Chain {
  std::shared_ptr<links::BatchNormalization> bn = add_link("bn", std::make_shared<links::BatchNormalization>(3));
  std::shared_ptr<Counter> counter = add_link("counter", std::make_shared<Counter>());
};

struct OneParam : Link {
  explicit OneParam(DType dtype) { add_param("W", Tensor::from_vector<double>({1, 2, 3}).astype(dtype)); }
};

}  // namespace

// ---- AllreducePersistent ----

TEST_CASE("AllreducePersistent: every rank holds the mean of the floating persistents; integers stay") {
  auto comm = world();
  const int rank = comm->rank(), n = comm->size();
  const double r = rank, mean_r = (n - 1) / 2.0;  // the mean of the ranks 0..n-1
  auto model = std::make_shared<WithPersistents>();
  model->bn->persistent("avg_mean").copy_(Tensor::from_vector<double>({r, 2 * r, r + 0.5}));
  model->bn->persistent("avg_var").copy_(Tensor::from_vector<double>({1 + r, 1 + r * r, 3}));
  model->counter->persistent("scale").copy_(Tensor::from_vector<double>({0.25 * r, -r}));
  model->counter->persistent("count").copy_(Tensor::from_vector<int64_t>({10 + rank}));

  mne::AllreducePersistent ext(model, comm);
  CHECK(ext.default_name() == "AllreducePersistent");
  CHECK(ext.default_trigger().target<chainer::training::IntervalTrigger>()->period() == 1);
  CHECK(ext.default_trigger().target<chainer::training::IntervalTrigger>()->unit() == Unit::Epoch);
  CHECK(ext.priority() == training::PRIORITY_WRITER + 1);  // before the evaluators
  const Tensor avg_mean = model->bn->persistent("avg_mean");  // the same storage: updated in place
  ext.allreduce_persistent();

  double mean_r2 = 0;  // the mean of r^2
  for (int q = 0; q < n; ++q) mean_r2 += double(q) * q / n;
  const auto m = avg_mean.to_vector<double>();
  const auto v = model->bn->persistent("avg_var").to_vector<double>();
  const auto scale = model->counter->persistent("scale").to_vector<double>();
  CHECK(avg_mean.dtype() == DType::Float32);
  CHECK(m[0] == Approx(mean_r).epsilon(1e-6));
  CHECK(m[1] == Approx(2 * mean_r).epsilon(1e-6));
  CHECK(m[2] == Approx(mean_r + 0.5).epsilon(1e-6));
  CHECK(v[0] == Approx(1 + mean_r).epsilon(1e-6));
  CHECK(v[1] == Approx(1 + mean_r2).epsilon(1e-6));
  CHECK(v[2] == Approx(3).epsilon(1e-6));
  CHECK(scale[0] == Approx(0.25 * mean_r).epsilon(1e-12));
  CHECK(scale[1] == Approx(-mean_r).epsilon(1e-12));
  CHECK(model->counter->persistent("count").to_vector<int64_t>() == std::vector<int64_t>{10 + rank});

  // Once averaged, the values are the same everywhere: a second run changes nothing.
  ext.allreduce_persistent();
  CHECK(model->bn->persistent("avg_mean").to_vector<double>()[2] == Approx(mean_r + 0.5).epsilon(1e-6));
}

TEST_CASE("AllreducePersistent: half-precision persistents are averaged through float32") {
  auto comm = world();
  const int n = comm->size();
  auto link = std::make_shared<Link>();
  link->add_persistent("h", Tensor::from_vector<double>({double(comm->rank()), 4}).astype(DType::Float16));
  mne::AllreducePersistent(link, comm).allreduce_persistent();
  CHECK(link->persistent("h").dtype() == DType::Float16);
  const auto h = link->persistent("h").to_vector<double>();
  CHECK(h[0] == Approx((n - 1) / 2.0).epsilon(1e-3));
  CHECK(h[1] == 4);
}

TEST_CASE("AllreducePersistent: models that differ throw on every rank, naming the persistent", "[peers]") {
  auto comm = world();
  SKIP_UNLESS(comm->size() >= 2, "needs a peer: 2 or more processes");
  auto link = std::make_shared<Link>();
  link->add_persistent("a", Tensor::zeros({2}, DType::Float32));
  if (comm->rank() == 1) link->add_persistent("b", Tensor::zeros({2}, DType::Float32));
  CHECK_THROWS_WITH(mne::AllreducePersistent(link, comm).allreduce_persistent(),
                    Catch::Contains("AllreducePersistent: the models' floating persistents differ: rank 0 has nothing "
                                    "where rank 1 has /b float32 (2,)"));
  CHECK_THROWS_WITH(mne::AllreducePersistent(nullptr, comm), Catch::Contains("AllreducePersistent: the model is null"));
}

TEST_CASE("AllreducePersistent: as a trainer extension it runs at each epoch") {
  auto comm = world();
  const int rank = comm->rank(), n = comm->size();
  auto link = std::make_shared<Link>();
  link->add_persistent("x", Tensor::zeros({1}, DType::Float64));
  // Each iteration adds rank + 1 to x; at the end of each epoch (2 iterations) x becomes the mean.
  auto trainer = scripted_trainer(4, 2, [&](int64_t) {
    link->persistent("x").copy_(ops::add_scalar(link->persistent("x"), rank + 1));
  });
  trainer->extend(std::make_shared<mne::AllreducePersistent>(link, comm));
  trainer->run();
  // Epoch 1: x = 2 (r + 1), mean (n + 1). Epoch 2: x = (n + 1) + 2 (r + 1), mean 2 (n + 1).
  CHECK(link->persistent("x").to_vector<double>()[0] == Approx(2.0 * (n + 1)).epsilon(1e-12));
}

// ---- ObservationAggregator ----

namespace {
// Rank r's "main/loss" at iteration i: 10 r + i, not reported at iteration 3 by anyone, at
// iteration 4 by rank 1, nor at iterations 5 and 6 by anyone.
bool reports(int rank, int64_t i) { return i != 3 && !(i == 4 && rank == 1) && i != 5 && i != 6; }
double loss_of(int rank, int64_t i) { return 10.0 * rank + double(i); }
void report_loss(int rank, int64_t i) {
  if (reports(rank, i)) chainer::report({{"main/loss", loss_of(rank, i)}});
}
// The mean of every rank's values at iterations FIRST..LAST.
double expected_mean(int n, int64_t first, int64_t last) {
  double sum = 0;
  int count = 0;
  for (int q = 0; q < n; ++q)
    for (int64_t i = first; i <= last; ++i)
      if (reports(q, i)) sum += loss_of(q, i), ++count;
  return sum / count;
}
}  // namespace

TEST_CASE("ObservationAggregator: the mean over the ranks and the iterations since the last communication") {
  auto comm = world();
  const int rank = comm->rank(), n = comm->size();
  auto trainer = scripted_trainer(8, 4, [&](int64_t i) { report_loss(rank, i); });
  auto agg = std::make_shared<mne::ObservationAggregator>(comm, "main/loss", "main/loss_all",
                                                          IntervalTrigger(2, Unit::Iteration));
  CHECK(agg->priority() == training::PRIORITY_EDITOR);
  CHECK(agg->default_trigger().target<chainer::training::IntervalTrigger>()->period() == 1);
  CHECK(agg->default_trigger().target<chainer::training::IntervalTrigger>()->unit() == Unit::Iteration);
  trainer->extend(agg);
  const std::map<int64_t, double> seen = record(*trainer, "main/loss_all");
  // Reported where the comm trigger fires (2, 4, 8), except at 6: nobody reported in 5..6.
  std::vector<int64_t> at;
  for (const auto& [i, v] : seen) at.push_back(i);
  CHECK(at == std::vector<int64_t>{2, 4, 8});
  if (seen.count(2)) CHECK(seen.at(2) == Approx(10.0 * (n - 1) / 2 + 1.5).epsilon(1e-12));
  // Iterations 3..4: only iteration 4, without rank 1.
  if (seen.count(4)) CHECK(seen.at(4) == Approx(expected_mean(n, 3, 4)).epsilon(1e-12));
  if (seen.count(8)) CHECK(seen.at(8) == Approx(10.0 * (n - 1) / 2 + 7.5).epsilon(1e-12));
  // The values are the same bits on every rank.
  if (seen.count(4)) CHECK(comm->bcast_obj(seen.at(4), 0) == seen.at(4));
}

TEST_CASE("ObservationAggregator: without an aggregated key it overwrites the original, every iteration") {
  auto comm = world();
  const int rank = comm->rank(), n = comm->size();
  auto trainer = scripted_trainer(2, 4, [&](int64_t i) { report_loss(rank, i); });
  auto agg = std::make_shared<mne::ObservationAggregator>(comm, "main/loss");
  CHECK(agg->aggregated_key() == "main/loss");
  trainer->extend(agg);
  const std::map<int64_t, double> seen = record(*trainer, "main/loss");
  CHECK(seen.size() == 2);
  if (seen.count(1)) CHECK(seen.at(1) == Approx(10.0 * (n - 1) / 2 + 1).epsilon(1e-12));
  if (seen.count(2)) CHECK(seen.at(2) == Approx(10.0 * (n - 1) / 2 + 2).epsilon(1e-12));
}

TEST_CASE("ObservationAggregator: a custom aggregator gets one list per rank, in rank order") {
  auto comm = world();
  const int rank = comm->rank(), n = comm->size();
  auto trainer = scripted_trainer(4, 4, [&](int64_t i) { report_loss(rank, i); });
  // 1000 * (number of lists) + the last value of the last rank's list that has one.
  mne::Aggregator last_of_last = [](const std::vector<std::vector<double>>& values) {
    double last = std::numeric_limits<double>::quiet_NaN();
    for (const auto& list : values)
      if (!list.empty()) last = list.back();
    return 1000.0 * double(values.size()) + last;
  };
  trainer->extend(std::make_shared<mne::ObservationAggregator>(comm, "main/loss", "agg",
                                                               IntervalTrigger(4, Unit::Iteration), last_of_last));
  const std::map<int64_t, double> seen = record(*trainer, "agg");
  CHECK(seen.size() == 1);
  // Iterations 1..4; the last rank reported at 4 unless it is rank 1 (then its last is iteration 2).
  const double last = n - 1 == 1 ? loss_of(1, 2) : loss_of(n - 1, 4);
  if (seen.count(4)) CHECK(seen.at(4) == 1000.0 * n + last);
}

TEST_CASE("ObservationAggregator: an aggregator that throws on rank 0 throws on every rank") {
  auto comm = world();
  const int rank = comm->rank();
  auto trainer = scripted_trainer(2, 4, [&](int64_t i) { report_loss(rank, i); });
  trainer->extend(std::make_shared<mne::ObservationAggregator>(
      comm, "main/loss", "agg", IntervalTrigger(1, Unit::Iteration),
      [](const std::vector<std::vector<double>>&) -> double { throw Error("no good"); }));
  CHECK_THROWS_WITH(trainer->run(),
                    Catch::Contains("ObservationAggregator: the aggregator of 'main/loss' threw on rank 0: no good"));
  CHECK_THROWS_WITH(mne::ObservationAggregator(comm, ""), Catch::Contains("ObservationAggregator: the original key is empty"));
  CHECK(mne::mean_of_all({{1, 2}, {}, {6}}) == 3);
}

TEST_CASE("ObservationAggregator: serialize keeps the values not yet communicated") {
  auto comm = world();
  const int rank = comm->rank(), n = comm->size();
  // Runs 1 iteration of a 2-iteration interval, saves, and a fresh aggregator resumes from it.
  auto first = scripted_trainer(1, 4, [&](int64_t i) { report_loss(rank, i); });
  auto agg = std::make_shared<mne::ObservationAggregator>(comm, "main/loss", "agg", IntervalTrigger(2, Unit::Iteration));
  first->extend(agg, "agg");
  first->run();
  Serializer w = Serializer::writer();
  first->serialize(w);
  auto second = scripted_trainer(2, 4, [&](int64_t i) { report_loss(rank, i); });
  second->extend(std::make_shared<mne::ObservationAggregator>(comm, "main/loss", "agg", IntervalTrigger(2, Unit::Iteration)),
                 "agg");
  Serializer r = Serializer::reader(w.entries());
  second->serialize(r);
  const std::map<int64_t, double> seen = record(*second, "agg");
  CHECK(seen.size() == 1);
  if (seen.count(2)) CHECK(seen.at(2) == Approx(10.0 * (n - 1) / 2 + 1.5).epsilon(1e-12));
}

// ---- MultiNodeEarlyStoppingTrigger ----

namespace {
// The mean over the ranks of epoch e's loss: best at epoch 2, then two epochs without
// improvement, so patience 2 stops at the end of epoch 4 (iteration 8, 2 iterations an epoch).
double epoch_mean(int64_t e) {
  static const std::vector<double> m{5, 4, 4.5, 4.2, 3, 2};
  return m[size_t(e - 1)];
}
// Rank r's loss at iteration i of epoch e: the mean, plus 0.5 at the first iteration and -0.5
// at the second (so the decision must use both), plus a share that sums to 0 over the ranks:
// -e on rank 0, e / (n - 1) on the others. Rank 0's own values fall at every epoch, so it alone
// would never stop; with 2 ranks rank 1's rise from epoch 2, so it alone would stop at epoch 3.
double rank_loss(int rank, int n, int64_t i) {
  const int64_t e = (i + 1) / 2;
  const double within = i % 2 == 1 ? 0.5 : -0.5;
  const double share = n == 1 ? 0.0 : rank == 0 ? -double(e) : double(e) / (n - 1);
  return epoch_mean(e) + within + share;
}
}  // namespace

TEST_CASE("MultiNodeEarlyStoppingTrigger: every rank stops at the iteration the averaged value says") {
  auto comm = world();
  const int rank = comm->rank(), n = comm->size();
  auto trainer = scripted_trainer(12, 2, [&](int64_t i) { chainer::report({{"main/loss", rank_loss(rank, n, i)}}); });
  auto stop = std::make_shared<mne::MultiNodeEarlyStoppingTrigger>(comm, IntervalTrigger(1, Unit::Epoch), "main/loss", 2);
  CHECK_FALSE(stop->maximizes());
  CHECK(stop->patience() == 2);
  auto fired = std::make_shared<std::vector<int64_t>>();
  // Called after each iteration, as the trainer calls its stop trigger before the next one.
  trainer->extend([stop, fired](Trainer& t) {
    if ((*stop)(t)) fired->push_back(t.updater().iteration());
  });
  trainer->run();
  CHECK(!fired->empty());
  if (!fired->empty()) CHECK(fired->front() == 8);
  // Once the count reached patience, every later check fires too, until a better value comes.
  CHECK(*fired == std::vector<int64_t>{8});  // epoch 5's mean (3) is a new best: the count restarts
  CHECK(stop->best() == Approx(2).epsilon(1e-12));
  CHECK(stop->count() == 0);
  // Each rank reached the same decision at the same iteration.
  const std::vector<std::vector<int64_t>> all = comm->allgather_obj(*fired);
  for (const auto& f : all) CHECK(f == *fired);

  // Without averaging, rank 0 alone would never stop: its own values fall at every epoch.
  double previous = std::numeric_limits<double>::infinity();
  for (int64_t e = 1; e <= 4 && n > 1; ++e) {
    const double own = (rank_loss(0, n, 2 * e - 1) + rank_loss(0, n, 2 * e)) / 2;
    CHECK(own < previous);
    previous = own;
  }
}

TEST_CASE("MultiNodeEarlyStoppingTrigger: as the trainer's stop trigger, every rank stops after iteration 8") {
  auto comm = world();
  const int rank = comm->rank(), n = comm->size();
  // The same values as above; the trainer asks its stop trigger before each iteration.
  Trainer trainer(std::make_shared<ScriptedUpdater>(2, [&](int64_t i) { chainer::report({{"main/loss", rank_loss(rank, n, i)}}); }),
                  mne::MultiNodeEarlyStoppingTrigger(comm, IntervalTrigger(1, Unit::Epoch), "main/loss", 2,
                                                     "auto", false, IntervalTrigger(12, Unit::Iteration)),
                  out_dir());
  CHECK(trainer.stop_trigger().training_length()->length == 12);
  trainer.run();
  CHECK(trainer.updater().iteration() == 8);
}

TEST_CASE("MultiNodeEarlyStoppingTrigger: max_trigger bounds the training; the mode; serialize") {
  auto comm = world();
  mne::MultiNodeEarlyStoppingTrigger stop(comm, IntervalTrigger(1, Unit::Iteration), "main/loss", 3, "auto", false,
                                          IntervalTrigger(3, Unit::Iteration));
  CHECK(stop.training_length().length == 3.0);
  CHECK(stop.training_length().unit == Unit::Iteration);
  auto trainer = scripted_trainer(5, 2, [](int64_t) {});  // nothing reported: only max_trigger decides
  auto fired = std::make_shared<std::vector<int64_t>>();
  trainer->extend([&stop, fired](Trainer& t) {
    if (stop(t)) fired->push_back(t.updater().iteration());
  });
  trainer->run();
  CHECK(*fired == std::vector<int64_t>{3});
  CHECK(stop.best() == std::numeric_limits<double>::infinity());

  CHECK(mne::MultiNodeEarlyStoppingTrigger(comm, {1, Unit::Epoch}, "validation/main/accuracy").maximizes());
  CHECK_FALSE(mne::MultiNodeEarlyStoppingTrigger(comm, {1, Unit::Epoch}, "validation/main/accuracy", 3, "min").maximizes());
  CHECK(mne::MultiNodeEarlyStoppingTrigger(comm, {1, Unit::Epoch}, "main/loss", 3, "max").maximizes());
  CHECK(mne::MultiNodeEarlyStoppingTrigger(comm).training_length().length == 100.0);
  CHECK(mne::MultiNodeEarlyStoppingTrigger(comm).training_length().unit == Unit::Epoch);
  CHECK_THROWS_WITH(mne::MultiNodeEarlyStoppingTrigger(comm, {1, Unit::Epoch}, "main/loss", 3, "mx"),
                    Catch::Contains("MultiNodeEarlyStoppingTrigger: mode must be 'auto', 'min' or 'max', got 'mx'"));

  // The best value and the count survive a snapshot.
  const int rank = comm->rank();
  mne::MultiNodeEarlyStoppingTrigger a(comm, IntervalTrigger(1, Unit::Iteration), "main/loss", 5);
  auto t2 = scripted_trainer(3, 2, [&](int64_t i) { chainer::report({{"main/loss", i == 1 ? 1.0 : 2.0 + rank}}); });
  t2->extend([&a](Trainer& t) { a(t); });
  t2->run();
  CHECK(a.best() == 1);
  CHECK(a.count() == 2);
  Serializer w = Serializer::writer();
  a.serialize(w);
  mne::MultiNodeEarlyStoppingTrigger b(comm, IntervalTrigger(1, Unit::Iteration), "main/loss", 5);
  Serializer r = Serializer::reader(w.entries());
  b.serialize(r);
  CHECK(b.best() == 1);
  CHECK(b.count() == 2);
}

// ---- The dummy communicator ----

TEST_CASE("dummy communicator: multi_node_mean_grad leaves each rank its own gradients") {
  auto comm = world("dummy");
  const int rank = comm->rank(), n = comm->size();
  CHECK(comm->name() == "dummy");
  CHECK(dynamic_cast<mn::DummyCommunicator*>(comm.get()) != nullptr);
  CHECK_FALSE(comm->averages_gradients());
  CHECK(world()->averages_gradients());
  bool listed = false;
  for (const mn::CommunicatorKind& k : mn::communicator_kinds())
    if (k.name == "dummy") listed = k.available && !k.averages;
  CHECK(listed);
  for (DType dtype : {DType::Float32, DType::Float64}) {
    OneParam model(dtype);
    model.param("W").set_grad(Tensor::from_vector<double>({1.0 + rank, -2.0 * rank, 0.125}).astype(dtype));
    comm->multi_node_mean_grad(model);
    CHECK(model.param("W").grad().dtype() == dtype);
    CHECK(model.param("W").grad().to_vector<double>() == std::vector<double>{1.0 + rank, -2.0 * rank, 0.125});
  }
  // Its other collectives communicate.
  CHECK(comm->allreduce(Tensor::from_vector<double>({1.0})).to_vector<double>()[0] == n);
}

TEST_CASE("dummy communicator: the multi-node optimizer steps each rank with its own gradients") {
  for (const mn::Reduction reduction : {mn::Reduction::Bucketed, mn::Reduction::Communicator}) {
    CAPTURE(mn::reduction_name(reduction));
    auto comm = world("dummy");
    const int rank = comm->rank();
    auto model = std::make_shared<OneParam>(DType::Float32);
    model->param("W").data().copy_(Tensor::from_vector<double>({1.0 + rank, 2, 3}));  // rank 0's wins the broadcast
    mn::MultiNodeOptimizerOptions options;
    options.reduction = reduction;
    auto opt = mn::create_multi_node_optimizer(std::make_shared<optimizers::SGD>(1.0), comm, options);
    opt->setup(model);
    opt->update();  // the first update broadcasts rank 0's parameters
    CHECK(model->param("W").data().to_vector<double>() == std::vector<double>{1, 2, 3});
    model->param("W").set_grad(Tensor::from_vector<double>({0.5 * (rank + 1), 1.0 * (rank + 1), 0}).astype(DType::Float32));
    opt->update();
    CHECK(opt->t() == 1);
    CHECK(model->param("W").data().to_vector<double>() == std::vector<double>{1 - 0.5 * (rank + 1), 2 - 1.0 * (rank + 1), 3});
    CHECK(dynamic_cast<mn::MultiNodeOptimizer&>(*opt).reducer() == nullptr);
    CHECK_FALSE(dynamic_cast<mn::MultiNodeOptimizer&>(*opt).shares_update());
  }
}

// ---- set_config / get_config ----

TEST_CASE("set_config/get_config: allreduce_grad_dtype and batched_copy by name") {
  auto comm = world("flat");
  CHECK(mn::Communicator::config_names() == std::vector<std::string>{"allreduce_grad_dtype", "batched_copy"});
  CHECK(std::holds_alternative<std::monostate>(comm->get_config("allreduce_grad_dtype")));
  CHECK(comm->get_config("batched_copy") == mn::ConfigValue(false));

  comm->set_config("allreduce_grad_dtype", DType::Float16);
  CHECK(comm->get_config("allreduce_grad_dtype") == mn::ConfigValue(DType::Float16));
  CHECK(comm->options().allreduce_grad_dtype == DType::Float16);
  comm->set_config("batched_copy");  // ChainerMN's default value: true
  CHECK(comm->get_config("batched_copy") == mn::ConfigValue(true));
  // split() passes the settings on.
  auto sub = comm->split(0, comm->rank());
  CHECK(sub->get_config("allreduce_grad_dtype") == mn::ConfigValue(DType::Float16));
  CHECK(sub->get_config("batched_copy") == mn::ConfigValue(true));

  // The wire dtype takes effect at the next reduction: 1 + 2^-12 does not survive float16.
  const double g = 1.0 + std::ldexp(1.0, -12);
  auto mean_of_g = [&] {
    OneParam model(DType::Float32);
    model.param("W").set_grad(Tensor::from_vector<double>({g, g, g}).astype(DType::Float32));
    comm->multi_node_mean_grad(model);
    return model.param("W").grad().to_vector<double>()[0];
  };
  if (comm->size() > 1) CHECK(std::abs(mean_of_g() - g) > 1e-5);
  comm->set_config("allreduce_grad_dtype", mn::ConfigValue());  // none: each gradient's own dtype
  CHECK(std::holds_alternative<std::monostate>(comm->get_config("allreduce_grad_dtype")));
  CHECK(mean_of_g() == Approx(g).epsilon(1e-7));

  CHECK_THROWS_WITH(comm->set_config("allreduce_grad_dtypes", DType::Float16),
                    Catch::Contains("set_config: unknown config 'allreduce_grad_dtypes'; known: allreduce_grad_dtype, "
                                    "batched_copy"));
  CHECK_THROWS_WITH(comm->get_config("bogus"),
                    Catch::Contains("get_config: unknown config 'bogus'; known: allreduce_grad_dtype, batched_copy"));
  CHECK_THROWS_WITH(comm->set_config("allreduce_grad_dtype", DType::Int32),
                    Catch::Contains("set_config: allreduce_grad_dtype int32 cannot carry gradients"));
  CHECK_THROWS_WITH(comm->set_config("allreduce_grad_dtype", true),
                    Catch::Contains("set_config: 'allreduce_grad_dtype' takes a floating dtype or none, got a bool"));
  CHECK_THROWS_WITH(comm->set_config("batched_copy", DType::Float32),
                    Catch::Contains("set_config: 'batched_copy' takes a bool, got a dtype"));
  CHECK(comm->get_config("allreduce_grad_dtype") == mn::ConfigValue());  // a refused value changes nothing
}

// ---- Debug mode after a load ----

TEST_CASE("debug mode: after a load, ranks whose parameters differ are an error on every rank naming them") {
  auto comm = world();
  const int rank = comm->rank(), n = comm->size();
  std::filesystem::create_directories(out_dir());
  // Each rank resumes from a file of its own, as a checkpointer's ranks do; rank 1's holds other values.
  OneParam saved(DType::Float32);
  saved.param("W").data().copy_(Tensor::from_vector<double>({1, 2, rank == 1 ? 4.0 : 3.0}));
  const std::string file = out_dir() + "/resumed.npz";
  save_npz(file, saved);
  OneParam model(DType::Float32);
  model.param("W").data().fill_(0);
  load_npz(file, model);
  if (n == 1) {
    CHECK_NOTHROW(comm->check_params_consistent(model, "resume"));
  } else {
    CHECK_THROWS_WITH(comm->check_params_consistent(model, "resume"),
                      Catch::StartsWith("resume (debug mode): the parameters differ across ranks after the load") &&
                          Catch::Contains("\n  parameter /W: float32 (3,) with values #") &&
                          Catch::Contains(n > 2 ? " on ranks 0, 2" : " on rank 0") && Catch::Contains(" on rank 1"));
  }
  // Only the ranks of one group are compared: rank 1 alone is compared with none.
  CHECK_NOTHROW(comm->check_params_consistent(model, "resume", rank == 1 ? 1 : 0));
  // The same values everywhere: nothing to say.
  OneParam same(DType::Float32);
  CHECK_NOTHROW(comm->check_params_consistent(same, "resume"));
  // A parameter initialized on some ranks only, or on one rank only.
  Link lazy;
  lazy.add_param("W", rank == 0 ? Tensor() : Tensor::ones({2}));
  if (rank == 0) lazy.add_param("extra", Tensor::ones({1}));
  if (n == 1) {
    CHECK_NOTHROW(comm->check_params_consistent(lazy, "resume"));
  } else {
    CHECK_THROWS_WITH(comm->check_params_consistent(lazy, "resume"),
                      Catch::Contains("parameter /W: not initialized on rank 0; float32 (2,) with values #") &&
                          Catch::Contains("parameter /extra: float32 (1,) with values #") &&
                          Catch::Contains("; no such parameter on rank"));
  }
}

namespace {
// A link whose serialize leaves its bias out: a load does not set it, so each rank keeps its own.
struct ForgetsBias : Link {
  explicit ForgetsBias(double bias) {
    add_param("W", Tensor::from_vector<double>({1, 2}));
    add_param("b", Tensor::full({1}, bias, DType::Float64));
  }
  void serialize(Serializer& s) override { s.tensor("W", param("W").data()); }
};
}  // namespace

TEST_CASE("debug mode: multi_node_snapshot's autoload compares the parameters of each replica set after the load") {
  auto comm = world();
  const int rank = comm->rank(), n = comm->size();
  std::filesystem::create_directories(out_dir());
  ForgetsBias model(rank);
  if (rank == 0) {  // the master's snapshot, found by autoload
    Serializer w = Serializer::writer();
    model.serialize(w);
    save_npz(out_dir() + "/model_iter_5.0", w.entries());
  }
  auto trainer = scripted_trainer(1, 1, [](int64_t) {});
  auto autoloading = [&](const std::vector<std::vector<int>>& replica_sets) {
    auto snapshot = training::extensions::snapshot_object(model, "model_iter_{.updater.iteration}");
    snapshot->set_autoload(true);
    return mne::multi_node_snapshot(comm, snapshot, replica_sets);
  };
  comm->set_debug(true);
  // One set of every rank: rank 0 loads and sends; the biases stay each rank's own.
  if (n == 1) {
    CHECK_NOTHROW(autoloading({})->initialize(*trainer));
  } else {
    CHECK_THROWS_WITH(autoloading({})->initialize(*trainer),
                      Catch::StartsWith("multi_node_snapshot: autoload in '" + out_dir() + "' (debug mode)") &&
                          Catch::Contains("parameter /b: float64 (1,)") && Catch::Contains(" on rank 0;") &&
                          Catch::Contains(" on rank 1") && !Catch::Contains("parameter /W"));
  }
  // Each rank a set of its own: the ranks hold different states by design, compared with none.
  std::vector<std::vector<int>> singles;
  for (int r = 0; r < n; ++r) singles.push_back({r});
  CHECK_NOTHROW(autoloading(singles)->initialize(*trainer));
  // Without debug mode nothing is compared.
  comm->set_debug(false);
  CHECK_NOTHROW(autoloading({})->initialize(*trainer));
  comm->allgather_bytes("");  // rank 0's file stays until every rank is done with this case
  if (rank == 0) std::filesystem::remove(out_dir() + "/model_iter_5.0");
}
