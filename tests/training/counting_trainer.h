// A trainer over an updater without data, for the tests of triggers and schedules: the
// iterations at which a trigger fires, straight and across a resume from a snapshot.
#pragma once
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nn/links/linear.h"
#include "nn/optimizers/momentum_sgd.h"
#include "training/training.h"

namespace counting_trainer {

using namespace chainer;
namespace E = chainer::training::extensions;
namespace fs = std::filesystem;
using training::IntervalTrigger;
using training::Trainer;
using training::Trigger;
using training::Unit;

// An updater without data: BATCH examples of SIZE per iteration (epoch_detail = iteration *
// batch / size), reporting VALUES[iteration - 1] as "v" and "main/loss" at each update. Its
// optimizer is a MomentumSGD (lr 0.1) over a small link.
struct CountingUpdater : training::Updater {
  int64_t iteration_ = 0, batch, size;
  std::vector<double> values;
  std::shared_ptr<Optimizer> optimizer = std::make_shared<optimizers::MomentumSGD>(0.1);
  CountingUpdater(int64_t b, int64_t n, std::vector<double> v = {}) : batch(b), size(n), values(std::move(v)) {
    optimizer->setup(std::make_shared<links::Linear>(2, 2));
  }
  void update() override {
    ++iteration_;
    if (size_t(iteration_) <= values.size()) {
      const double v = values[size_t(iteration_ - 1)];
      report(Observation{{"v", v}, {"main/loss", v}});
    }
  }
  int64_t iteration() const override { return iteration_; }
  int64_t epoch() const override { return iteration_ * batch / size; }
  double epoch_detail() const override { return double(iteration_ * batch) / double(size); }
  bool is_new_epoch() const override { return iteration_ > 0 && (iteration_ * batch) % size < batch; }
  Optimizer& get_optimizer(const std::string& name) override {
    if (name != "main") throw Error("no optimizer " + name);
    return *optimizer;
  }
  std::map<std::string, Optimizer*> get_all_optimizers() override { return {{"main", optimizer.get()}}; }
  iterators::Iterator& get_iterator(const std::string&) override { throw Error("no iterators"); }
  void serialize(Serializer& s) override { s.value("iteration", iteration_); }
};

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) {
    path = fs::temp_directory_path() / ("chainer_test_triggers_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// A trainer over a CountingUpdater that stops at STOP.
struct Run {
  std::shared_ptr<CountingUpdater> updater;
  std::unique_ptr<Trainer> trainer;
  std::vector<int64_t> fired;  // iterations at which the recorded trigger fired
  Run(Trigger stop, const fs::path& out, int64_t batch = 1, int64_t size = 10, std::vector<double> values = {}) {
    updater = std::make_shared<CountingUpdater>(batch, size, std::move(values));
    trainer = std::make_unique<Trainer>(updater, std::move(stop), out.string());
  }
  // Records the iterations at which TRIGGER fires.
  void record(Trigger trigger) {
    trainer->extend([this](Trainer& t) { fired.push_back(t.updater().iteration()); }, "record", std::move(trigger));
  }
  // Snapshots the trainer to OUT/snap at iteration AT.
  void snapshot_at(int64_t at) { trainer->extend(E::snapshot("snap"), "", IntervalTrigger(double(at), Unit::Iteration)); }
};

// The iterations at which TRIGGER fires in a run of STOP iterations, straight and resumed from a
// snapshot taken at iteration SPLIT: both must agree.
inline std::vector<int64_t> fires(const std::function<Trigger()>& trigger, int64_t stop, int64_t batch, int64_t size,
                           std::vector<double> values = {}, int64_t split = 0) {
  TempDir dir("fires");
  Run straight(IntervalTrigger(double(stop), Unit::Iteration), dir.path / "a", batch, size, values);
  straight.record(trigger());
  straight.trainer->run();
  if (split > 0) {
    Run first(IntervalTrigger(double(split), Unit::Iteration), dir.path / "b", batch, size, values);
    first.record(trigger());
    first.snapshot_at(split);
    first.trainer->run();
    Run second(IntervalTrigger(double(stop), Unit::Iteration), dir.path / "b", batch, size, values);
    second.record(trigger());
    second.snapshot_at(split);
    training::load_snapshot((dir.path / "b" / "snap").string(), *second.trainer);
    second.trainer->run();
    std::vector<int64_t> resumed = first.fired;
    resumed.insert(resumed.end(), second.fired.begin(), second.fired.end());
    CHECK(resumed == straight.fired);
  }
  return straight.fired;
}

}  // namespace counting_trainer
