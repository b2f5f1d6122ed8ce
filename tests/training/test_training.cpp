#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include "core/memory/caching_allocator.h"
#include "core/util/config.h"
#include "core/io/npz.h"
#include "core/util/random.h"
#include "core/io/serializers.h"
#include "datasets/iterators/serial_iterator.h"
#include "datasets/tuple_dataset.h"
#include "nn/functions.h"
#include "nn/links/classifier.h"
#include "nn/links/linear.h"
#include "nn/optimizers/adam.h"
#include "nn/optimizers/momentum_sgd.h"
#include "training/training.h"

using namespace chainer;
namespace F = chainer::functions;
namespace L = chainer::links;
namespace E = chainer::training::extensions;
namespace fs = std::filesystem;
using training::IntervalTrigger;
using training::Trainer;
using training::Unit;

namespace {

// N examples of FEATURES normal features; the label is the group of features (j % classes)
// with the largest sum, so a small MLP learns it.
std::shared_ptr<const datasets::TupleDataset> make_dataset(int64_t n, uint64_t seed, int64_t features = 20,
                                                           int64_t classes = 3) {
  Generator gen(seed);
  Tensor x = random::normal({n, features}, 0.0, 1.0, DType::Float32, &gen);
  const std::vector<float> xv = x.to_vector<float>();
  std::vector<int32_t> t(size_t(n), 0);
  for (int64_t i = 0; i < n; ++i) {
    std::vector<double> sums(size_t(classes), 0.0);
    for (int64_t j = 0; j < features; ++j) sums[size_t(j % classes)] += xv[size_t(i * features + j)];
    t[size_t(i)] = int32_t(std::max_element(sums.begin(), sums.end()) - sums.begin());
  }
  return std::make_shared<datasets::TupleDataset>(std::vector<Tensor>{x, Tensor::from_vector(t)});
}

// Linear (input size inferred) - ReLU - dropout - Linear: the dropout masks come from the
// default generator, so a resume is exact only if that generator is restored too.
struct Net : Chain {
  std::shared_ptr<L::Linear> l1, l2;
  double ratio;
  Net(int64_t units, double dropout_ratio) : ratio(dropout_ratio) {
    l1 = add_link("l1", std::make_shared<L::Linear>(units));
    l2 = add_link("l2", std::make_shared<L::Linear>(3));
  }
  Variable forward(const Variable& x) override {
    Variable h = F::relu((*l1)(x));
    if (ratio > 0) h = F::dropout(h, ratio);
    return (*l2)(h);
  }
};

// Records, for every forward call, whether config::train() and backprop were on.
struct Probe : Chain {
  std::shared_ptr<Net> net;
  std::vector<std::pair<bool, bool>> calls;  // (train, backprop)
  explicit Probe(std::shared_ptr<Net> n) { net = add_link("net", std::move(n)); }
  Variable forward(const Variable& x) override {
    calls.emplace_back(config::train(), is_backprop_enabled());
    return (*net)(x);
  }
};

// A fresh temporary directory, removed at the end of the test.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) {
    path = fs::temp_directory_path() / ("chainer_test_training_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// The keys of one log entry.
std::set<std::string> keys_of(const Observation& entry) {
  std::set<std::string> keys;
  for (const auto& [k, v] : entry) keys.insert(k);
  return keys;
}

std::string read_text(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Model, Adam, iterators, updater and trainer, built the same way every time (seed 0).
struct Setup {
  std::shared_ptr<Net> net;
  std::shared_ptr<L::Classifier> model;
  std::shared_ptr<optimizers::Adam> optimizer;
  std::shared_ptr<iterators::SerialIterator> train_iter, test_iter;
  std::shared_ptr<training::StandardUpdater> updater;
  std::unique_ptr<Trainer> trainer;

  Setup(datasets::DatasetPtr train, datasets::DatasetPtr test, int64_t batch, IntervalTrigger stop, const fs::path& out,
        int64_t units = 16, double dropout = 0.2, std::shared_ptr<Link> predictor = nullptr) {
    random::seed(0);
    net = std::make_shared<Net>(units, dropout);
    model = std::make_shared<L::Classifier>(predictor ? predictor : net);
    optimizer = std::make_shared<optimizers::Adam>();
    optimizer->setup(model);
    train_iter = std::make_shared<iterators::SerialIterator>(train, batch, true, true, 7);
    if (test) test_iter = std::make_shared<iterators::SerialIterator>(test, 16, false, false);
    updater = std::make_shared<training::StandardUpdater>(train_iter, optimizer);
    trainer = std::make_unique<Trainer>(updater, stop, out.string());
  }
};

// Runs at its trigger and keeps the iteration, epoch and observation of each call.
struct Recorder : training::Extension {
  std::string name;
  int prio;
  std::function<void(Trainer&)> action;
  std::vector<int64_t> iterations, epochs;
  std::vector<Observation> observations;
  explicit Recorder(std::string n = "recorder", int p = training::PRIORITY_READER) : name(std::move(n)), prio(p) {}
  void operator()(Trainer& trainer) override {
    iterations.push_back(trainer.updater().iteration());
    epochs.push_back(trainer.updater().epoch());
    observations.push_back(trainer.observation());
    if (action) action(trainer);
  }
  std::string default_name() const override { return name; }
  int priority() const override { return prio; }
};

std::vector<int64_t> range(int64_t first, int64_t last) {
  std::vector<int64_t> v;
  for (int64_t i = first; i <= last; ++i) v.push_back(i);
  return v;
}

std::vector<float> values(const Tensor& t) { return t.to_vector<float>(); }

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

}  // namespace

TEST_CASE("training: IntervalTrigger fires when the count crosses a multiple of the period") {
  TempDir dir("trigger");
  // 10 examples in batches of 4: epoch_detail goes 0.4, 0.8, 1.2, 1.6, 2.0, 2.4, 2.8, 3.2, so
  // epochs end inside batches 3 and 8 and exactly at the end of batch 5.
  Setup s(make_dataset(10, 1), nullptr, 4, IntervalTrigger(3, Unit::Epoch), dir.path);
  auto every = std::make_shared<Recorder>("every");
  auto epoch = std::make_shared<Recorder>("epoch");
  auto half = std::make_shared<Recorder>("half");
  auto two = std::make_shared<Recorder>("two");
  auto three_iters = std::make_shared<Recorder>("three_iters");
  s.trainer->extend(every);  // the default trigger: every iteration
  s.trainer->extend(epoch, "", IntervalTrigger(1, Unit::Epoch));
  s.trainer->extend(half, "", IntervalTrigger(0.5, Unit::Epoch));
  s.trainer->extend(two, "", IntervalTrigger(2, Unit::Epoch));
  s.trainer->extend(three_iters, "", IntervalTrigger(3, Unit::Iteration));
  s.trainer->run();

  REQUIRE(s.updater->iteration() == 8);  // the stop trigger fired once epoch 3 was crossed
  REQUIRE(s.updater->epoch() == 3);
  REQUIRE(every->iterations == range(1, 8));
  REQUIRE(epoch->iterations == std::vector<int64_t>{3, 5, 8});
  REQUIRE(epoch->epochs == std::vector<int64_t>{1, 2, 3});
  REQUIRE(half->iterations == std::vector<int64_t>{2, 3, 4, 5, 7, 8});
  REQUIRE(two->iterations == std::vector<int64_t>{5});
  REQUIRE(three_iters->iterations == std::vector<int64_t>{3, 6});
}

TEST_CASE("training: the stop trigger ends training at the right iteration") {
  TempDir dir("stop");
  SECTION("in iterations") {
    Setup s(make_dataset(10, 1), nullptr, 4, IntervalTrigger(7, Unit::Iteration), dir.path);
    s.trainer->run();
    REQUIRE(s.updater->iteration() == 7);
    REQUIRE(s.optimizer->t() == 7);
  }
  SECTION("in epochs, when the dataset divides into batches") {
    Setup s(make_dataset(12, 1), nullptr, 4, IntervalTrigger(2, Unit::Epoch), dir.path);
    s.trainer->run();
    REQUIRE(s.updater->iteration() == 6);
    REQUIRE(s.updater->epoch() == 2);
    REQUIRE(s.optimizer->epoch() == 2);
    REQUIRE(s.train_iter->current_position() == 0);
  }
  SECTION("in epochs, when the last epoch ends inside a batch") {
    Setup s(make_dataset(10, 1), nullptr, 3, IntervalTrigger(2, Unit::Epoch), dir.path);
    s.trainer->run();
    REQUIRE(s.updater->iteration() == 7);  // 21 examples seen: epoch 2 ended inside batch 7
    REQUIRE(s.updater->epoch() == 2);
    REQUIRE(s.train_iter->current_position() == 1);
  }
}

TEST_CASE("training: triggers reject unknown units and non-positive periods") {
  REQUIRE(training::parse_unit("epoch") == Unit::Epoch);
  REQUIRE(training::parse_unit("iteration") == Unit::Iteration);
  REQUIRE_THROWS_AS(training::parse_unit("epochs"), Error);
  REQUIRE_THROWS_WITH(training::parse_unit("epochs"), Catch::Contains("'epochs'"));
  REQUIRE_THROWS_WITH(training::parse_unit(""), Catch::Contains("unit"));
  REQUIRE_THROWS_AS(IntervalTrigger(0, Unit::Epoch), Error);
  REQUIRE_THROWS_WITH(IntervalTrigger(0, Unit::Epoch), Catch::Contains("positive") && Catch::Contains("0"));
  REQUIRE_THROWS_WITH(IntervalTrigger(-2, Unit::Iteration), Catch::Contains("-2"));
  REQUIRE_THROWS_AS(IntervalTrigger(std::nan(""), Unit::Iteration), Error);
  REQUIRE(IntervalTrigger(20, Unit::Epoch).str() == "20 epochs");
  REQUIRE(IntervalTrigger(1, Unit::Iteration).str() == "1 iteration");
}

TEST_CASE("training: LogReport writes one entry per epoch with the means of the iterations' reports") {
  TempDir dir("log");
  // 200 examples in batches of 32: epochs end inside batches 7, 13 and 19.
  Setup s(make_dataset(200, 1), make_dataset(50, 2), 32, IntervalTrigger(3, Unit::Epoch), dir.path);
  s.trainer->extend(std::make_shared<E::Evaluator>(s.test_iter, s.model));
  auto log = std::make_shared<E::LogReport>();
  s.trainer->extend(log);
  auto by_iterations = std::make_shared<E::LogReport>(std::vector<std::string>{"main/loss"},
                                                      IntervalTrigger(5, Unit::Iteration), "log_iter");
  s.trainer->extend(by_iterations);
  auto rec = std::make_shared<Recorder>();
  s.trainer->extend(rec);
  s.trainer->run();
  REQUIRE(rec->iterations == range(1, 19));

  REQUIRE(fs::exists(dir.path / "log"));
  REQUIRE_FALSE(fs::exists(dir.path / "log.tmp"));
  const std::string text = read_text(dir.path / "log");
  REQUIRE(text.front() == '[');
  REQUIRE(text.find("\"main/loss\": ") != std::string::npos);
  const std::vector<Observation> entries = E::LogReport::from_json(text);
  REQUIRE(entries == log->log());  // the file reads back exactly
  REQUIRE(entries.size() == 3);

  const std::set<std::string> keys{"elapsed_time", "epoch", "iteration", "main/accuracy", "main/loss",
                                   "validation/main/accuracy", "validation/main/loss"};
  const std::vector<int64_t> ends{7, 13, 19};
  int64_t begin = 1;
  double previous_elapsed = 0;
  for (size_t e = 0; e < entries.size(); ++e) {
    const Observation& entry = entries[e];
    REQUIRE(keys_of(entry) == keys);
    REQUIRE(entry.at("epoch") == double(e + 1));
    REQUIRE(entry.at("iteration") == double(ends[e]));
    REQUIRE(entry.at("elapsed_time") > previous_elapsed);
    previous_elapsed = entry.at("elapsed_time");
    // The means of what the model reported in the iterations since the previous entry.
    for (const char* key : {"main/loss", "main/accuracy"}) {
      double sum = 0;
      for (int64_t it = begin; it <= ends[e]; ++it) sum += rec->observations[size_t(it - 1)].at(key);
      REQUIRE(entry.at(key) == Approx(sum / double(ends[e] - begin + 1)).epsilon(1e-12));
    }
    // The evaluator reports once per epoch, in the iteration that ends it.
    for (int64_t it = begin; it < ends[e]; ++it)
      REQUIRE(rec->observations[size_t(it - 1)].count("validation/main/loss") == 0);
    REQUIRE(entry.at("validation/main/loss") == rec->observations[size_t(ends[e] - 1)].at("validation/main/loss"));
    REQUIRE(std::isfinite(entry.at("validation/main/loss")));
    begin = ends[e] + 1;
  }
  REQUIRE(entries[2].at("main/loss") < entries[0].at("main/loss"));  // it learns

  // Selected keys, every 5 iterations, under another file name.
  const std::vector<Observation> every5 = E::LogReport::from_json(read_text(dir.path / "log_iter"));
  REQUIRE(every5 == by_iterations->log());
  REQUIRE(every5.size() == 3);
  for (size_t e = 0; e < every5.size(); ++e) {
    REQUIRE(keys_of(every5[e]) == std::set<std::string>{"elapsed_time", "epoch", "iteration", "main/loss"});
    REQUIRE(every5[e].at("iteration") == double(5 * (e + 1)));
    double sum = 0;
    for (size_t it = 5 * e; it < 5 * (e + 1); ++it) sum += rec->observations[it].at("main/loss");
    REQUIRE(every5[e].at("main/loss") == Approx(sum / 5).epsilon(1e-12));
  }
}

TEST_CASE("training: LogReport's JSON reads back what it writes") {
  std::vector<Observation> log{{{"epoch", 1}, {"main/loss", 0.1234567890123}, {"x", -2.5e-7}},
                               {{"epoch", 2}, {"main/loss", 1e20}, {"big", 123456789012.0}}};
  REQUIRE(E::LogReport::from_json(E::LogReport::to_json(log)) == log);
  REQUIRE(E::LogReport::to_json({}) == "[]");
  REQUIRE(E::LogReport::from_json("[]").empty());
  const auto special = E::LogReport::from_json(E::LogReport::to_json({{{"a", NAN}, {"b", INFINITY}}}));
  REQUIRE(std::isnan(special.at(0).at("a")));
  REQUIRE(special.at(0).at("b") == INFINITY);
}

TEST_CASE("training: a damaged saved log is an error saying which entry and what it holds") {
  const std::string good = E::LogReport::to_json({{{"epoch", 1}, {"main/loss", 0.5}}, {{"epoch", 2}, {"main/loss", 0.25}}});
  std::string bad = good;
  bad.replace(bad.rfind("0.25"), 4, "0.2x");
  REQUIRE_THROWS_WITH(E::LogReport::from_json(bad),
                      Catch::Equals("LogReport: the saved log is corrupt: entry 1: 'main/loss' holds '0.2x', not a number"));
  REQUIRE_THROWS_WITH(E::LogReport::from_json("[{\"epoch\": }]"), Catch::Contains("'epoch' holds '', not a number"));
  REQUIRE_THROWS_WITH(E::LogReport::from_json("[{\"epoch: 1}]"), Catch::Contains("has no closing quote or no ':'"));
  REQUIRE_THROWS_WITH(E::LogReport::from_json("[{\"epoch\": 1"), Catch::Contains("entry 0: no closing '}'"));
}

TEST_CASE("training: PrintReport prints a header, then one aligned row per epoch") {
  TempDir dir("print");
  Setup s(make_dataset(200, 1), make_dataset(50, 2), 32, IntervalTrigger(3, Unit::Epoch), dir.path);
  s.trainer->extend(std::make_shared<E::Evaluator>(s.test_iter, s.model));
  auto log = std::make_shared<E::LogReport>();
  s.trainer->extend(log);
  std::ostringstream out;
  const std::vector<std::string> columns{"epoch", "iteration", "main/loss", "validation/main/loss", "elapsed_time",
                                         "not/reported"};
  s.trainer->extend(std::make_shared<E::PrintReport>(columns, "LogReport", out));
  s.trainer->run();

  std::vector<std::string> lines;
  std::istringstream in(out.str());
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  REQUIRE(lines.size() == 4);
  const std::string& header = lines[0];
  std::vector<size_t> at;
  for (const auto& c : columns) at.push_back(header.find(c));
  REQUIRE(at[0] == 0);
  for (size_t i = 1; i < at.size(); ++i) {
    REQUIRE(at[i] != std::string::npos);
    REQUIRE(at[i] > at[i - 1] + columns[i - 1].size());
  }
  const std::vector<int64_t> iterations{7, 13, 19};
  for (size_t r = 0; r < 3; ++r) {
    const std::string& row = lines[r + 1];
    INFO("row: '" << row << "'");
    std::istringstream cells(row);
    std::vector<std::string> tokens;
    for (std::string t; cells >> t;) tokens.push_back(t);
    REQUIRE(tokens.size() == 5);  // "not/reported" is blank
    for (size_t c = 0; c < 5; ++c) {
      REQUIRE(row.compare(at[c], tokens[c].size(), tokens[c]) == 0);  // starts under its header
      if (c > 0) REQUIRE(row[at[c] - 1] == ' ');
    }
    REQUIRE(tokens[0] == std::to_string(r + 1));
    REQUIRE(tokens[1] == std::to_string(iterations[r]));
    REQUIRE(std::stod(tokens[2]) == Approx(log->log()[r].at("main/loss")).epsilon(1e-5));
    REQUIRE(std::stod(tokens[3]) == Approx(log->log()[r].at("validation/main/loss")).epsilon(1e-5));
  }
}

TEST_CASE("training: PrintReport needs a LogReport") {
  TempDir dir("print_bad");
  Setup s(make_dataset(10, 1), nullptr, 4, IntervalTrigger(1, Unit::Epoch), dir.path);
  std::ostringstream out;
  s.trainer->extend(std::make_shared<Recorder>());
  s.trainer->extend(std::make_shared<E::PrintReport>(std::vector<std::string>{"epoch"}, "recorder", out));
  REQUIRE_THROWS_WITH(s.trainer->run(), Catch::Contains("'recorder'") && Catch::Contains("LogReport"));
  Setup s2(make_dataset(10, 1), nullptr, 4, IntervalTrigger(1, Unit::Epoch), dir.path);
  s2.trainer->extend(std::make_shared<E::PrintReport>(std::vector<std::string>{"epoch"}, "missing", out));
  REQUIRE_THROWS_WITH(s2.trainer->run(), Catch::Contains("'missing'"));
}

TEST_CASE("training: PrintReport prints its header at the first call, and again in a resumed run") {
  TempDir dir("print_resume");
  auto train = make_dataset(200, 1);
  const std::vector<std::string> columns{"epoch", "iteration", "main/loss"};
  auto make = [&](IntervalTrigger stop, std::ostream& out) {
    auto s = std::make_unique<Setup>(train, nullptr, 32, stop, dir.path);
    s->trainer->extend(std::make_shared<E::LogReport>());
    s->trainer->extend(std::make_shared<E::PrintReport>(columns, "LogReport", out));
    s->trainer->extend(E::snapshot("snap_{.updater.epoch}"), "", IntervalTrigger(1, Unit::Epoch));
    return s;
  };
  auto lines_of = [](const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  };
  auto first_token = [](const std::string& line) {
    std::istringstream in(line);
    std::string t;
    in >> t;
    return t;
  };

  // One epoch: the header comes at the first call (iteration 1), before any log entry.
  std::ostringstream out1;
  std::string after_first_iteration;
  auto a = make(IntervalTrigger(1, Unit::Epoch), out1);
  auto rec = std::make_shared<Recorder>("recorder", training::PRIORITY_READER - 1);  // after PrintReport
  rec->action = [&](Trainer& t) {
    if (t.updater().iteration() == 1) after_first_iteration = out1.str();
  };
  a->trainer->extend(rec);
  a->trainer->run();
  REQUIRE(lines_of(after_first_iteration).size() == 1);
  REQUIRE(first_token(after_first_iteration) == "epoch");
  const auto lines1 = lines_of(out1.str());
  REQUIRE(lines1.size() == 2);
  REQUIRE(first_token(lines1[0]) == "epoch");
  REQUIRE(first_token(lines1[1]) == "1");

  // Resumed to three epochs: the header again, then only the rows not printed before the snapshot.
  std::ostringstream out2;
  auto b = make(IntervalTrigger(3, Unit::Epoch), out2);
  training::load_snapshot((dir.path / "snap_1").string(), *b->trainer);
  b->trainer->run();
  const auto lines2 = lines_of(out2.str());
  INFO(out2.str());
  REQUIRE(lines2.size() == 3);
  REQUIRE(lines2[0] == lines1[0]);
  REQUIRE(first_token(lines2[1]) == "2");
  REQUIRE(first_token(lines2[2]) == "3");
}

TEST_CASE("training: PrintReport erases below the cursor before each line only when asked to") {
  TempDir dir("print_erase");
  auto run = [&](std::optional<bool> erase) {
    Setup s(make_dataset(200, 1), nullptr, 32, IntervalTrigger(2, Unit::Epoch), dir.path);
    std::ostringstream out;
    s.trainer->extend(std::make_shared<E::LogReport>());
    s.trainer->extend(std::make_shared<E::PrintReport>(std::vector<std::string>{"epoch", "main/loss"}, "LogReport",
                                                       out, erase));
    s.trainer->run();
    return out.str();
  };
  // Forced on: "\033[J" starts the header and each of the 2 rows, and nothing else.
  const std::string on = run(true);
  REQUIRE(count(on, "\033[J") == 3);
  REQUIRE(on.compare(0, 3, "\033[J") == 0);
  REQUIRE(count(on, "\n\033[J") == 2);
  // Off, and by default on a stream that is not a terminal: no escape sequence at all.
  const std::string off = run(false);
  REQUIRE(off.find('\033') == std::string::npos);
  REQUIRE(run(std::nullopt) == off);
  std::string stripped = on;
  for (size_t at; (at = stripped.find("\033[J")) != std::string::npos;) stripped.erase(at, 3);
  REQUIRE(stripped == off);
  std::ostringstream other;
  REQUIRE_FALSE(E::PrintReport({"epoch"}, "LogReport", other).erase_lines());
  REQUIRE(E::PrintReport({"epoch"}, "LogReport", other, true).erase_lines());
  REQUIRE(E::PrintReport({"epoch"}, "LogReport", std::cout).erase_lines() == (::isatty(STDOUT_FILENO) == 1));
}

TEST_CASE("training: ProgressBar draws the bars, the position and the speed") {
  TempDir dir("progress");
  Setup s(make_dataset(200, 1), nullptr, 32, IntervalTrigger(3, Unit::Epoch), dir.path);
  std::ostringstream out;
  // PrintReport shares the stream, as stdout and stderr share a terminal.
  s.trainer->extend(std::make_shared<E::LogReport>());
  s.trainer->extend(std::make_shared<E::PrintReport>(std::vector<std::string>{"epoch", "main/loss"}, "LogReport", out));
  s.trainer->extend(std::make_shared<E::ProgressBar>(std::nullopt, 2, 20, out));
  std::string after_first_drawing;
  auto rec = std::make_shared<Recorder>();
  rec->action = [&](Trainer&) {
    if (after_first_drawing.empty()) after_first_drawing = out.str();
  };
  s.trainer->extend(rec, "", IntervalTrigger(2, Unit::Iteration));
  s.trainer->run();
  const std::string text = out.str();
  REQUIRE(count(text, "iters/sec") == 9);  // drawn at iterations 2, 4, ..., 18
  REQUIRE(text.find("this epoch [") != std::string::npos);
  REQUIRE(text.find("total [") != std::string::npos);
  REQUIRE(text.find("[####") != std::string::npos);
  // At iteration 18: 576 examples seen, 2.88 of 3 epochs.
  REQUIRE(text.find("18 iter, 2 epoch / 3 epochs") != std::string::npos);
  REQUIRE(text.find(" 96.00%") != std::string::npos);
  REQUIRE(text.find(" 88.00%") != std::string::npos);
  REQUIRE(text.find("Estimated time to finish") != std::string::npos);
  // Each drawing leaves the cursor at its top, so other output (PrintReport's rows) is written
  // over the bar, and the next drawing goes below it instead of erasing it; the last drawing is
  // erased when training ends.
  REQUIRE(after_first_drawing.size() > 4);
  REQUIRE(after_first_drawing.substr(after_first_drawing.size() - 4) == "\033[4A");
  REQUIRE(count(text, "\033[4A") == 9);
  REQUIRE(count(text, ".\n\033[4A") == 9);  // only ever right after a drawing
  REQUIRE(text.size() >= 3);
  REQUIRE(text.substr(text.size() - 3) == "\033[J");
  REQUIRE(text.find("main/loss") != std::string::npos);  // the report is there, too
  REQUIRE_THROWS_WITH(E::ProgressBar(std::nullopt, 0), Catch::Contains("update_interval") && Catch::Contains("0"));
}

TEST_CASE("training: ProgressBar on a standard stream redirected to a file draws nothing") {
  TempDir dir("progress_redirected");
  Setup s(make_dataset(200, 1), nullptr, 32, IntervalTrigger(1, Unit::Epoch), dir.path);
  s.trainer->extend(std::make_shared<E::ProgressBar>(std::nullopt, 1));  // std::cerr, every iteration
  // stderr into a file for the run, as `prog 2>log` does.
  const std::string log = (dir.path / "stderr.txt").string();
  std::fflush(stderr);
  std::cerr.flush();
  const int saved = ::dup(STDERR_FILENO);
  const int file = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(saved >= 0);
  REQUIRE(file >= 0);
  ::dup2(file, STDERR_FILENO);
  ::close(file);
  s.trainer->run();
  std::cerr.flush();
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  std::ifstream in(log);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.find("\033[") == std::string::npos);
  CHECK(text.find("iters/sec") == std::string::npos);
}

TEST_CASE("training: dump_graph writes the graph of main/loss once") {
  TempDir dir("graph");
  Setup s(make_dataset(200, 1), nullptr, 32, IntervalTrigger(2, Unit::Epoch), dir.path);
  auto graph = E::dump_graph("main/loss");
  s.trainer->extend(graph);
  std::string dot;
  auto remover = std::make_shared<Recorder>("remover");
  remover->action = [&](Trainer&) {
    if (fs::exists(dir.path / "cg.dot")) dot = read_text(dir.path / "cg.dot");
    fs::remove(dir.path / "cg.dot");
  };
  s.trainer->extend(remover, "", IntervalTrigger(1, Unit::Iteration));
  s.trainer->run();
  REQUIRE(graph->written());
  REQUIRE_FALSE(fs::exists(dir.path / "cg.dot"));  // not written again after the first iteration
  REQUIRE(count(dot, "digraph") == 1);
  REQUIRE(count(dot, "label=\"Linear\"") == 2);
  REQUIRE(count(dot, "label=\"ReLU\"") == 1);
  REQUIRE(count(dot, "label=\"Dropout\"") == 1);
  REQUIRE(count(dot, "label=\"SoftmaxCrossEntropy\"") == 1);
  REQUIRE(dot.find("(32, 20), float32") != std::string::npos);  // the input batch
  REQUIRE(dot.back() == '\n');
}

TEST_CASE("training: Evaluator reports the mean of the per-batch losses without training") {
  random::seed(0);
  auto net = std::make_shared<Net>(16, 0.5);
  auto probe = std::make_shared<Probe>(net);
  auto model = std::make_shared<L::Classifier>(probe);
  auto test = make_dataset(50, 2);
  // Initialize the parameters.
  model->forward_args({Variable(Tensor::zeros({1, 20})), Variable(Tensor::from_vector<int32_t>({0}))});
  probe->calls.clear();

  // By hand: batches of 16, 16, 16 and 2, backprop and dropout off.
  double sum_loss = 0, sum_acc = 0;
  int batches = 0;
  {
    iterators::SerialIterator it(test, 16, false, false);
    NoBackpropMode no_backprop;
    config::TrainScope eval_mode(false);
    while (it.has_next()) {
      std::vector<Tensor> arrays = it.next_batch();
      model->forward_args({Variable(arrays[0]), Variable(arrays[1])});
      sum_loss += model->loss().item();
      sum_acc += model->accuracy().item();
      ++batches;
    }
  }
  REQUIRE(batches == 4);
  probe->calls.clear();

  std::vector<std::vector<float>> before;
  for (auto& p : model->params()) before.push_back(values(p.data()));
  const std::vector<uint64_t> rng_before = random::default_generator().state();

  auto iter = std::make_shared<iterators::SerialIterator>(test, 16, false, false);
  E::Evaluator evaluator(iter, model);
  REQUIRE(config::train());
  Observation result = evaluator.evaluate();
  REQUIRE(config::train());  // restored
  REQUIRE(is_backprop_enabled());
  REQUIRE(result.size() == 2);
  REQUIRE(result.at("validation/main/loss") == Approx(sum_loss / batches).epsilon(1e-12));
  REQUIRE(result.at("validation/main/accuracy") == Approx(sum_acc / batches).epsilon(1e-12));
  REQUIRE(evaluator.last_example_count() == 50);
  REQUIRE(probe->calls == std::vector<std::pair<bool, bool>>(4, {false, false}));

  // Nothing changed: parameters, gradients, the generator (no dropout masks drawn).
  size_t i = 0;
  for (auto& p : model->params()) {
    REQUIRE(values(p.data()) == before[i++]);
    REQUIRE_FALSE(p.grad().defined());
  }
  REQUIRE(random::default_generator().state() == rng_before);

  // Evaluating again gives the same result (the iterator is reset each time).
  REQUIRE(evaluator.evaluate() == result);

  // An iterator with fewer examples than a batch: one short batch.
  auto small = std::make_shared<iterators::SerialIterator>(make_dataset(5, 3), 16, false, false);
  E::Evaluator small_evaluator(small, model, {}, "small");
  Observation r = small_evaluator.evaluate();
  REQUIRE(small_evaluator.last_example_count() == 5);
  REQUIRE(r.count("small/main/loss") == 1);
  REQUIRE(std::isfinite(r.at("small/main/loss")));

  // A repeating iterator would never end: it is refused instead of hanging.
  auto repeating = std::make_shared<iterators::SerialIterator>(test, 16, true, false);
  E::Evaluator bad(repeating, model);
  REQUIRE_THROWS_WITH(bad.evaluate(), Catch::Contains("repeat"));
}

TEST_CASE("training: in a trainer, the Evaluator runs with train off and leaves it on for the updates") {
  TempDir dir("evaluator");
  random::seed(0);
  auto probe = std::make_shared<Probe>(std::make_shared<Net>(16, 0.2));
  Setup s(make_dataset(100, 1), make_dataset(40, 2), 25, IntervalTrigger(2, Unit::Epoch), dir.path, 16, 0.2, probe);
  s.trainer->extend(std::make_shared<E::Evaluator>(s.test_iter, s.model));
  s.trainer->run();
  // 4 updates per epoch, then 3 evaluation batches (16, 16, 8).
  std::vector<std::pair<bool, bool>> expected;
  for (int e = 0; e < 2; ++e) {
    for (int i = 0; i < 4; ++i) expected.emplace_back(true, true);
    for (int i = 0; i < 3; ++i) expected.emplace_back(false, false);
  }
  REQUIRE(probe->calls == expected);
  REQUIRE(config::train());
}

TEST_CASE("training: a run resumed from a snapshot ends bit for bit where an uninterrupted run ends") {
  TempDir dir("resume");
  auto train = make_dataset(200, 1);
  auto test = make_dataset(50, 2);
  auto make = [&](IntervalTrigger stop, const fs::path& out, std::shared_ptr<E::LogReport>& log) {
    // Dropout 0.3, shuffling: both random streams matter.
    auto s = std::make_unique<Setup>(train, test, 32, stop, out, 16, 0.3);
    s->trainer->extend(std::make_shared<E::Evaluator>(s->test_iter, s->model));
    log = std::make_shared<E::LogReport>();
    s->trainer->extend(log);
    s->trainer->extend(E::snapshot("snapshot_epoch_{.updater.epoch}"), "", IntervalTrigger(1, Unit::Epoch));
    return s;
  };

  // A: two epochs straight.
  std::shared_ptr<E::LogReport> log_a, log_b1, log_b2;
  auto a = make(IntervalTrigger(2, Unit::Epoch), dir.path / "a", log_a);
  a->trainer->run();
  const std::vector<uint64_t> rng_a = random::default_generator().state();
  REQUIRE(fs::exists(dir.path / "a" / "snapshot_epoch_1"));
  REQUIRE(fs::exists(dir.path / "a" / "snapshot_epoch_2"));

  // B: one epoch, then a fresh trainer resumed from its snapshot runs to two epochs.
  auto b1 = make(IntervalTrigger(1, Unit::Epoch), dir.path / "b", log_b1);
  b1->trainer->run();
  REQUIRE(b1->updater->iteration() == 7);
  REQUIRE(log_b1->log().size() == 1);
  auto b2 = make(IntervalTrigger(2, Unit::Epoch), dir.path / "b", log_b2);
  random::seed(12345);  // the snapshot must restore the default generator
  training::load_snapshot((dir.path / "b" / "snapshot_epoch_1").string(), *b2->trainer);
  // Loaded: where B stopped.
  REQUIRE(b2->updater->iteration() == 7);
  REQUIRE(b2->train_iter->epoch_detail() == b1->train_iter->epoch_detail());
  REQUIRE(b2->optimizer->t() == 7);
  REQUIRE(log_b2->log().size() == 1);
  {
    auto p1 = b1->model->namedparams(), p2 = b2->model->namedparams();
    REQUIRE(p1.size() == p2.size());
    for (size_t i = 0; i < p1.size(); ++i) REQUIRE(values(p1[i].second.data()) == values(p2[i].second.data()));
  }
  REQUIRE(b2->trainer->elapsed_time() > 0);
  b2->trainer->run();
  const std::vector<uint64_t> rng_b = random::default_generator().state();

  // Parameters, bit for bit.
  auto pa = a->model->namedparams(), pb = b2->model->namedparams();
  REQUIRE(pa.size() == pb.size());
  REQUIRE(pa.size() == 4);
  for (size_t i = 0; i < pa.size(); ++i) {
    INFO(pa[i].first);
    REQUIRE(pa[i].first == pb[i].first);
    REQUIRE(values(pa[i].second.data()) == values(pb[i].second.data()));
  }
  // Sanity: the first epoch alone ends elsewhere.
  REQUIRE(values(b1->model->namedparams()[0].second.data()) != values(pa[0].second.data()));

  // The optimizer.
  REQUIRE(a->optimizer->t() == 13);
  REQUIRE(b2->optimizer->t() == 13);
  REQUIRE(a->optimizer->epoch() == b2->optimizer->epoch());
  for (auto& [name, p] : pa) {
    INFO(name);
    const TensorMap& sa = a->optimizer->state(name);
    const TensorMap& sb = b2->optimizer->state(name);
    REQUIRE(sa.size() == 2);
    REQUIRE(sb.size() == 2);
    for (const char* key : {"m", "v"}) REQUIRE(values(sa.at(key)) == values(sb.at(key)));
  }

  // The iterator and the generators.
  REQUIRE(a->updater->iteration() == b2->updater->iteration());
  REQUIRE(a->train_iter->epoch() == b2->train_iter->epoch());
  REQUIRE(a->train_iter->current_position() == b2->train_iter->current_position());
  REQUIRE(a->train_iter->epoch_detail() == b2->train_iter->epoch_detail());
  REQUIRE(a->train_iter->is_new_epoch() == b2->train_iter->is_new_epoch());
  REQUIRE(a->train_iter->previous_epoch_detail() == b2->train_iter->previous_epoch_detail());
  REQUIRE(rng_a == rng_b);
  for (int k = 0; k < 8; ++k) {  // the same batches follow (the shuffling RNG continues alike)
    auto ba = a->train_iter->next_batch(), bb = b2->train_iter->next_batch();
    REQUIRE(values(ba[0]) == values(bb[0]));
    REQUIRE(ba[1].to_vector<int32_t>() == bb[1].to_vector<int32_t>());
  }

  // The logs, except for the time.
  auto strip = [](std::vector<Observation> log) {
    for (auto& e : log) {
      REQUIRE(e.count("elapsed_time") == 1);
      e.erase("elapsed_time");
    }
    return log;
  };
  REQUIRE(log_a->log().size() == 2);
  REQUIRE(strip(log_a->log()) == strip(log_b2->log()));
  REQUIRE(strip(E::LogReport::from_json(read_text(dir.path / "a" / "log"))) ==
          strip(E::LogReport::from_json(read_text(dir.path / "b" / "log"))));
  REQUIRE(log_b2->log()[1].at("elapsed_time") >= log_b2->log()[0].at("elapsed_time"));  // time before the resume counts

  // The snapshots themselves: every entry but the times.
  auto same_snapshots = [](const fs::path& x, const fs::path& y) {
    const TensorMap ex = load_npz(x.string()), ey = load_npz(y.string());
    REQUIRE(ex.size() == ey.size());
    REQUIRE(ex.count("elapsed_time") == 1);
    for (const auto& [key, tx] : ex) {
      INFO(key);
      REQUIRE(ey.count(key) == 1);
      if (key == "elapsed_time" || key.find("_log") != std::string::npos) continue;
      const Tensor& ty = ey.at(key);
      REQUIRE(tx.dtype() == ty.dtype());
      REQUIRE(tx.shape() == ty.shape());
      Tensor cx = tx.contiguous(), cy = ty.contiguous();
      REQUIRE(std::memcmp(cx.raw_data(), cy.raw_data(), cx.nbytes()) == 0);
    }
  };
  same_snapshots(dir.path / "a" / "snapshot_epoch_1", dir.path / "b" / "snapshot_epoch_1");
  same_snapshots(dir.path / "a" / "snapshot_epoch_2", dir.path / "b" / "snapshot_epoch_2");
}

TEST_CASE("training: a snapshot resumed at the stop point does not train further") {
  TempDir dir("resume_end");
  auto train = make_dataset(50, 1);
  Setup a(train, nullptr, 16, IntervalTrigger(1, Unit::Epoch), dir.path);
  a.trainer->extend(E::snapshot("snap"));
  a.trainer->run();
  Setup b(train, nullptr, 16, IntervalTrigger(1, Unit::Epoch), dir.path);
  training::load_snapshot((dir.path / "snap").string(), *b.trainer);
  b.trainer->run();
  REQUIRE(b.updater->iteration() == a.updater->iteration());
  REQUIRE(b.optimizer->t() == a.optimizer->t());
}

TEST_CASE("training: unwritable output directories and bad snapshots raise errors naming them") {
  TempDir dir("errors");
  auto train = make_dataset(40, 1);

  SECTION("an output directory under a regular file") {
    std::ofstream(dir.path / "plain") << "not a directory";
    const fs::path out = dir.path / "plain" / "result";
    Setup s(train, nullptr, 16, IntervalTrigger(1, Unit::Epoch), out);
    REQUIRE_THROWS_AS(s.trainer->run(), Error);
    REQUIRE_THROWS_WITH(s.trainer->run(), Catch::Contains(out.string()) && Catch::Contains("output directory"));
    REQUIRE(s.updater->iteration() == 0);
  }

  SECTION("a missing snapshot") {
    Setup s(train, nullptr, 16, IntervalTrigger(1, Unit::Epoch), dir.path);
    const std::string path = (dir.path / "no_such_snapshot").string();
    REQUIRE_THROWS_AS(training::load_snapshot(path, *s.trainer), Error);
    REQUIRE_THROWS_WITH(training::load_snapshot(path, *s.trainer),
                        Catch::Contains(path) && Catch::Contains("does not exist"));
  }

  SECTION("corrupt and truncated snapshots") {
    Setup s(train, nullptr, 16, IntervalTrigger(1, Unit::Epoch), dir.path);
    const std::string garbage = (dir.path / "garbage").string();
    const char bytes[] = "\x01\x02garbage, not an npz file\xff\x00\x13";
    std::ofstream(garbage, std::ios::binary) << std::string(bytes, sizeof bytes - 1);
    REQUIRE_THROWS_AS(training::load_snapshot(garbage, *s.trainer), Error);
    REQUIRE_THROWS_WITH(training::load_snapshot(garbage, *s.trainer), Catch::Contains(garbage));

    s.trainer->extend(E::snapshot("good"));
    s.trainer->run();
    const std::string good = read_text(dir.path / "good");
    const std::string truncated = (dir.path / "truncated").string();
    std::ofstream(truncated, std::ios::binary) << good.substr(0, good.size() / 2);
    Setup t(train, nullptr, 16, IntervalTrigger(1, Unit::Epoch), dir.path);
    t.trainer->extend(E::snapshot("good"));
    REQUIRE_THROWS_WITH(training::load_snapshot(truncated, *t.trainer), Catch::Contains(truncated));
    const std::string empty = (dir.path / "empty").string();
    std::ofstream(empty, std::ios::binary).flush();
    REQUIRE_THROWS_WITH(training::load_snapshot(empty, *t.trainer), Catch::Contains(empty));
    training::load_snapshot((dir.path / "good").string(), *t.trainer);  // the intact one loads
    REQUIRE(t.updater->iteration() == s.updater->iteration());
  }

  SECTION("a snapshot of a model with other unit counts") {
    Setup s(train, nullptr, 16, IntervalTrigger(1, Unit::Epoch), dir.path, 16);
    s.trainer->extend(E::snapshot("units16"));
    s.trainer->run();
    Setup t(train, nullptr, 16, IntervalTrigger(1, Unit::Epoch), dir.path, 24);
    t.trainer->extend(E::snapshot("units16"));
    const std::string path = (dir.path / "units16").string();
    REQUIRE_THROWS_AS(training::load_snapshot(path, *t.trainer), Error);
    REQUIRE_THROWS_WITH(training::load_snapshot(path, *t.trainer),
                        Catch::Contains(path) && Catch::Contains("shape") && Catch::Contains("(16,)") &&
                            Catch::Contains("(24,)"));
    // Nothing was loaded: the entries read before the mismatch (iteration, iterator, optimizer
    // step, the lazily sized first layer) are back as they were.
    REQUIRE(t.updater->iteration() == 0);
    REQUIRE(t.train_iter->epoch_detail() == 0.0);
    REQUIRE(t.optimizer->t() == 0);
    REQUIRE(t.model->has_uninitialized_params());
    t.trainer->run();  // and the trainer still trains from the start
    REQUIRE(t.updater->iteration() == s.updater->iteration());
  }

  SECTION("a snapshot whose optimizer state does not fit its parameter") {
    Setup s(train, nullptr, 16, IntervalTrigger(1, Unit::Epoch), dir.path);
    s.trainer->extend(E::snapshot("good"));
    s.trainer->run();
    TensorMap entries = load_npz((dir.path / "good").string());
    std::string key;
    for (auto& [k, v] : entries)
      if (k.size() > 2 && k.compare(k.size() - 2, 2, "/m") == 0 && v.ndim() == 2) key = k;
    REQUIRE(!key.empty());
    entries[key] = Tensor::zeros({3, 3});
    const std::string path = (dir.path / "bad_state").string();
    save_npz(path, entries);

    Setup t(train, nullptr, 16, IntervalTrigger(2, Unit::Epoch), dir.path);
    t.trainer->extend(E::snapshot("good"));
    t.trainer->run();  // one epoch more than S: its own parameters and state
    const std::vector<float> w = values(t.model->namedparams()[0].second.data());
    const std::vector<float> m = values(t.optimizer->state(t.model->namedparams()[0].first).at("m"));
    const int64_t iteration = t.updater->iteration(), step = t.optimizer->t();
    REQUIRE_THROWS_WITH(training::load_snapshot(path, *t.trainer),
                        Catch::Contains(path) && Catch::Contains("optimizer state") && Catch::Contains("(3, 3)"));
    REQUIRE(t.updater->iteration() == iteration);
    REQUIRE(t.optimizer->t() == step);
    REQUIRE(values(t.model->namedparams()[0].second.data()) == w);
    REQUIRE(values(t.optimizer->state(t.model->namedparams()[0].first).at("m")) == m);
  }
}

TEST_CASE("training: a snapshot without the W of a lazily sized layer is refused, naming the file and the entry") {
  TempDir dir("strict_resume");
  auto train = make_dataset(48, 1);
  Setup s(train, nullptr, 16, IntervalTrigger(1, Unit::Epoch), dir.path);
  s.trainer->extend(E::snapshot("good"));
  s.trainer->run();
  TensorMap entries = load_npz((dir.path / "good").string());
  REQUIRE(entries.erase("updater/model:main/predictor/l1/W") == 1);
  const std::string path = (dir.path / "no_l1_W").string();
  save_npz(path, entries);

  SECTION("load_snapshot: an error, and the trainer as it was, its first layer still uninitialized") {
    Setup t(train, nullptr, 16, IntervalTrigger(1, Unit::Epoch), dir.path);
    t.trainer->extend(E::snapshot("good"));
    REQUIRE(t.model->has_uninitialized_params());
    REQUIRE_THROWS_WITH(training::load_snapshot(path, *t.trainer),
                        Catch::Contains(path) && Catch::Contains("'updater/model:main/predictor/l1/W' is missing"));
    REQUIRE_FALSE(t.net->l1->W().data().defined());
    REQUIRE_FALSE(t.net->l2->W().data().defined());  // loaded before the error, and put back
    REQUIRE(t.updater->iteration() == 0);
    REQUIRE(t.optimizer->t() == 0);
  }
  SECTION("serializers::load_npz: strict by default; strict=false skips the entry") {
    Setup t(train, nullptr, 16, IntervalTrigger(1, Unit::Epoch), dir.path);
    t.trainer->extend(E::snapshot("good"));
    REQUIRE_THROWS_WITH(serializers::load_npz(path, *t.trainer),
                        Catch::Contains(path) && Catch::Contains("'updater/model:main/predictor/l1/W' is missing"));
    Setup u(train, nullptr, 16, IntervalTrigger(1, Unit::Epoch), dir.path);
    u.trainer->extend(E::snapshot("good"));
    serializers::load_npz(path, *u.trainer, "", false);
    REQUIRE_FALSE(u.net->l1->W().data().defined());
    REQUIRE(values(u.net->l2->W().data()) == values(s.net->l2->W().data()));
    REQUIRE(u.updater->iteration() == s.updater->iteration());
  }
  SECTION("snapshot_object's autoload") {
    TensorMap model_entries;
    for (const auto& [k, v] : entries)
      if (k.starts_with("updater/model:main/")) model_entries[k.substr(std::string("updater/model:main/").size())] = v;
    const fs::path out = dir.path / "object";
    fs::create_directories(out);
    save_npz((out / "model_iter_3").string(), model_entries);
    Setup t(train, nullptr, 16, IntervalTrigger(1, Unit::Epoch), out);
    auto snap = E::snapshot_object(*t.model, "model_iter_{.updater.iteration}");
    snap->set_autoload(true);
    t.trainer->extend(snap);
    REQUIRE_THROWS_WITH(t.trainer->run(), Catch::Contains((out / "model_iter_3").string()) &&
                                              Catch::Contains("'predictor/l1/W' is missing"));
    REQUIRE(t.updater->iteration() == 0);
  }
}

TEST_CASE("training: a snapshot whose counters no run writes is refused, naming the file, the entry and the value") {
  TempDir dir("counters");
  auto train = make_dataset(48, 1);
  Setup s(train, nullptr, 16, IntervalTrigger(1, Unit::Epoch), dir.path);
  s.trainer->extend(E::snapshot("good"));
  s.trainer->run();
  const TensorMap good = load_npz((dir.path / "good").string());
  struct Case {
    std::string key;
    Tensor value;
    std::string shown;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<Case> cases{
      {"updater/iteration", Tensor::scalar(0, DType::Int64), "-5"},
      {"updater/iteration", Tensor::scalar(1e30, DType::Float64), "1e+30"},
      {"updater/iteration", Tensor::scalar(0, DType::Int64), "9007199254740993"},  // 2^53 + 1
      {"updater/iterator:main/epoch", Tensor::scalar(0, DType::Int64), "-1"},
      {"updater/iterator:main/current_position", Tensor::scalar(2.5, DType::Float64), "2.5"},
      {"updater/iterator:main/is_new_epoch", Tensor::scalar(0, DType::Int64), "7"},
      {"updater/optimizer:main/t", Tensor::scalar(0, DType::Int64), "-3"},
      {"stop_trigger/previous", Tensor::scalar(-2, DType::Float64), "-2"},
      {"elapsed_time", Tensor::scalar(nan, DType::Float64), "nan"},
  };
  for (const Case& c : cases) {
    INFO(c.key << " = " << c.shown);
    REQUIRE(good.count(c.key) == 1);
    TensorMap entries = good;
    Tensor value = c.value;
    if (value.dtype() == DType::Int64) *value.data<int64_t>() = std::stoll(c.shown);
    entries[c.key] = value;
    const std::string path = (dir.path / "bad").string();
    save_npz(path, entries);
    Setup t(train, nullptr, 16, IntervalTrigger(1, Unit::Epoch), dir.path);
    t.trainer->extend(E::snapshot("good"));
    REQUIRE_THROWS_WITH(training::load_snapshot(path, *t.trainer),
                        Catch::Contains(path) && Catch::Contains("'" + c.key + "' holds " + c.shown + ";"));
    REQUIRE(t.updater->iteration() == 0);  // nothing was loaded
    REQUIRE(t.model->has_uninitialized_params());
  }
  // The good one loads; so does a counter at 0.
  TensorMap entries = good;
  entries["updater/iterator:main/current_position"] = Tensor::scalar(0, DType::Int64);
  save_npz((dir.path / "zero").string(), entries);
  Setup t(train, nullptr, 16, IntervalTrigger(1, Unit::Epoch), dir.path);
  t.trainer->extend(E::snapshot("good"));
  training::load_snapshot((dir.path / "zero").string(), *t.trainer);
  REQUIRE(t.updater->iteration() == s.updater->iteration());
}

namespace {
// The names of the files in DIR, sorted.
std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}
}  // namespace

TEST_CASE("training: a run removes the temporary files a killed run's snapshots and log left, and only those") {
  TempDir dir("stale");
  // 999999999 is above any pid_max (2^22 at most), so no process of it runs.
  const std::vector<std::string> stale{"snapshot_iter_3.tmp.999999999.0", "model.tmp.999999999.2",
                                       "log.tmp.999999999.4", "log.tmp"};
  const std::vector<std::string> kept{
      "snapshot_iter_3",                                            // a snapshot
      "other.tmp.999999999.0",                                      // not a name of ours
      "snapshot_iter_3.tmp.notes",                                  // not a temporary name of ours
      "snapshot_iter_3.tmp.999999999.1x",                           // nor this
      "snapshot_iter_4.tmp." + std::to_string(::getpid()) + ".7",  // a running process's: maybe a save in progress
  };
  for (const auto& name : stale) std::ofstream(dir.path / name) << "x";
  for (const auto& name : kept) std::ofstream(dir.path / name) << "x";
  Setup s(make_dataset(48, 1), nullptr, 16, IntervalTrigger(1, Unit::Epoch), dir.path);
  s.trainer->extend(E::snapshot());
  s.trainer->extend(E::snapshot_object(*s.model, "model"));
  s.trainer->extend(std::make_shared<E::LogReport>());
  s.trainer->run();
  std::set<std::string> expected(kept.begin(), kept.end());
  expected.insert({"snapshot_iter_3", "model", "log"});  // this run's: 48 examples in batches of 16
  CHECK(names_in(dir.path) == expected);
}

TEST_CASE("training: LogReport leaves no temporary file when the log cannot be written") {
  TempDir dir("log_failure");
  Setup s(make_dataset(48, 1), nullptr, 16, IntervalTrigger(1, Unit::Epoch), dir.path);
  s.trainer->extend(std::make_shared<E::LogReport>());
  const std::string log = (dir.path / "log").string();

  SECTION("a full disk") {
    // A file size limit makes writes fail as a full disk does (EFBIG instead of ENOSPC); the
    // signal it raises is ignored, so the write returns the error.
    struct Limit {
      rlimit before{};
      struct sigaction old_action{};
      Limit() {
        struct sigaction ignore{};
        ignore.sa_handler = SIG_IGN;
        sigaction(SIGXFSZ, &ignore, &old_action);
        getrlimit(RLIMIT_FSIZE, &before);
        rlimit small = before;
        small.rlim_cur = 16;
        setrlimit(RLIMIT_FSIZE, &small);
      }
      ~Limit() {
        setrlimit(RLIMIT_FSIZE, &before);
        sigaction(SIGXFSZ, &old_action, nullptr);
      }
    };
    std::string error;
    {
      Limit limit;
      try {
        s.trainer->run();
      } catch (const Error& e) {
        error = e.what();
      }
    }
    CHECK_THAT(error, Catch::Contains("LogReport: cannot write the log to '" + log + ".tmp.") &&
                          Catch::Contains("File too large"));
    CHECK(names_in(dir.path).empty());
  }
  SECTION("a rename onto a directory") {
    fs::create_directories(dir.path / "log" / "inside");
    REQUIRE_THROWS_WITH(s.trainer->run(), Catch::Contains("LogReport: cannot rename '" + log + ".tmp.") &&
                                              Catch::Contains("to '" + log + "'"));
    CHECK(names_in(dir.path) == std::set<std::string>{"log"});
  }
}

TEST_CASE("training: make_extension runs a function at its trigger, with its name, priority, initializer, finalizer") {
  TempDir dir("make_extension");
  auto train = make_dataset(48, 1);  // batch 16: 3 iterations per epoch
  Setup s(train, nullptr, 16, IntervalTrigger(2, Unit::Epoch), dir.path);
  std::vector<std::string> events;
  auto at = [&](const std::string& what) {
    return [&events, what](Trainer& t) { events.push_back(what + std::to_string(t.updater().iteration())); };
  };
  s.trainer->extend(training::make_extension(
      at("epoch@"), {.trigger = IntervalTrigger(1, Unit::Epoch),
                     .priority = training::PRIORITY_READER,
                     .finalizer = [&] { events.push_back("finalized"); },
                     .initializer = [&](Trainer& t) {
                       events.push_back("initialized@" + std::to_string(t.updater().iteration()));
                     }}));
  // Higher priority runs first within an iteration, whatever the order of extend.
  s.trainer->extend(training::make_extension(at("writer@"), {.trigger = IntervalTrigger(3, Unit::Iteration),
                                                             .default_name = "writer",
                                                             .priority = training::PRIORITY_WRITER}));
  // A plain function, as Chainer's trainer.extend(lambda trainer: ...).
  s.trainer->extend(at("iteration@"), "", IntervalTrigger(5, Unit::Iteration));
  s.trainer->run();
  CHECK(events == std::vector<std::string>{"initialized@0", "writer@3", "epoch@3", "iteration@5", "writer@6", "epoch@6",
                                           "finalized"});
  CHECK(dynamic_cast<training::Extension*>(&s.trainer->get_extension("<lambda>")) != nullptr);
  CHECK(dynamic_cast<training::Extension*>(&s.trainer->get_extension("<lambda>_1")) != nullptr);
  CHECK(s.trainer->get_extension("writer").priority() == training::PRIORITY_WRITER);
  CHECK(s.trainer->get_extension("<lambda>").default_trigger().target<IntervalTrigger>()->unit() == Unit::Epoch);
  CHECK(training::make_extension(at("x"))->default_trigger().target<IntervalTrigger>()->period() == 1);  // Chainer's default: every iteration
  CHECK(training::make_extension(at("x"))->default_trigger().target<IntervalTrigger>()->unit() == Unit::Iteration);
  REQUIRE_THROWS_WITH(training::make_extension({}), "make_extension: the function is empty");
}

TEST_CASE("serializers: save_npz and load_npz round-trip a link, an optimizer and a trainer") {
  TempDir dir("serializers");
  auto train = make_dataset(64, 1);
  Setup a(train, nullptr, 16, IntervalTrigger(1, Unit::Epoch), dir.path / "a");
  a.trainer->run();  // trained: parameters, Adam state, iterator and trigger positions to restore
  auto same_params = [](Link& x, Link& y) {
    const auto px = x.namedparams(), py = y.namedparams();
    REQUIRE(px.size() == py.size());
    for (size_t i = 0; i < px.size(); ++i) REQUIRE(values(px[i].second.data()) == values(py[i].second.data()));
  };
  const std::string link_file = (dir.path / "model.npz").string();
  const std::string optimizer_file = (dir.path / "optimizer.npz").string();
  const std::string trainer_file = (dir.path / "trainer.npz").string();
  serializers::save_npz(link_file, *a.model);
  serializers::save_npz(optimizer_file, *a.optimizer);
  serializers::save_npz(trainer_file, *a.trainer);
  REQUIRE(load_npz(link_file).count("predictor/l1/W") == 1);  // Chainer's keys
  REQUIRE(load_npz(optimizer_file).count("predictor/l1/W/m") == 1);
  REQUIRE(load_npz(trainer_file).count("updater/model:main/predictor/l1/W") == 1);

  SECTION("a link and an optimizer") {
    Setup b(train, nullptr, 16, IntervalTrigger(1, Unit::Epoch), dir.path / "b");
    serializers::load_npz(link_file, *b.model);  // the lazily sized l1 is created from the file
    same_params(*a.model, *b.model);
    serializers::load_npz(optimizer_file, *b.optimizer);
    REQUIRE(b.optimizer->t() == a.optimizer->t());
    for (const auto& [name, p] : a.model->namedparams()) {
      INFO(name);
      for (const char* key : {"m", "v"})
        REQUIRE(values(b.optimizer->state(name).at(key)) == values(a.optimizer->state(name).at(key)));
    }
  }
  SECTION("a trainer, and a model out of a trainer's file by its path") {
    Setup b(train, nullptr, 16, IntervalTrigger(2, Unit::Epoch), dir.path / "b");
    serializers::load_npz(trainer_file, *b.trainer);
    REQUIRE(b.updater->iteration() == a.updater->iteration());
    REQUIRE(b.optimizer->t() == a.optimizer->t());
    REQUIRE(b.train_iter->epoch_detail() == a.train_iter->epoch_detail());
    same_params(*a.model, *b.model);
    Setup c(train, nullptr, 16, IntervalTrigger(1, Unit::Epoch), dir.path / "c");
    serializers::load_npz(trainer_file, *c.model, "updater/model:main/");
    same_params(*a.model, *c.model);
    REQUIRE(c.updater->iteration() == 0);
  }
  SECTION("strict: a missing key is an error naming the key and the file; not strict: it is skipped") {
    TensorMap entries = load_npz(link_file);
    entries.erase("predictor/l2/b");
    const std::string partial = (dir.path / "partial.npz").string();
    save_npz(partial, entries);
    Setup b(train, nullptr, 16, IntervalTrigger(1, Unit::Epoch), dir.path / "b");
    b.model->forward_args({Variable(random::normal({2, 20})), Variable(Tensor::from_vector<int32_t>({0, 1}))});
    const std::vector<float> b_before = values(b.net->l2->b()->data());
    REQUIRE_THROWS_WITH(serializers::load_npz(partial, *b.model),
                        "load_npz: cannot load '" + partial + "': deserialize: the entry 'predictor/l2/b' is missing");
    serializers::load_npz(partial, *b.model, "", false);
    REQUIRE(values(b.net->l2->b()->data()) == b_before);  // left as it was
    REQUIRE(values(b.net->l2->W().data()) == values(a.net->l2->W().data()));
    REQUIRE(values(b.net->l1->W().data()) == values(a.net->l1->W().data()));
  }
}

// ---- The CUDA graph step's decisions, without a GPU (training/cuda_graph_step.h) ----

namespace {
// What std::cerr receives while an instance lives.
class CaptureCerr {
 public:
  CaptureCerr() : old_(std::cerr.rdbuf(text_.rdbuf())) {}
  ~CaptureCerr() { std::cerr.rdbuf(old_); }
  std::string text() const { return text_.str(); }

 private:
  std::ostringstream text_;
  std::streambuf* old_;
};
}  // namespace

TEST_CASE("training: a graph step that runs out of memory while captured leaves its signature to eager steps") {
  using Route = training::CudaGraphStep::Route;
  training::CudaGraphStep g;
  const training::CudaGraphStep::Signature full{1, 100, 20}, last{1, 50, 20}, other{1, 10, 20};
  CHECK(g.route(full) == Route::Eager);  // warm-up
  CHECK(g.route(full) == Route::Capture);
  CaptureCerr err;
  g.capture_failed(full, CaptureOutOfMemory("out of memory on cuda:0: tried to allocate 5.0 MiB (...)"));
  CHECK(g.enabled());
  CHECK(g.eager_signatures() == 1);
  for (int i = 0; i < 3; ++i) CHECK(g.route(full) == Route::Eager);
  // Other shapes still get graphs; the message comes once.
  CHECK(g.route(last) == Route::Eager);
  CHECK(g.route(last) == Route::Capture);
  g.capture_failed(last, CaptureOutOfMemory("out of memory on cuda:0: tried to allocate 2.0 MiB (...)"));
  CHECK(g.eager_signatures() == 2);
  const std::string said = err.text();
  CHECK_THAT(said, Catch::Contains("ran out of device memory while being captured") &&
                       Catch::Contains("tried to allocate 5.0 MiB"));
  CHECK(said.find("chainermn-cpp") == said.rfind("chainermn-cpp"));
  // A step that cannot be captured at all turns graphs off.
  CHECK(g.route(other) == Route::Eager);
  CHECK(g.route(other) == Route::Capture);
  g.capture_failed(other, cuda::CaptureError("the step reads a device value on the host"));
  CHECK_FALSE(g.enabled());
  CHECK(g.route(other) == Route::Eager);
  CHECK_THAT(err.text(), Catch::Contains("without CUDA graphs from now on: the step reads a device value on the host"));
}

TEST_CASE("training: what a captured step reports is kept apart, and the outer observation survives a throw") {
  Reporter reporter;
  Observation observation;
  Reporter::Scope scope(reporter, observation);
  report({{"epoch", 1.0}, {"main/loss", 9.0}});
  const Observation reported = training::CudaGraphStep::reporting_apart([] { report({{"main/loss", 0.5}}); });
  CHECK(reported == Observation{{"main/loss", 0.5}});
  CHECK(observation == Observation{{"epoch", 1.0}, {"main/loss", 0.5}});  // the step's value wins
  // A capture that throws anything (a user's error inside the step, not only a capture failure).
  CHECK_THROWS_WITH(training::CudaGraphStep::reporting_apart([] {
                      report({{"main/accuracy", 0.25}});
                      throw Error("softmax_cross_entropy: label 7 is out of range");
                    }),
                    "softmax_cross_entropy: label 7 is out of range");
  CHECK(observation == Observation{{"epoch", 1.0}, {"main/loss", 0.5}});
  CHECK(current_observation() == &observation);
}

TEST_CASE("training: a graph step's signature follows the persistent values a replay writes") {
  struct Model : Chain {
    std::shared_ptr<L::Linear> l;
    Model() {
      l = add_link("l", std::make_shared<L::Linear>(4, 2));
      add_persistent("avg_mean", Tensor::zeros({2}));
    }
  };
  auto model = std::make_shared<Model>();
  optimizers::Adam adam;
  adam.setup(model);
  const std::vector<Tensor> batch{Tensor::zeros({3, 4})};
  using G = training::CudaGraphStep;
  const G::Signature before = G::signature(adam, batch);
  CHECK(G::signature(adam, batch) == before);
  model->persistent("avg_mean").copy_(Tensor::full({2}, 0.5));  // updated in place: the graph's memory
  CHECK(G::signature(adam, batch) == before);
  const Tensor kept = model->persistent("avg_mean");  // holds the old memory, so the new one is elsewhere
  model->persistent("avg_mean") = Tensor::ones({2});  // replaced (a snapshot loaded another way)
  CHECK(G::signature(adam, batch) != before);
  CHECK(G::signature(adam, {Tensor::zeros({2, 4})}) != G::signature(adam, batch));
}

namespace {
// A GAN-shaped updater: its own update_core steps two optimizers, "gen" and "dis", each of which
// reports its loss as its target (chainer.report(..., gen)); no optimizer is called "main".
struct TwoOptimizerUpdater : training::StandardUpdater {
  using StandardUpdater::StandardUpdater;
  void update_core() override {
    const std::vector<Tensor> batch = get_iterator("main").next_batch();
    for (const char* name : {"gen", "dis"}) {
      Optimizer& opt = get_optimizer(name);
      auto& net = static_cast<Net&>(opt.target());
      opt.update([&] {
        Variable loss = F::softmax_cross_entropy(net(Variable(batch[0])), Variable(batch[1]));
        report({{"loss", loss}}, &net);
        return loss;
      });
    }
  }
};
}  // namespace

TEST_CASE("training: an updater that overrides update_core needs no 'main' optimizer; each reports under its own name") {
  TempDir dir("two_optimizers");
  random::seed(0);
  auto it = std::make_shared<iterators::SerialIterator>(make_dataset(64, 1), 16, true, true, 7);
  std::map<std::string, std::shared_ptr<Optimizer>> optimizers;
  for (const char* name : {"gen", "dis"}) {
    auto opt = std::make_shared<optimizers::Adam>();
    opt->setup(std::make_shared<Net>(8, 0.0));
    optimizers[name] = opt;
  }
  auto updater = std::make_shared<TwoOptimizerUpdater>(
      std::map<std::string, std::shared_ptr<iterators::Iterator>>{{"main", it}}, optimizers);
  Trainer trainer(updater, IntervalTrigger(2, Unit::Epoch), dir.path.string());
  auto log = std::make_shared<E::LogReport>();
  trainer.extend(log);
  trainer.run();
  REQUIRE(log->log().size() == 2);
  const std::set<std::string> keys = keys_of(log->log()[0]);
  CHECK(keys.count("gen/loss") == 1);
  CHECK(keys.count("dis/loss") == 1);
}

TEST_CASE("training: the default update_core without a 'main' optimizer names the ones registered") {
  auto it = std::make_shared<iterators::SerialIterator>(make_dataset(32, 1), 16, true, true, 7);
  auto opt = std::make_shared<optimizers::Adam>();
  opt->setup(std::make_shared<L::Classifier>(std::make_shared<Net>(8, 0.0)));
  training::StandardUpdater updater(std::map<std::string, std::shared_ptr<iterators::Iterator>>{{"main", it}},
                                    std::map<std::string, std::shared_ptr<Optimizer>>{{"dis", opt}});
  REQUIRE_THROWS_WITH(updater.update(), Catch::Contains("the default update_core needs an optimizer registered as "
                                                        "'main', and there is none (registered: dis)"));
  CHECK(it->epoch_detail() == 0);  // no batch was taken
  REQUIRE_THROWS_WITH(training::StandardUpdater(it, nullptr), Catch::Contains("optimizer 'main' is null"));
}

TEST_CASE("training: a second optimizer over the main model's links leaves the main entries of the log where they are") {
  TempDir dir("shared_links");
  Setup s(make_dataset(64, 1), nullptr, 16, IntervalTrigger(1, Unit::Epoch), dir.path);
  // "second" sorts after "main" and reaches the same links: the log keeps "main/loss".
  auto second = std::make_shared<optimizers::Adam>();
  second->setup(s.model);
  auto updater = std::make_shared<training::StandardUpdater>(
      std::map<std::string, std::shared_ptr<iterators::Iterator>>{{"main", s.train_iter}},
      std::map<std::string, std::shared_ptr<Optimizer>>{{"main", s.optimizer}, {"second", second}});
  Trainer trainer(updater, IntervalTrigger(1, Unit::Epoch), dir.path.string());
  auto log = std::make_shared<E::LogReport>();
  trainer.extend(log);
  trainer.run();
  REQUIRE(log->log().size() == 1);
  const std::set<std::string> keys = keys_of(log->log()[0]);
  CHECK(keys.count("main/loss") == 1);
  CHECK(keys.count("second/loss") == 0);
}

// =============================================================================================
// Gradient accumulation (UpdaterOptions::micro_batches)

namespace {

// Records when the optimizer's gradient sync goes off and on (no_sync guards).
struct SyncSpy : optimizers::MomentumSGD {
  std::vector<std::string>* events;
  explicit SyncSpy(std::vector<std::string>* e) : MomentumSGD(0.1, 0.9), events(e) {}
  void grad_sync_changed(bool sync) override { events->push_back(sync ? "sync" : "no_sync"); }
};

// Six updates with batches of 12 (seeded shuffle, no dropout) whose batches are split into MICRO
// micro-batches: the final parameters, each iteration's observation, and the batch size of every
// forward.
struct MicroRun {
  std::shared_ptr<L::Classifier> model;
  std::shared_ptr<Optimizer> optimizer;
  std::vector<Observation> observations;
  std::vector<int64_t> sizes;
  double epoch_detail = 0;
  int64_t iteration = 0;
};
MicroRun run_micro(const std::string& optimizer, int micro, std::optional<double> loss_scale = std::nullopt) {
  TempDir dir("micro");
  random::seed(0);
  MicroRun r;
  r.model = std::make_shared<L::Classifier>(std::make_shared<Net>(16, 0.0));
  if (optimizer == "adam") r.optimizer = std::make_shared<optimizers::Adam>(0.01);
  else r.optimizer = std::make_shared<optimizers::MomentumSGD>(0.1, 0.9);
  r.optimizer->setup(r.model);
  if (loss_scale) r.optimizer->loss_scaling(1000, *loss_scale);
  auto it = std::make_shared<iterators::SerialIterator>(make_dataset(30, 3), 12, true, true, 7);
  training::UpdaterOptions options;
  options.micro_batches = micro;
  auto updater = std::make_shared<training::StandardUpdater>(
      it, r.optimizer,
      [&](const std::vector<Variable>& in) {
        r.sizes.push_back(in.at(0).shape()[0]);
        return r.model->forward_args(in).at(0);
      },
      options);
  Trainer trainer(updater, IntervalTrigger(6, Unit::Iteration), dir.path.string());
  auto recorder = std::make_shared<Recorder>();
  trainer.extend(recorder, "", IntervalTrigger(1, Unit::Iteration));
  trainer.run();
  r.observations = recorder->observations;
  r.epoch_detail = updater->epoch_detail();
  r.iteration = updater->iteration();
  return r;
}

// max over parameters of max |a - b| / max |b|.
double relative_difference(const Link& a, const Link& b) {
  const auto pa = a.namedparams(), pb = b.namedparams();
  if (pa.size() != pb.size()) return INFINITY;
  double worst = 0;
  for (size_t i = 0; i < pa.size(); ++i) {
    const auto va = pa[i].second.data().to_vector<double>(), vb = pb[i].second.data().to_vector<double>();
    if (va.size() != vb.size()) return INFINITY;
    double diff = 0, scale = 1e-30;
    for (size_t j = 0; j < va.size(); ++j) {
      diff = std::max(diff, std::abs(va[j] - vb[j]));
      scale = std::max(scale, std::abs(vb[j]));
    }
    worst = std::max(worst, diff / scale);
  }
  return worst;
}

}  // namespace

TEST_CASE("training: micro_batches splits each batch; updates and reported means equal the whole batch's") {
  for (const std::string optimizer : {"adam", "momentum"}) {
    const MicroRun whole = run_micro(optimizer, 1);
    REQUIRE(whole.sizes == std::vector<int64_t>(6, 12));
    // 12 examples in 3 (4 each), in 5 (numpy.array_split: 3, 3, 2, 2, 2), in 16 (12 of one: no empty one).
    for (const auto& [micro, sizes] : std::vector<std::pair<int, std::vector<int64_t>>>{
             {3, {4, 4, 4}}, {5, {3, 3, 2, 2, 2}}, {16, std::vector<int64_t>(12, 1)}}) {
      CAPTURE(optimizer, micro);
      const MicroRun split = run_micro(optimizer, micro);
      std::vector<int64_t> expected;
      for (int i = 0; i < 6; ++i) expected.insert(expected.end(), sizes.begin(), sizes.end());
      CHECK(split.sizes == expected);
      // One update per batch: the same iterations, epochs and optimizer steps.
      CHECK(split.iteration == 6);
      CHECK(split.epoch_detail == whole.epoch_detail);
      CHECK(split.optimizer->t() == 6);
      // The large batch's update, to float rounding (the parameters have moved: not trivially equal).
      CHECK(relative_difference(*split.model, *whole.model) < 1e-5);
      // Reported once per iteration, as the whole batch's loss and accuracy.
      REQUIRE(split.observations.size() == 6);
      for (size_t i = 0; i < 6; ++i) {
        CAPTURE(i);
        for (const char* key : {"main/loss", "main/accuracy"}) {
          REQUIRE(split.observations[i].count(key) == 1);
          CHECK(split.observations[i].at(key).value() ==
                Approx(whole.observations[i].at(key).value()).epsilon(1e-5).margin(1e-6));
        }
      }
    }
  }
}

TEST_CASE("training: StandardUpdater backpropagates the optimizer's loss scale, also in micro-batches") {
  // A power of two: the scaled gradients divided by it are the plain ones exactly, so the runs
  // agree bit for bit; had the updater not scaled the loss, the steps would be 1024 times smaller.
  for (const int micro : {1, 3}) {
    CAPTURE(micro);
    const MicroRun plain = run_micro("adam", micro), scaled = run_micro("adam", micro, 1024.0);
    CHECK(scaled.optimizer->loss_scale() == 1024);
    CHECK(relative_difference(*scaled.model, *plain.model) == 0);
  }
}

TEST_CASE("training: with micro_batches every backward but the last runs inside the optimizer's no_sync") {
  std::vector<std::string> events;
  random::seed(0);
  auto model = std::make_shared<L::Classifier>(std::make_shared<Net>(8, 0.0));
  auto opt = std::make_shared<SyncSpy>(&events);
  opt->setup(model);
  auto it = std::make_shared<iterators::SerialIterator>(make_dataset(12, 1), 12, true, false);
  training::UpdaterOptions options;
  options.micro_batches = 3;
  training::StandardUpdater updater(
      it, opt,
      [&](const std::vector<Variable>& in) {
        events.push_back(opt->grad_sync() ? "forward" : "forward (no_sync)");
        return model->forward_args(in).at(0);
      },
      options);
  updater.update();
  // The last forward also runs inside it; the guard ends before the last backward.
  CHECK(events == std::vector<std::string>{"no_sync", "forward (no_sync)", "forward (no_sync)", "forward (no_sync)",
                                           "sync"});
  CHECK(opt->grad_sync());
  CHECK(opt->t() == 1);
  // One micro-batch: no guard at all.
  events.clear();
  options.micro_batches = 1;
  training::StandardUpdater plain(it, opt, [&](const std::vector<Variable>& in) {
    events.push_back(opt->grad_sync() ? "forward" : "forward (no_sync)");
    return model->forward_args(in).at(0);
  }, options);
  plain.update();
  CHECK(events == std::vector<std::string>{"forward"});
}

TEST_CASE("training: no_sync on a plain optimizer nests and changes nothing; micro_batches below 1 is refused") {
  std::vector<std::string> events;
  SyncSpy opt(&events);
  CHECK(opt.grad_sync());
  {
    auto outer = opt.no_sync();
    CHECK_FALSE(opt.grad_sync());
    {
      auto inner = opt.no_sync();
      CHECK_FALSE(opt.grad_sync());
    }
    CHECK_FALSE(opt.grad_sync());
  }
  CHECK(opt.grad_sync());
  CHECK(events == std::vector<std::string>{"no_sync", "sync"});  // once each way

  auto model = std::make_shared<L::Classifier>(std::make_shared<Net>(8, 0.0));
  auto adam = std::make_shared<optimizers::Adam>();
  adam->setup(model);
  auto it = std::make_shared<iterators::SerialIterator>(make_dataset(12, 1), 4);
  training::UpdaterOptions options;
  options.micro_batches = 0;
  REQUIRE_THROWS_WITH(training::StandardUpdater(it, adam, nullptr, options),
                      Catch::Contains("StandardUpdater: micro_batches must be at least 1 (the micro-batches each batch "
                                      "is split into), got 0"));
}

TEST_CASE("training: micro_batches refuses a batch whose arrays it cannot split along their first axis") {
  // An iterator whose batches carry one more array, a scalar, besides the stacked fields.
  struct WithScalar : iterators::SerialIterator {
    using SerialIterator::SerialIterator;
    std::vector<Tensor> next_batch() override {
      std::vector<Tensor> b = SerialIterator::next_batch();
      b.push_back(Tensor::scalar(1.0));
      return b;
    }
  };
  auto model = std::make_shared<L::Classifier>(std::make_shared<Net>(8, 0.0));
  auto adam = std::make_shared<optimizers::Adam>();
  adam->setup(model);
  training::UpdaterOptions options;
  options.micro_batches = 2;
  training::StandardUpdater updater(
      std::make_shared<WithScalar>(make_dataset(12, 1), 4), adam,
      [&](const std::vector<Variable>& in) { return model->forward_args({in.at(0), in.at(1)}).at(0); }, options);
  REQUIRE_THROWS_WITH(updater.update(), Catch::Contains("StandardUpdater: micro_batches splits every array of a batch "
                                                        "along its first axis, but array 2 has shape ()"));
  CHECK(adam->t() == 0);
}
