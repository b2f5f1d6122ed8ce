// The learning-rate schedules beside ExponentialShift and LinearShift (StepShift, MultistepShift,
// PolynomialShift, WarmupShift, InverseShift, CosineShift), FailOnNonNumber, ParameterStatistics,
// and the triggers OnceTrigger and TimeTrigger. Each schedule's values are its closed form at the calls listed,
// worked out below each case: the value after initialize() (t = 0), then after each iteration.
// Every schedule is also run to a snapshot and resumed: the resumed run starts at the value the
// uninterrupted run had there and goes on with the same values.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "nn/link.h"
#include "training/training.h"

#include "counting_trainer.h"

using namespace counting_trainer;
using ExtensionMaker = std::function<std::shared_ptr<training::Extension>()>;

namespace {

double lr_of(Trainer& t) { return t.updater().get_optimizer("main").hyperparam("lr"); }

// The lr after initialize() and after each of STOP iterations, the schedule made by MAKE
// running first in each iteration (a reader of priority 0 records after it). SNAPSHOT_AT writes
// OUT/snap there; RESUME loads a snapshot before the run.
std::vector<double> lrs(const ExtensionMaker& make, int64_t stop, const fs::path& out, int64_t snapshot_at = 0,
                        const std::string& resume = "") {
  Run r(IntervalTrigger(double(stop), Unit::Iteration), out);
  std::vector<double> values;
  r.trainer->extend(make(), "schedule");
  auto record = [&](Trainer& t) { values.push_back(lr_of(t)); };
  r.trainer->extend(training::make_extension(record, {.priority = 0, .initializer = record}));
  if (snapshot_at) r.snapshot_at(snapshot_at);
  if (!resume.empty()) training::load_snapshot(resume, *r.trainer);
  r.trainer->run();
  return values;
}

void check_values(const std::vector<double>& got, const std::vector<double>& expected) {
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("t = " << i);
    CHECK(got[i] == Approx(expected[i]).epsilon(1e-12).margin(1e-15));
  }
}

// The schedule of MAKE over STOP iterations, checked against EXPECTED (t = 0 .. STOP); then
// stopped at SPLIT and resumed from its snapshot: the resumed run starts at the value after
// iteration SPLIT and goes on as the uninterrupted one.
void check_schedule(const ExtensionMaker& make, int64_t stop, int64_t split, const std::vector<double>& expected) {
  TempDir dir("schedule");
  const std::vector<double> straight = lrs(make, stop, dir.path / "a");
  check_values(straight, expected);
  lrs(make, split, dir.path / "b", split);
  const std::vector<double> resumed = lrs(make, stop, dir.path / "c", 0, (dir.path / "b" / "snap").string());
  INFO("resumed after iteration " << split);
  check_values(resumed, std::vector<double>(straight.begin() + split, straight.end()));
}

}  // namespace

TEST_CASE("StepShift: init * gamma^floor(t / step), clamped at the target") {
  using E::StepShift;
  // step 3, gamma 0.5 from 1: halved at t = 3, 6, 9; 0.125 at t = 9 is clamped to 0.2.
  check_schedule([] { return std::make_shared<StepShift>("lr", 0.5, 3, 1.0, 0.2); }, 10, 4,
                 {1, 1, 1, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.2, 0.2});
  // gamma > 1 clamps from above; init unset: lr's 0.1 at the start.
  check_schedule([] { return std::make_shared<StepShift>("lr", 2, 2, std::nullopt, 0.3); }, 5, 3,
                 {0.1, 0.1, 0.2, 0.2, 0.3, 0.3});
  REQUIRE_THROWS_WITH(StepShift("lr", 0.5, 0), "StepShift: step must be a positive number of calls, got 0");
}

TEST_CASE("MultistepShift: gamma^k from the k-th listed call, one step per call at most, init set at the start") {
  using E::MultistepShift;
  // Steps at calls 2 and 5; init 1 replaces lr's 0.1 at the start.
  check_schedule([] { return std::make_shared<MultistepShift>("lr", 0.1, std::vector<int64_t>{2, 5}, 1.0); }, 6, 3,
                 {1, 1, 0.1, 0.1, 0.1, 0.01, 0.01});
  // Resumed past a step: the restored step applies at once (Chainer's would train at init until
  // the next call).
  check_schedule([] { return std::make_shared<MultistepShift>("lr", 0.1, std::vector<int64_t>{2, 5}, 1.0); }, 6, 5,
                 {1, 1, 0.1, 0.1, 0.1, 0.01, 0.01});
  // As Chainer's, the count moves one step per call: three steps listed at call 1 take three calls.
  check_schedule([] { return std::make_shared<MultistepShift>("lr", 0.5, std::vector<int64_t>{1, 1, 1}, 1.0); }, 4, 2,
                 {1, 0.5, 0.25, 0.125, 0.125});
  // init unset: read from the optimizer, and left as it is at the start.
  check_schedule([] { return std::make_shared<MultistepShift>("lr", 0.5, std::vector<int64_t>{2}, std::nullopt); }, 3,
                 2, {0.1, 0.1, 0.05, 0.05});
}

TEST_CASE("PolynomialShift: init * max(1 - t / max_count, 0)^rate, clamped at the target") {
  using E::PolynomialShift;
  // rate 2 over 4 calls: 0.75^2, 0.5^2, 0.25^2, then 0.
  check_schedule([] { return std::make_shared<PolynomialShift>("lr", 2, 4, 1.0); }, 5, 2,
                 {1, 0.5625, 0.25, 0.0625, 0, 0});
  // Target 0.1: 0.0625 and the final 0 are clamped (where Chainer's target / 0 would raise).
  check_schedule([] { return std::make_shared<PolynomialShift>("lr", 2, 4, 1.0, 0.1); }, 5, 3,
                 {1, 0.5625, 0.25, 0.1, 0.1, 0.1});
  // init unset: lr's 0.1; rate 1 is linear.
  check_schedule([] { return std::make_shared<PolynomialShift>("lr", 1, 2); }, 3, 1, {0.1, 0.05, 0, 0});
  REQUIRE_THROWS_WITH(PolynomialShift("lr", 1, 0),
                      "PolynomialShift: max_count must be a positive number of calls, got 0");
}

TEST_CASE("WarmupShift: from warmup_start to init over warmup_iter calls, then leaves the value alone") {
  using E::WarmupShift;
  // 0 to 1 over 4 calls: (t * 1 + (4 - t) * 0) / 4; warmup_start replaces lr's 0.1 at the start.
  check_schedule([] { return std::make_shared<WarmupShift>("lr", 0.0, 4, 1.0); }, 6, 2, {0, 0.25, 0.5, 0.75, 1, 1, 1});
  // Resumed after the warm-up: init (Chainer's would train at warmup_start from then on).
  check_schedule([] { return std::make_shared<WarmupShift>("lr", 0.0, 4, 1.0); }, 6, 5, {0, 0.25, 0.5, 0.75, 1, 1, 1});
  // warmup_start unset: lr's 0.1 at the start, not set by initialize.
  check_schedule([] { return std::make_shared<WarmupShift>("lr", std::nullopt, 2, 0.5); }, 3, 1, {0.1, 0.3, 0.5, 0.5});

  // After the warm-up it sets nothing: a value set by someone else stays.
  TempDir dir("warmup");
  Run r(IntervalTrigger(5, Unit::Iteration), dir.path);
  std::vector<double> values;
  r.trainer->extend(std::make_shared<WarmupShift>("lr", 0.0, 2, 1.0));
  r.trainer->extend([](Trainer& t) { t.updater().get_optimizer("main").set_hyperparam("lr", 0.3); }, "set",
                    training::ManualScheduleTrigger(3, Unit::Iteration), 50);
  r.trainer->extend([&](Trainer& t) { values.push_back(lr_of(t)); }, "record", {}, 0);
  r.trainer->run();
  check_values(values, {0.5, 1, 0.3, 0.3, 0.3});
  REQUIRE_THROWS_WITH(WarmupShift("lr", 0.0, 0, 1.0),
                      "WarmupShift: warmup_iter must be a positive number of calls, got 0");
}

TEST_CASE("InverseShift: init * (1 + gamma * t)^(-power), clamped at the target") {
  using E::InverseShift;
  // gamma 0.5, power 2: 1 / 1.5^2, 1 / 2^2, 1 / 2.5^2 = 0.16 clamped to 0.2.
  check_schedule([] { return std::make_shared<InverseShift>("lr", 0.5, 2, 1.0, 0.2); }, 4, 2,
                 {1, 1 / 2.25, 0.25, 0.2, 0.2});
  // A negative power grows, clamped from above: 1 + t up to 2.5.
  check_schedule([] { return std::make_shared<InverseShift>("lr", 1, -1, 1.0, 2.5); }, 3, 1, {1, 2, 2.5, 2.5});
  // init unset: lr's 0.1; no target.
  check_schedule([] { return std::make_shared<InverseShift>("lr", 1, 1); }, 2, 1, {0.1, 0.05, 0.1 / 3});
  REQUIRE_THROWS_WITH(InverseShift("lr", -1, 1), "InverseShift: gamma must be >= 0, got -1");
}

TEST_CASE("CosineShift: PyTorch's CosineAnnealingLR, eta_min + (init - eta_min)(1 + cos(pi t / t_max)) / 2") {
  using E::CosineShift;
  // t_max 4, eta_min 0.1, from 1: eta_min at t = 4, back to init at t = 8 as PyTorch's closed
  // form (values from Python's math.cos).
  const std::vector<double> cosine = {1.0, 0.8681980515339464, 0.55, 0.23180194846605365, 0.1,
                                      0.23180194846605356, 0.5499999999999999, 0.8681980515339464, 1.0};
  check_schedule([] { return std::make_shared<CosineShift>("lr", 4, 0.1, 1.0); }, 8, 3, cosine);
  // eta_min 0 by default; init unset: lr's 0.1.
  check_schedule([] { return std::make_shared<CosineShift>("lr", 2); }, 2, 1, {0.1, 0.05, 0});
  REQUIRE_THROWS_WITH(CosineShift("lr", 0), "CosineShift: t_max must be a positive number of calls, got 0");
}

TEST_CASE("FailOnNonNumber stops training at the update that makes a parameter NaN or infinite, naming it") {
  TempDir dir("nonnumber");
  for (const double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
    Run r(IntervalTrigger(5, Unit::Iteration), dir.path);
    Link& target = r.updater->optimizer->target();
    // Iteration 3 writes BAD into one element of the bias.
    r.trainer->extend(
        [&](Trainer&) {
          Variable b = target.namedparams()[1].second;
          Tensor host = b.data().to(Device::cpu()).contiguous();
          host.data<float>()[1] = float(bad);
          b.data() = host;
        },
        "spoil", training::ManualScheduleTrigger(3, Unit::Iteration), 500);
    r.trainer->extend(std::make_shared<E::FailOnNonNumber>());
    REQUIRE(target.namedparams()[1].first == "/b");  // after "/W"
    REQUIRE(target.namedparams()[1].second.data().dtype() == DType::Float32);
    REQUIRE_THROWS_WITH(r.trainer->run(), "FailOnNonNumber: parameters in optimizer 'main' diverge: /b holds NaN or "
                                          "infinity at iteration 3; training stopped (lower the learning rate, or clip "
                                          "the gradients)");
    CHECK(r.updater->iteration() == 3);
  }
  // Finite parameters: the run goes to its end.
  Run fine(IntervalTrigger(4, Unit::Iteration), dir.path);
  fine.trainer->extend(std::make_shared<E::FailOnNonNumber>());
  fine.trainer->run();
  CHECK(fine.updater->iteration() == 4);
}

TEST_CASE("OnceTrigger fires at the first iteration; after a resume only with call_on_resume") {
  using training::OnceTrigger;
  // Straight and resumed after iteration 2 (fires() checks that the two agree).
  CHECK(fires([] { return OnceTrigger(); }, 5, 1, 10, {}, 2) == std::vector<int64_t>{1});

  TempDir dir("once");
  int initialized = 0;
  auto run = [&](bool call_on_resume, int64_t stop, const fs::path& out, const std::string& resume) {
    Run r(IntervalTrigger(double(stop), Unit::Iteration), out);
    r.trainer->extend(training::make_extension([&](Trainer& t) { r.fired.push_back(t.updater().iteration()); },
                                               {.initializer = [&](Trainer&) { ++initialized; }}),
                      "record", OnceTrigger(call_on_resume));
    r.snapshot_at(2);
    if (!resume.empty()) training::load_snapshot(resume, *r.trainer);
    r.trainer->run();
    return r.fired;
  };
  CHECK(run(false, 2, dir.path / "a", "") == std::vector<int64_t>{1});
  CHECK(initialized == 1);
  // Resumed without call_on_resume: finished, so it neither fires nor initializes its extension.
  CHECK(run(false, 4, dir.path / "b", (dir.path / "a" / "snap").string()).empty());
  CHECK(initialized == 1);
  // With call_on_resume: once more, at the resumed run's first iteration.
  CHECK(run(true, 4, dir.path / "c", (dir.path / "a" / "snap").string()) == std::vector<int64_t>{3});
  CHECK(initialized == 2);

  // A snapshot without the flag (written before the trigger was added) reads as fired, as Chainer guesses.
  OnceTrigger old;
  Serializer empty = Serializer::reader({});
  old.serialize(empty);
  CHECK(old.finished());
  Serializer w = Serializer::writer();
  OnceTrigger().serialize(w);
  CHECK(w.entries().at("_flag_first").item_double() == 1);
}

TEST_CASE("TimeTrigger fires at the first call past each period of the trainer's elapsed time, one period per firing") {
  using training::TimeTrigger;
  TempDir dir("time");
  Run r(IntervalTrigger(1, Unit::Iteration), dir.path);
  // The trainer's elapsed time, set as a snapshot restores it (the trainer is not running).
  auto at = [&](double seconds) -> Trainer& {
    TensorMap entries = training::TrainerState(*r.trainer).entries();
    entries["elapsed_time"] = Tensor::scalar(seconds, DType::Float64);
    training::load_snapshot(entries, *r.trainer, "test");
    return *r.trainer;
  };
  // Period 1: strictly past 1, 2, ...; after a long pause it fires at consecutive calls to catch up.
  const std::vector<double> times = {0.5, 1.0, 1.5, 1.9, 2.5, 5.0, 5.0, 5.0, 5.0, 5.2};
  const std::vector<bool> expected = {false, false, true, false, true, true, true, false, false, true};
  TimeTrigger straight(1.0);
  std::vector<bool> got;
  for (double s : times) got.push_back(straight(at(s)));
  CHECK(got == expected);
  CHECK(straight.next_time() == 6);

  // Saved after the fifth call and restored into a fresh trigger: the same answers after it.
  TimeTrigger first(1.0);
  for (size_t i = 0; i < 5; ++i) first(at(times[i]));
  Serializer w = Serializer::writer();
  first.serialize(w);
  TimeTrigger resumed(1.0);
  Serializer rd = Serializer::reader(w.entries());
  resumed.serialize(rd);
  std::vector<bool> rest;
  for (size_t i = 5; i < times.size(); ++i) rest.push_back(resumed(at(times[i])));
  CHECK(rest == std::vector<bool>(expected.begin() + 5, expected.end()));

  // In a trainer's snapshot, as an extension's trigger: next_time travels with it.
  Run saved(IntervalTrigger(2, Unit::Iteration), dir.path / "s");
  saved.record(TimeTrigger(3600));
  saved.snapshot_at(2);
  saved.trainer->run();
  Run loaded(IntervalTrigger(2, Unit::Iteration), dir.path / "s");
  loaded.record(TimeTrigger(7));
  training::load_snapshot((dir.path / "s" / "snap").string(), *loaded.trainer);
  Serializer after = Serializer::writer();
  loaded.trainer->serialize(after);
  CHECK(after.entries().at("extension_triggers/record/next_time").item_double() == 3600);
  REQUIRE_THROWS_WITH(TimeTrigger(0), "TimeTrigger: period must be a positive number of seconds, got 0");
}

TEST_CASE("ParameterStatistics reports Chainer's statistics of values and gradients, averaged until its trigger") {
  TempDir dir("statistics");
  Run r(IntervalTrigger(4, Unit::Iteration), dir.path);
  auto link = r.updater->optimizer->target_ptr();
  Variable W = link->namedparams()[0].second, b = link->namedparams()[1].second;
  // W holds 1, 2, 3, 0 at iteration 1 and 3, 4, 5, 2 at iteration 2; its gradient 0.5 everywhere;
  // b (zeros) has no gradient.
  W.data() = Tensor::from_vector<float>({1, 2, 3, 0}, {2, 2});
  W.set_grad(Tensor::full({2, 2}, 0.5));
  r.trainer->extend([&](Trainer&) { W.data() = Tensor::from_vector<float>({3, 4, 5, 2}, {2, 2}); }, "change",
                    training::ManualScheduleTrigger(2, Unit::Iteration), 500);
  auto stats = std::make_shared<E::ParameterStatistics>(
      std::vector<std::pair<std::string, std::shared_ptr<Link>>>{{"main", link}},
      E::ParameterStatistics::default_statistics(), true, true, "", Trigger{2, Unit::Iteration});
  r.trainer->extend(stats);
  std::vector<Observation> seen;
  r.trainer->extend([&](Trainer& t) { seen.push_back(t.observation()); }, "record", {}, 0);
  r.trainer->run();
  REQUIRE(seen.size() == 4);
  CHECK(seen[0].empty());  // reported at iterations 2 and 4 only
  CHECK(seen[2].empty());
  const Observation& o = seen[1];
  // 12 keys (5 statistics and 7 percentiles) for W's data, W's grad and b's data.
  CHECK(o.size() == 36);
  CHECK(o.count("main/b/grad/mean") == 0);
  // Means over iterations 1 and 2: W's mean (1.5 + 3.5) / 2; std sqrt(1.25) both times.
  CHECK(o.at("main/W/data/mean").value() == Approx(2.5));
  CHECK(o.at("main/W/data/std").value() == Approx(std::sqrt(1.25)));
  CHECK(o.at("main/W/data/min").value() == Approx(1));
  CHECK(o.at("main/W/data/max").value() == Approx(4));
  CHECK(o.at("main/W/data/zeros").value() == Approx(0.5));
  CHECK(o.at("main/b/data/zeros").value() == 2);
  CHECK(o.at("main/W/grad/std").value() == 0);
  // numpy.percentile of sorted 0, 1, 2, 3 is the rank q / 100 * 3 itself; of 2, 3, 4, 5 two more.
  const double q[] = {0.13, 2.28, 15.87, 50, 84.13, 97.72, 99.87};
  for (int i = 0; i < 7; ++i) {
    INFO("percentile " << q[i]);
    CHECK(o.at("main/W/data/percentile/" + std::to_string(i)).value() == Approx(q[i] / 100 * 3 + 1));
  }
  CHECK(seen[3].at("main/W/data/mean").value() == Approx(3.5));  // iterations 3 and 4 alone

  // One link alone is named "None", as Chainer names a link that is no child; a prefix goes
  // first; only gradients; a statistic of one's own; NaN skipped.
  Run s(IntervalTrigger(1, Unit::Iteration), dir.path / "s");
  auto target = s.updater->optimizer->target_ptr();
  Variable sb = target->namedparams()[1].second;
  sb.set_grad(Tensor::from_vector<float>({1, NAN}, {2}));
  Variable sW = target->namedparams()[0].second;
  sW.set_grad(Tensor::full({2, 2}, 2.0));
  auto grads = std::make_shared<E::ParameterStatistics>(
      target, std::map<std::string, E::ParameterStatistics::Statistic>{}, false, true, "stats",
      Trigger{1, Unit::Iteration}, true);
  grads->register_statistics("sum", [](const std::vector<double>& x) {
    double t = 0;
    for (double v : x) t += v;
    return std::vector<double>{t};
  });
  s.trainer->extend(grads);
  Observation last;
  s.trainer->extend([&](Trainer& t) { last = t.observation(); }, "record", {}, 0);
  s.trainer->run();
  CHECK(last.size() == 2);
  CHECK(last.at("stats/None/W/grad/sum").value() == 8);
  CHECK(std::isnan(last.at("stats/None/b/grad/sum").value()));
}
