// Chainer's general triggers (Trigger, ManualScheduleTrigger, Max/MinValueTrigger,
// EarlyStoppingTrigger), the LR schedules (ExponentialShift, LinearShift), observe_lr, the
// optimizers' hyperparameters by name, and snapshot filename formats. The iterations at which
// each fires are computed by hand below each case, and checked again across a resume.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "nn/links/linear.h"
#include "nn/optimizers/adam.h"
#include "nn/optimizers/ada_delta.h"
#include "nn/optimizers/momentum_sgd.h"
#include "nn/optimizers/rmsprop.h"
#include "training/training.h"

#include "counting_trainer.h"

using namespace chainer;
namespace E = chainer::training::extensions;
namespace fs = std::filesystem;
using training::IntervalTrigger;
using training::Trainer;
using training::Trigger;
using training::Unit;

using namespace counting_trainer;

TEST_CASE("Trigger: holds an IntervalTrigger, {period, unit} or any callable, state and all") {
  Trigger braces = {2, Unit::Epoch};
  REQUIRE(braces.target<IntervalTrigger>() != nullptr);
  CHECK(braces.target<IntervalTrigger>()->period() == 2);
  CHECK(braces.training_length()->length == 2);
  CHECK(braces.training_length()->unit == Unit::Epoch);
  CHECK(braces.training_length()->str() == "2 epochs");
  CHECK_FALSE(braces.finished());

  int calls = 0;
  Trigger every_third = [n = 0](const Trainer&) mutable { return ++n % 3 == 0; };
  CHECK(every_third.target<IntervalTrigger>() == nullptr);
  CHECK_FALSE(every_third.training_length());  // no training_length(): Chainer's get_training_length is missing
  Serializer w = Serializer::writer();
  every_third.serialize(w);  // no serialize(): nothing saved
  CHECK(w.entries().empty());

  TempDir dir("trigger");
  Run run(IntervalTrigger(9, Unit::Iteration), dir.path);
  run.record(every_third);
  Trigger copy = every_third;  // a copy starts from the state copied, as an IntervalTrigger's does
  run.trainer->extend([&](Trainer&) { ++calls; }, "calls", copy);
  run.trainer->run();
  CHECK(run.fired == std::vector<int64_t>{3, 6, 9});
  CHECK(calls == 3);
  // A stateless lambda as the stop trigger, as Chainer's callable stop triggers.
  Run stop([](const Trainer& t) { return t.updater().iteration() >= 4; }, dir.path);
  stop.trainer->run();
  CHECK(stop.updater->iteration() == 4);
}

TEST_CASE("Trainer::extend takes a trigger as Chainer's (period, unit): {2, Unit::Iteration}") {
  TempDir dir("trigger_braces");
  Run run(IntervalTrigger(6, Unit::Iteration), dir.path);
  std::vector<int64_t> every_two, every_three, every_time;
  run.trainer->extend([&](Trainer& t) { every_two.push_back(t.updater().iteration()); }, "two", {2, Unit::Iteration});
  run.trainer->extend(training::make_extension([&](Trainer& t) { every_three.push_back(t.updater().iteration()); }), "three",
                      {3, Unit::Iteration});
  run.trainer->extend([&](Trainer& t) { every_time.push_back(t.updater().iteration()); }, "default", std::nullopt);
  run.trainer->run();
  CHECK(every_two == std::vector<int64_t>{2, 4, 6});
  CHECK(every_three == std::vector<int64_t>{3, 6});
  CHECK(every_time == std::vector<int64_t>{1, 2, 3, 4, 5, 6});  // unset: the extension's default, every iteration
}

TEST_CASE("ManualScheduleTrigger: fires at the iteration that reaches each point") {
  using training::ManualScheduleTrigger;
  // Iterations: fires at 3, 5 and 8; 0 is never crossed (previous < point), a repeated point fires once.
  auto iterations = [] { return ManualScheduleTrigger({0, 3, 5, 5, 8}, Unit::Iteration); };
  CHECK(fires(iterations, 10, 1, 10, {}, 4) == std::vector<int64_t>{3, 5, 8});
  CHECK(fires(iterations, 10, 1, 10, {}, 5) == std::vector<int64_t>{3, 5, 8});  // resumed at a point
  // Epochs, 3 examples of 10 per iteration: epoch_detail 0.3, 0.6, 0.9, 1.2, 1.5, 1.8, 2.1, 2.4, ...
  // 0.5 is reached at iteration 2, 1 at 4, 2.25 at 8; 1.5 exactly at 5 (p <= now).
  auto epochs = [] { return ManualScheduleTrigger({0.5, 1, 1.5, 2.25}, Unit::Epoch); };
  CHECK(fires(epochs, 12, 3, 10, {}, 3) == std::vector<int64_t>{2, 4, 5, 8});
  // Epochs that end exactly (batch 5 of 10): epoch 1 at iteration 2, epoch 2 at 4.
  CHECK(fires([] { return ManualScheduleTrigger(2, Unit::Epoch); }, 6, 5, 10) == std::vector<int64_t>{4});

  ManualScheduleTrigger t({2, 4}, Unit::Iteration);
  TempDir dir("manual");
  Run run(IntervalTrigger(6, Unit::Iteration), dir.path);
  run.trainer->extend([](Trainer&) {}, "x", t);
  run.trainer->run();
  CHECK_FALSE(t.finished());  // the trainer runs a copy
  Serializer w = Serializer::writer();
  Trigger held = t;
  held.serialize(w);
  CHECK(w.entries().count("finished"));
  CHECK(w.entries().count("previous_iteration"));
  CHECK(w.entries().count("previous_epoch_detail"));

  REQUIRE_THROWS_WITH(ManualScheduleTrigger(std::vector<double>{}, Unit::Epoch), Catch::Contains("points is empty"));
}

TEST_CASE("ManualScheduleTrigger: finished after its last point; a resumed trainer then skips the extension's initialize") {
  using training::ManualScheduleTrigger;
  TempDir dir("finished");
  int initialized = 0;
  auto extension = [&] {
    return training::make_extension([](Trainer&) {}, {.initializer = [&](Trainer&) { ++initialized; }});
  };
  Run first(IntervalTrigger(4, Unit::Iteration), dir.path);
  first.trainer->extend(extension(), "shift", ManualScheduleTrigger({1, 3}, Unit::Iteration));
  first.snapshot_at(4);
  first.trainer->run();
  CHECK(initialized == 1);
  Run second(IntervalTrigger(6, Unit::Iteration), dir.path);
  second.trainer->extend(extension(), "shift", ManualScheduleTrigger({1, 3}, Unit::Iteration));
  training::load_snapshot((dir.path / "snap").string(), *second.trainer);
  second.trainer->run();
  CHECK(initialized == 1);  // finished (3 fired before the snapshot): not initialized again, as Chainer's
}

TEST_CASE("MaxValueTrigger and MinValueTrigger fire when the mean since the last check is the best so far") {
  using training::MaxValueTrigger;
  using training::MinValueTrigger;
  // Checks every 2 iterations; the means of "v" over (1,2), (3,4), (5,6), (7,8) are 2, 4, 1, 7.
  const std::vector<double> v = {1, 3, 4, 4, 1, 1, 6, 8};
  // The first check fires; then a strictly larger (smaller) mean.
  auto max = [] { return MaxValueTrigger("v", {2, Unit::Iteration}); };
  auto min = [] { return MinValueTrigger("v", {2, Unit::Iteration}); };
  CHECK(fires(max, 8, 1, 10, v, 5) == std::vector<int64_t>{2, 4, 8});  // resumed mid-check: the sum is kept
  CHECK(fires(min, 8, 1, 10, v, 5) == std::vector<int64_t>{2, 6});
  CHECK(fires(min, 8, 1, 10, v, 4) == std::vector<int64_t>{2, 6});
  // Equal is not better: means 4, 4 fire once.
  CHECK(fires(max, 4, 1, 10, {4, 4, 5, 3}) == std::vector<int64_t>{2});
  // Default: every epoch (5 iterations of 2 of 10): means 2.4 and 4.
  CHECK(fires([] { return MaxValueTrigger("v"); }, 10, 2, 10, {1, 3, 4, 4, 0, 1, 6, 8, 4, 1}) ==
        std::vector<int64_t>{5, 10});

  TempDir dir("best");
  Run run(IntervalTrigger(4, Unit::Iteration), dir.path, 1, 10, v);
  run.record(MaxValueTrigger("validation/main/accuracy", {2, Unit::Iteration}));
  REQUIRE_THROWS_WITH(run.trainer->run(), Catch::Contains("MaxValueTrigger") &&
                                              Catch::Contains("'validation/main/accuracy' was not reported") &&
                                              Catch::Contains("iteration 2"));
}

TEST_CASE("EarlyStoppingTrigger stops when the monitored mean has not improved for patience checks") {
  using training::EarlyStoppingTrigger;
  TempDir dir("early");
  // As a stop trigger it runs before each update and sees the previous update's report. Checks
  // every 2 iterations; the means of main/loss over (1,2), (3,4), (5,6), (7,8) are 5, 3, 4, 3:
  // best 5, best 3, count 1, count 2 = patience: it stops before the 9th update.
  const std::vector<double> loss = {5, 5, 3, 3, 4, 4, 3, 3, 1, 1, 1, 1};
  auto trigger = [] { return EarlyStoppingTrigger({2, Unit::Iteration}, "main/loss", 2, "auto", false, {100, Unit::Iteration}); };
  {
    Run run(trigger(), dir.path / "a", 1, 10, loss);
    run.trainer->run();
    CHECK(run.updater->iteration() == 8);
    const auto* es = run.trainer->stop_trigger().target<EarlyStoppingTrigger>();
    REQUIRE(es);
    CHECK(es->count() == 2);
    CHECK(es->best() == 3);
    CHECK_FALSE(es->maximizes());  // auto: "loss" has no "accuracy"
  }
  {
    // Resumed from iteration 5. The first stop call after a resume sees an empty observation
    // (it is not saved, as in Chainer), so iteration 5's loss is not summed; it equals
    // iteration 6's, so the mean and the stop are the same.
    Run first(trigger(), dir.path / "b", 1, 10, loss);
    first.snapshot_at(5);
    first.trainer->extend([](Trainer& t) {
      if (t.updater().iteration() == 5) throw Error("stop here");
    }, "crash", Trigger{1, Unit::Iteration}, -200);
    REQUIRE_THROWS_WITH(first.trainer->run(), "stop here");
    Run second(trigger(), dir.path / "b", 1, 10, loss);
    second.snapshot_at(5);
    training::load_snapshot((dir.path / "b" / "snap").string(), *second.trainer);
    CHECK(second.trainer->stop_trigger().target<EarlyStoppingTrigger>()->best() == 3);
    second.trainer->run();
    CHECK(second.updater->iteration() == 8);
  }
  {
    // max_trigger ends it first, and is its training length.
    Run run(EarlyStoppingTrigger({2, Unit::Iteration}, "main/loss", 100, "min", false, {7, Unit::Iteration}),
            dir.path / "c", 1, 10, loss);
    CHECK(run.trainer->stop_trigger().training_length()->length == 7);
    CHECK(run.trainer->stop_trigger().training_length()->unit == Unit::Iteration);
    run.trainer->run();
    CHECK(run.updater->iteration() == 7);
  }
  {
    // Mode "max" on the same values: 5 is never beaten (3, 4, 3): stops at the second check after.
    Run run(EarlyStoppingTrigger({2, Unit::Iteration}, "main/loss", 2, "max", false, {100, Unit::Iteration}),
            dir.path / "d", 1, 10, loss);
    run.trainer->run();
    CHECK(run.updater->iteration() == 6);
  }
  CHECK(EarlyStoppingTrigger({1, Unit::Epoch}, "validation/main/accuracy").maximizes());
  CHECK(EarlyStoppingTrigger().training_length()->length == 100);
  CHECK(EarlyStoppingTrigger().patience() == 3);
  REQUIRE_THROWS_WITH(EarlyStoppingTrigger({1, Unit::Epoch}, "main/loss", 3, "best"),
                      "EarlyStoppingTrigger: mode 'best' is not 'max', 'min' or 'auto'");
}

TEST_CASE("ProgressBar takes the training length from the stop trigger, or needs one") {
  TempDir dir("progress");
  std::ostringstream out;
  Run with_length(training::EarlyStoppingTrigger(), dir.path);
  with_length.trainer->extend(std::make_shared<E::ProgressBar>(std::nullopt, 1, 10, out));
  CHECK_NOTHROW(with_length.trainer->run());  // stops at 100 epochs of 10 iterations
  CHECK(with_length.updater->iteration() == 1000);
  Run without([](const Trainer& t) { return t.updater().iteration() >= 2; }, dir.path);
  without.trainer->extend(std::make_shared<E::ProgressBar>(std::nullopt, 1, 10, out));
  REQUIRE_THROWS_WITH(without.trainer->run(), Catch::Contains("ProgressBar: the stop trigger has no training length"));
  Run given([](const Trainer& t) { return t.updater().iteration() >= 2; }, dir.path);
  given.trainer->extend(std::make_shared<E::ProgressBar>(training::TrainingLength{2, Unit::Iteration}, 1, 10, out));
  CHECK_NOTHROW(given.trainer->run());
}

TEST_CASE("Optimizer: hyperparameters by name") {
  optimizers::MomentumSGD sgd(0.1, 0.9);
  CHECK(sgd.hyperparam_names() == std::vector<std::string>{"lr", "momentum"});
  CHECK(sgd.hyperparam("lr") == 0.1);
  sgd.set_hyperparam("lr", 0.05);
  CHECK(sgd.lr == 0.05);
  REQUIRE_THROWS_WITH(sgd.hyperparam("alpha"),
                      "Optimizer.hyperparam: no hyperparameter 'alpha'; this optimizer has lr, momentum");
  REQUIRE_THROWS_WITH(sgd.set_hyperparam("lrate", 1),
                      "Optimizer.set_hyperparam: no hyperparameter 'lrate'; this optimizer has lr, momentum");

  optimizers::Adam adam(0.002);
  CHECK(adam.hyperparam_names() ==
        std::vector<std::string>{"alpha", "beta1", "beta2", "eps", "eta", "weight_decay_rate", "lr"});
  adam.set_hyperparam("alpha", 0.004);
  CHECK(adam.alpha == 0.004);
  CHECK(adam.hyperparam("lr") == Approx(adam.lr()));
  REQUIRE_THROWS_WITH(adam.set_hyperparam("lr", 0.1),
                      Catch::Contains("'lr' is derived") && Catch::Contains("set 'alpha' instead"));
  CHECK(optimizers::AdaDelta().hyperparam_names() == std::vector<std::string>{"rho", "eps"});
  CHECK(optimizers::RMSprop().hyperparam_names() == std::vector<std::string>{"lr", "alpha", "eps"});
}

TEST_CASE("ExponentialShift multiplies the hyperparameter by rate per call, clamped at the target") {
  using E::ExponentialShift;
  TempDir dir("exp");
  // Records lr after each iteration's shift (a lower priority runs later), and after initialize.
  auto run = [&](std::shared_ptr<ExponentialShift> shift, int64_t stop, const fs::path& out, int64_t snapshot_at = 0,
                 const std::string& resume = "") {
    Run r(IntervalTrigger(double(stop), Unit::Iteration), out);
    std::vector<double> lrs;
    r.trainer->extend(shift);
    r.trainer->extend(training::make_extension(
        [&](Trainer& t) { lrs.push_back(t.updater().get_optimizer("main").hyperparam("lr")); },
        {.priority = 0, .initializer = [&](Trainer& t) { lrs.push_back(t.updater().get_optimizer("main").hyperparam("lr")); }}));
    if (snapshot_at) r.snapshot_at(snapshot_at);
    if (!resume.empty()) training::load_snapshot(resume, *r.trainer);
    r.trainer->run();
    return lrs;
  };
  // init unset: lr's 0.1 at the start; 0.05, 0.025, then 0.0125 clamped to 0.02.
  const std::vector<double> decay = {0.1, 0.05, 0.025, 0.02, 0.02};
  CHECK(run(std::make_shared<ExponentialShift>("lr", 0.5, std::nullopt, 0.02), 4, dir.path / "a") == decay);
  // Resumed after iteration 2: initialize restores the last value, and t continues.
  CHECK(run(std::make_shared<ExponentialShift>("lr", 0.5, std::nullopt, 0.02), 2, dir.path / "b", 2) ==
        std::vector<double>{0.1, 0.05, 0.025});
  CHECK(run(std::make_shared<ExponentialShift>("lr", 0.5, std::nullopt, 0.02), 4, dir.path / "c", 0,
            (dir.path / "b" / "snap").string()) == std::vector<double>{0.025, 0.02, 0.02});
  // init given; rate > 1 clamps from below: 1, 2, 4, 5, 5.
  CHECK(run(std::make_shared<ExponentialShift>("lr", 2, 1.0, 5.0), 4, dir.path / "d") ==
        std::vector<double>{1, 2, 4, 5, 5});
  // No target: 0.2 * 0.1^t.
  const auto no_target = run(std::make_shared<ExponentialShift>("lr", 0.1, 0.2), 2, dir.path / "e");
  REQUIRE(no_target.size() == 3);
  CHECK(no_target[0] == 0.2);
  CHECK(no_target[1] == Approx(0.02));
  CHECK(no_target[2] == Approx(0.002));

  auto adam = std::make_shared<optimizers::Adam>();
  adam->setup(std::make_shared<links::Linear>(2, 2));
  Run with_adam(IntervalTrigger(2, Unit::Iteration), dir.path / "f");
  with_adam.trainer->extend(std::make_shared<ExponentialShift>("lr", 0.5, std::nullopt, std::nullopt, adam));
  REQUIRE_THROWS_WITH(with_adam.trainer->run(), Catch::Contains("'lr' is derived") && Catch::Contains("'alpha'"));
  auto shift_alpha = std::make_shared<ExponentialShift>("alpha", 0.5, std::nullopt, std::nullopt, adam);
  Run alpha(IntervalTrigger(2, Unit::Iteration), dir.path / "g");
  alpha.trainer->extend(shift_alpha);
  alpha.trainer->run();
  CHECK(adam->alpha == Approx(0.001 * 0.25));  // the given optimizer, not the updater's
  CHECK(alpha.updater->optimizer->hyperparam("lr") == 0.1);
  REQUIRE_THROWS_WITH(ExponentialShift("lr", -0.5), "ExponentialShift: rate must be >= 0, got -0.5");
}

TEST_CASE("LinearShift moves the hyperparameter linearly between the calls of time_range") {
  TempDir dir("linear");
  auto run = [&](int64_t stop, const fs::path& out, int64_t snapshot_at = 0, const std::string& resume = "") {
    Run r(IntervalTrigger(double(stop), Unit::Iteration), out);
    std::vector<double> lrs;
    r.trainer->extend(std::make_shared<E::LinearShift>("lr", std::pair{0.1, 0.5}, std::pair<int64_t, int64_t>{2, 6}));
    r.trainer->extend([&](Trainer& t) { lrs.push_back(t.updater().get_optimizer("main").hyperparam("lr")); }, "", {},
                      0);
    if (snapshot_at) r.snapshot_at(snapshot_at);
    if (!resume.empty()) training::load_snapshot(resume, *r.trainer);
    r.trainer->run();
    return lrs;
  };
  // t = 1, 2: 0.1; t = 3, 4, 5: 0.2, 0.3, 0.4; t >= 6: 0.5.
  const std::vector<double> all = run(8, dir.path / "a");
  REQUIRE(all.size() == 8);
  const std::vector<double> expected = {0.1, 0.1, 0.2, 0.3, 0.4, 0.5, 0.5, 0.5};
  for (size_t i = 0; i < all.size(); ++i) CHECK(all[i] == Approx(expected[i]));
  run(4, dir.path / "b", 4);
  const std::vector<double> rest = run(8, dir.path / "c", 0, (dir.path / "b" / "snap").string());
  REQUIRE(rest.size() == 4);
  for (size_t i = 0; i < rest.size(); ++i) CHECK(rest[i] == Approx(expected[i + 4]));
  REQUIRE_THROWS_WITH(E::LinearShift("lr", {1, 0}, {5, 2}), "LinearShift: time_range must not decrease, got (5, 2)");
}

TEST_CASE("observe_lr reports the learning rate before the readers, so LogReport logs it") {
  TempDir dir("observe");
  Run run(IntervalTrigger(3, Unit::Iteration), dir.path);
  auto log = std::make_shared<E::LogReport>(std::vector<std::string>{}, Trigger{1, Unit::Iteration}, "");
  run.trainer->extend(log);
  run.trainer->extend(std::make_shared<E::ExponentialShift>("lr", 0.5));
  run.trainer->extend(E::observe_lr(), "", Trigger{1, Unit::Iteration});
  run.trainer->extend(E::observe_value("twice_iteration", [](Trainer& t) { return 2.0 * double(t.updater().iteration()); }),
                      "", Trigger{1, Unit::Iteration});
  run.trainer->run();
  // PRIORITY_WRITER: observed before the shift of the same iteration (added earlier, same priority).
  REQUIRE(log->log().size() == 3);
  CHECK(log->log()[0].at("lr").value() == 0.1);
  CHECK(log->log()[1].at("lr").value() == 0.05);
  CHECK(log->log()[2].at("lr").value() == 0.025);
  CHECK(log->log()[2].at("twice_iteration").value() == 6);
  auto ext = E::observe_lr();
  CHECK(ext->priority() == training::PRIORITY_WRITER);
  CHECK(ext->default_name() == "_observe_value");
  CHECK(ext->default_trigger().target<IntervalTrigger>()->unit() == Unit::Epoch);
  CHECK(ext->default_trigger().target<IntervalTrigger>()->period() == 1);
}

TEST_CASE("snapshot filenames are formatted as Python's str.format(trainer)") {
  TempDir dir("names");
  Run run(IntervalTrigger(7, Unit::Iteration), dir.path, 3, 10);
  run.trainer->run();  // iteration 7, epoch 2, epoch_detail 2.1
  auto name = [&](const std::string& filename) {
    return fs::path(E::snapshot(filename)->path_for(*run.trainer)).filename().string();
  };
  CHECK(name("snapshot_iter_{.updater.iteration}") == "snapshot_iter_7");
  CHECK(name("snap_{.updater.epoch}_{0.updater.iteration}") == "snap_2_7");
  CHECK(name("snap_{.updater.iteration:08d}") == "snap_00000007");
  CHECK(name("snap_{.updater.iteration:>4}|{.updater.iteration:<4}|{.updater.iteration:^5}") == "snap_   7|7   |  7  ");
  CHECK(name("snap_{.updater.iteration:*^5}_{.updater.iteration:#x}_{.updater.iteration:b}") == "snap_**7**_0x7_111");
  CHECK(name("snap_{.updater.iteration:+d}_{.updater.iteration:.1f}") == "snap_+7_7.0");
  CHECK(name("snap_{.updater.epoch_detail:.2f}") == "snap_2.10");
  CHECK(name("snap_{.updater.epoch_detail}") == "snap_2.1");  // Python's str(2.1)
  CHECK(name("snap_{.updater.epoch_detail:07.3f}") == "snap_002.100");
  CHECK(name("snap_{.updater.epoch_detail:.0%}") == "snap_210%");
  CHECK(name("{{literal}}_{.updater.epoch}") == "{literal}_2");
  CHECK(name("no_fields") == "no_fields");
  CHECK(E::snapshot_object(*run.updater->optimizer->target_ptr(), "model_{.updater.epoch:03d}")->path_for(*run.trainer) ==
        (dir.path / "model_002").string());

  REQUIRE_THROWS_WITH(E::snapshot("snap_{.updater.iter}"),
                      "snapshot: the filename 'snap_{.updater.iter}' names the field '{.updater.iter}', which is not one "
                      "of {.updater.iteration}, {.updater.epoch}, {.updater.epoch_detail}, {.elapsed_time}");
  REQUIRE_THROWS_WITH(E::snapshot_object(*run.updater->optimizer->target_ptr(), "m_{.model}"),
                      Catch::StartsWith("snapshot_object: the filename 'm_{.model}' names the field '{.model}'"));
  REQUIRE_THROWS_WITH(E::snapshot("snap_{.updater.epoch_detail:d}"),
                      Catch::Contains("the format code 'd' is not one for a float"));
  REQUIRE_THROWS_WITH(E::snapshot("snap_{.updater.iteration:.2d}"), Catch::Contains("precision is not allowed"));
  REQUIRE_THROWS_WITH(E::snapshot("snap_{.updater.iteration:5q2}"), Catch::Contains("format spec '5q2' is not valid"));
  REQUIRE_THROWS_WITH(E::snapshot("snap_{.updater.iteration"), Catch::Contains("'{' without its '}'"));
  REQUIRE_THROWS_WITH(E::snapshot("snap_}"), Catch::Contains("a single '}'"));
}
