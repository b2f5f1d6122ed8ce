#include <catch2/catch.hpp>

#include "catch_session.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>

#include "core/io/npz.h"
#include "datasets/image_io.h"
#include "training/training.h"

using namespace chainer;
namespace E = chainer::training::extensions;
namespace fs = std::filesystem;
using training::IntervalTrigger;
using training::Trainer;
using training::Unit;
using Points = std::vector<std::pair<double, double>>;

namespace {

// An updater with no model: iteration I reports SCRIPT(I); PER_EPOCH iterations make an epoch.
struct ScriptedUpdater : training::Updater {
  int64_t per_epoch;
  std::function<Observation(int64_t)> script;
  int64_t iteration_ = 0;
  ScriptedUpdater(int64_t n, std::function<Observation(int64_t)> s) : per_epoch(n), script(std::move(s)) {}
  void update() override { report(script(++iteration_)); }
  int64_t iteration() const override { return iteration_; }
  int64_t epoch() const override { return iteration_ / per_epoch; }
  double epoch_detail() const override { return double(iteration_) / double(per_epoch); }
  bool is_new_epoch() const override { return iteration_ % per_epoch == 0; }
  Optimizer& get_optimizer(const std::string& name) override { throw Error("no optimizer " + name); }
  std::map<std::string, Optimizer*> get_all_optimizers() override { return {}; }
  iterators::Iterator& get_iterator(const std::string& name) override { throw Error("no iterator " + name); }
  void serialize(Serializer& s) override { s.value("iteration", iteration_); }
};

// Four iterations an epoch. main/loss: epoch e's iterations report MEANS[e-1] -1, +1, -1, +1, so
// the epoch's mean is MEANS[e-1]; validation/main/loss: VALIDATION[e-1] once, in the epoch's last
// iteration (as an evaluator), from epoch FIRST_VALIDATION on.
std::shared_ptr<ScriptedUpdater> scripted(std::vector<double> means, std::vector<double> validation = {},
                                          int64_t first_validation = 1) {
  return std::make_shared<ScriptedUpdater>(4, [=](int64_t it) {
    const size_t e = size_t((it - 1) / 4);
    Observation o{{"main/loss", means.at(e) + (it % 2 ? -1.0 : 1.0)}};
    if (it % 4 == 0 && !validation.empty() && int64_t(e) + 1 >= first_validation)
      o["validation/main/loss"] = validation.at(e);
    return o;
  });
}

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) {
    path = fs::temp_directory_path() / ("chainer_test_plot_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// The figure's documented layout (plot_figure.h): the axes' inner box in pixels, and an axis
// range of the data's widened by 5% at each end.
struct Axes {
  double x0, x1, y0, y1;
  double column(double x) const { return 80 + (x - x0) / (x1 - x0) * (576 - 80); }
  double row(double y) const { return 427.2 - (y - y0) / (y1 - y0) * (427.2 - 57.6); }
};
Axes axes_for(double xmin, double xmax, double ymin, double ymax) {
  return {xmin - 0.05 * (xmax - xmin), xmax + 0.05 * (xmax - xmin), ymin - 0.05 * (ymax - ymin),
          ymax + 0.05 * (ymax - ymin)};
}

struct Image {
  Tensor pixels;  // (3, H, W) uint8
  std::vector<uint8_t> v;
  int64_t h, w;
  explicit Image(const fs::path& path) : pixels(datasets::read_image(path.string(), DType::UInt8)) {
    REQUIRE(pixels.shape().size() == 3);
    REQUIRE(pixels.shape()[0] == 3);
    h = pixels.shape()[1];
    w = pixels.shape()[2];
    v = pixels.to_vector<uint8_t>();
  }
  bool is(int64_t row, int64_t col, unsigned rgb) const {
    for (int c = 0; c < 3; ++c)
      if (std::abs(int(v[size_t((c * h + row) * w + col)]) - int((rgb >> (16 - 8 * c)) & 255)) > 8) return false;
    return true;
  }
  // The rows of COL whose pixel is RGB, top to bottom.
  std::vector<int64_t> rows(int64_t col, unsigned rgb) const {
    std::vector<int64_t> r;
    for (int64_t y = 0; y < h; ++y)
      if (is(y, col, rgb)) r.push_back(y);
    return r;
  }
};

constexpr unsigned kBlue = 0x1f77b4, kOrange = 0xff7f0e;  // matplotlib's first two line colours

double centre(const std::vector<int64_t>& rows) {
  double sum = 0;
  for (int64_t r : rows) sum += double(r) + 0.5;  // a pixel's centre
  return sum / double(rows.size());
}

}  // namespace

// Builds without cairo: PlotReport warns (once, at construction) and does nothing, as Chainer's
// without matplotlib; the other cases return early.
TEST_CASE("PlotReport: without cairo it plots nothing", "[no-cairo]") {
  SKIP_UNLESS(!E::PlotReport::available(), "built with cairo: the case for a build without it");
  TempDir dir("unavailable");
  Trainer trainer(scripted({2, 3}), IntervalTrigger(2, Unit::Epoch), dir.path.string());
  auto plot = std::make_shared<E::PlotReport>(std::vector<std::string>{"main/loss"}, "epoch");
  trainer.extend(plot);
  trainer.run();
  CHECK(plot->data().at("main/loss").empty());
  CHECK_FALSE(fs::exists(dir.path / "plot.png"));
  CHECK_THROWS_WITH(E::save_plot_png(E::PlotFigure{}, (dir.path / "f.png").string()), Catch::Contains("no cairo"));
}

TEST_CASE("PlotReport: each key's epoch means are drawn where the axes put them", "[cairo]") {
  SKIP_UNLESS(E::PlotReport::available(), "built without cairo (libcairo2-dev)");
  TempDir dir("draw");
  Trainer trainer(scripted({2, 2, 5, 1, 1}, {3, 3, 3, 3, 3}), IntervalTrigger(5, Unit::Epoch), dir.path.string());
  auto plot = std::make_shared<E::PlotReport>(std::vector<std::string>{"main/loss", "validation/main/loss"}, "epoch",
                                              IntervalTrigger(1, Unit::Epoch), E::PlotReport::Postprocess{},
                                              "loss.png", "");
  trainer.extend(plot);
  trainer.run();

  REQUIRE(plot->data().at("main/loss") == Points{{1, 2}, {2, 2}, {3, 5}, {4, 1}, {5, 1}});
  REQUIRE(plot->data().at("validation/main/loss") == Points{{1, 3}, {2, 3}, {3, 3}, {4, 3}, {5, 3}});
  REQUIRE(fs::exists(dir.path / "loss.png"));
  REQUIRE_FALSE(fs::exists(dir.path / "loss.png.tmp"));

  const Image image(dir.path / "loss.png");
  CHECK(image.h == 480);
  CHECK(image.w > 640);  // the legend stands right of the axes and widens the figure
  CHECK(image.w < 900);
  const Axes a = axes_for(1, 5, 1, 5);
  auto col = [&](double x) { return int64_t(std::floor(a.column(x))); };
  // Flat ends of main/loss: just inside the first and last points, the line's rows centre on the mean.
  CHECK(centre(image.rows(col(1) + 4, kBlue)) == Approx(a.row(2)).margin(1.0));
  CHECK(centre(image.rows(col(5) - 4, kBlue)) == Approx(a.row(1)).margin(1.0));
  CHECK(centre(image.rows(col(1.5), kBlue)) == Approx(a.row(2)).margin(1.0));
  // The peak at epoch 3: the line's top there is the mean's row (less half the line's width).
  const std::vector<int64_t> peak = image.rows(col(3), kBlue);
  REQUIRE_FALSE(peak.empty());
  CHECK(double(peak.front()) == Approx(a.row(5) - 1).margin(1.5));
  // validation/main/loss, in the second colour, flat at 3.
  for (double x : {1.2, 2.0, 4.5}) CHECK(centre(image.rows(col(x), kOrange)) == Approx(a.row(3)).margin(1.0));
  // Nothing of either line outside the axes' columns, none above or below the data's rows.
  for (int64_t x = 0; x < 80; ++x) CHECK(image.rows(x, kBlue).empty());
  for (int64_t x = col(1.2); x < col(4.8); ++x)
    for (int64_t r : image.rows(x, kBlue)) CHECK((r >= int64_t(a.row(5)) - 2 && r <= int64_t(a.row(1)) + 2));
  // The legend's line samples, right of the axes, in the two colours.
  bool blue = false, orange = false;
  for (int64_t x = 600; x < image.w; ++x) {
    blue = blue || !image.rows(x, kBlue).empty();
    orange = orange || !image.rows(x, kOrange).empty();
  }
  CHECK(blue);
  CHECK(orange);
}

TEST_CASE("PlotReport: against the iteration by default, with the means of each interval", "[cairo]") {
  SKIP_UNLESS(E::PlotReport::available(), "built without cairo (libcairo2-dev)");
  TempDir dir("iteration");
  Trainer trainer(scripted({4, 6, 8}), IntervalTrigger(3, Unit::Epoch), dir.path.string());
  auto plot = std::make_shared<E::PlotReport>(std::vector<std::string>{"main/loss"});
  auto every2 = std::make_shared<E::PlotReport>(std::vector<std::string>{"main/loss"}, "iteration",
                                                IntervalTrigger(2, Unit::Iteration), E::PlotReport::Postprocess{},
                                                "every2.png");
  trainer.extend(plot);
  trainer.extend(every2);
  trainer.run();
  CHECK(plot->data().at("main/loss") == Points{{4, 4}, {8, 6}, {12, 8}});
  // Two iterations (one -1, one +1) average to the epoch's mean.
  CHECK(every2->data().at("main/loss") == Points{{2, 4}, {4, 4}, {6, 6}, {8, 6}, {10, 8}, {12, 8}});
  CHECK(fs::exists(dir.path / "plot.png"));  // Chainer's default file name
  CHECK(fs::exists(dir.path / "every2.png"));
}

TEST_CASE("PlotReport: keys not reported yet are left out; no file until one has a point", "[cairo]") {
  SKIP_UNLESS(E::PlotReport::available(), "built without cairo (libcairo2-dev)");
  TempDir dir("missing");
  Trainer trainer(scripted({2, 3, 4}, {1, 1, 1}, 3), IntervalTrigger(3, Unit::Epoch), dir.path.string());
  auto plot = std::make_shared<E::PlotReport>(std::vector<std::string>{"validation/main/loss", "never/reported"},
                                              "epoch", IntervalTrigger(1, Unit::Epoch), E::PlotReport::Postprocess{},
                                              "validation.png");
  auto none = std::make_shared<E::PlotReport>(std::vector<std::string>{"never/reported"}, "epoch",
                                              IntervalTrigger(1, Unit::Epoch), E::PlotReport::Postprocess{},
                                              "none.png");
  bool existed_before_epoch_3 = true;
  trainer.extend(plot);
  trainer.extend(none);
  trainer.extend([&](Trainer& t) {
    if (t.updater().iteration() == 8) existed_before_epoch_3 = fs::exists(dir.path / "validation.png");
  });
  trainer.run();
  CHECK_FALSE(existed_before_epoch_3);
  CHECK(plot->data().at("validation/main/loss") == Points{{3, 1}});
  CHECK(plot->data().at("never/reported").empty());
  CHECK(fs::exists(dir.path / "validation.png"));
  CHECK_FALSE(fs::exists(dir.path / "none.png"));
}

TEST_CASE("PlotReport: postprocess sees the means and changes the figure before it is drawn", "[cairo]") {
  SKIP_UNLESS(E::PlotReport::available(), "built without cairo (libcairo2-dev)");
  TempDir dir("postprocess");
  Trainer trainer(scripted({2, 4}), IntervalTrigger(2, Unit::Epoch), dir.path.string());
  std::vector<Observation> seen;
  auto post = [&](E::PlotFigure& figure, const Observation& means) {
    seen.push_back(means);
    CHECK(figure.x_label == "epoch");
    CHECK(figure.series.size() == 1);
    figure.y_limits = std::pair{0.0, 10.0};
    figure.title = "loss";
  };
  trainer.extend(std::make_shared<E::PlotReport>(std::vector<std::string>{"main/loss"}, "epoch",
                                                 IntervalTrigger(1, Unit::Epoch), post, "post.png", ""));
  trainer.run();
  REQUIRE(seen.size() == 2);
  CHECK(seen[1].at("main/loss") == 4.0);
  CHECK(seen[1].at("epoch") == 2.0);
  CHECK(seen[1].at("iteration") == 8.0);
  // The y range it set: 0..10 over the axes' height.
  const Image image(dir.path / "post.png");
  const Axes a{0.95, 2.05, 0, 10};
  for (int64_t c = int64_t(a.column(1)) + 4; c < int64_t(a.column(2)) - 4; c += 50) {
    const double x = a.x0 + (double(c) + 0.5 - 80) / (576 - 80) * (a.x1 - a.x0);  // the column's centre
    CHECK(centre(image.rows(c, kBlue)) == Approx(a.row(2 + 2 * (x - 1))).margin(1.0));
  }
}

TEST_CASE("PlotReport: a resumed run's figure continues the curve", "[cairo]") {
  SKIP_UNLESS(E::PlotReport::available(), "built without cairo (libcairo2-dev)");
  TempDir dir("resume");
  const std::vector<double> means{5, 4, 3, 2};
  auto make = [&](int64_t epochs, const std::string& out, std::shared_ptr<E::PlotReport>& plot) {
    auto t = std::make_unique<Trainer>(scripted(means), IntervalTrigger(double(epochs), Unit::Epoch),
                                       (dir.path / out).string());
    // Every 6 iterations: the snapshot at iteration 8 falls inside an interval, whose means it keeps.
    plot = std::make_shared<E::PlotReport>(std::vector<std::string>{"main/loss"}, "iteration",
                                           IntervalTrigger(6, Unit::Iteration));
    t->extend(plot);
    t->extend(E::snapshot("snapshot_epoch_{.updater.epoch}"), "", IntervalTrigger(1, Unit::Epoch));
    return t;
  };
  std::shared_ptr<E::PlotReport> straight, first, resumed;
  make(4, "a", straight)->run();
  make(2, "b", first)->run();
  auto b = make(4, "b", resumed);
  const TensorMap saved = load_npz((dir.path / "b" / "snapshot_epoch_2").string());
  CHECK(saved.count("extensions/PlotReport/_plot_plot.png") == 1);  // Chainer's key
  training::load_snapshot((dir.path / "b" / "snapshot_epoch_2").string(), *b);
  CHECK(resumed->data() == first->data());
  b->run();
  CHECK(straight->data().at("main/loss") == Points{{6, 14.0 / 3}, {12, 10.0 / 3}});
  CHECK(resumed->data() == straight->data());
}

TEST_CASE("PlotReport: its data as Chainer's JSON, read back exactly") {
  const std::map<std::string, Points> data{{"main/loss", {{1, 0.1234567890123}, {2, NAN}, {3, -INFINITY}}},
                                           {"we\"ird\\key", {}},
                                           {"validation/main/loss", {{1e20, -2.5e-7}}}};
  const std::string text = E::PlotReport::to_json(data);
  const auto back = E::PlotReport::from_json(text);
  REQUIRE(back.size() == 3);
  CHECK(back.at("we\"ird\\key").empty());
  CHECK(back.at("validation/main/loss") == data.at("validation/main/loss"));
  CHECK(back.at("main/loss")[0] == data.at("main/loss")[0]);
  CHECK(std::isnan(back.at("main/loss")[1].second));
  CHECK(back.at("main/loss")[2].second == -INFINITY);
  CHECK(E::PlotReport::to_json({{"main/loss", {{1, 0.5}, {2, 0.25}}}}) == R"({"main/loss": [[1, 0.5], [2, 0.25]]})");
  // What Python's json.dumps writes for Chainer's data.
  CHECK(E::PlotReport::from_json(R"({"main/loss": [[1, 0.5], [2, 0.25]], "validation/main/loss": []})") ==
        std::map<std::string, Points>{{"main/loss", {{1, 0.5}, {2, 0.25}}}, {"validation/main/loss", {}}});
  CHECK(E::PlotReport::from_json("{}").empty());
  CHECK_THROWS_WITH(E::PlotReport::from_json(R"({"main/loss": [[1, 0.5]})"),
                    Catch::Contains("PlotReport") && Catch::Contains("corrupt"));
  CHECK_THROWS_AS(E::PlotReport::from_json(""), Error);
}

TEST_CASE("PlotReport: an unknown marker is an error naming it and the markers expected") {
  CHECK_THROWS_WITH(E::PlotReport({"main/loss"}, "epoch", IntervalTrigger(1, Unit::Epoch), {}, "plot.png", "q"),
                    Catch::Contains("PlotReport") && Catch::Contains("'q'") && Catch::Contains("x, +, o"));
}

TEST_CASE("PlotReport: errors while drawing name the x key, the path and the bad limits", "[cairo]") {
  SKIP_UNLESS(E::PlotReport::available(), "built without cairo (libcairo2-dev)");
  TempDir dir("errors");
  {
    Trainer trainer(scripted({1, 2}), IntervalTrigger(2, Unit::Epoch), dir.path.string());
    trainer.extend(std::make_shared<E::PlotReport>(std::vector<std::string>{"main/loss"}, "elapsed"));
    CHECK_THROWS_WITH(trainer.run(), Catch::Contains("PlotReport") && Catch::Contains("'elapsed'") &&
                                         Catch::Contains("not reported"));
  }
  {
    Trainer trainer(scripted({1, 2}), IntervalTrigger(2, Unit::Epoch), dir.path.string());
    trainer.extend(std::make_shared<E::PlotReport>(std::vector<std::string>{"main/loss"}, "epoch",
                                                   IntervalTrigger(1, Unit::Epoch), E::PlotReport::Postprocess{},
                                                   "no_such_dir/plot.png"));
    CHECK_THROWS_WITH(trainer.run(), Catch::Contains((dir.path / "no_such_dir" / "plot.png").string()) &&
                                         Catch::Contains("No such file or directory"));
  }
  E::PlotFigure figure;
  figure.series = {{"a", {{0, 0}, {1, 1}}}};
  figure.y_limits = std::pair{1.0, 1.0};
  CHECK_THROWS_WITH(E::save_plot_png(figure, (dir.path / "f.png").string()),
                    Catch::Contains("y_limits") && Catch::Contains("increasing"));
  figure.y_limits.reset();
  figure.marker = "*";
  CHECK_THROWS_WITH(E::save_plot_png(figure, (dir.path / "f.png").string()), Catch::Contains("'*'"));
}

TEST_CASE("save_plot_png: 640 x 480 without a legend, wider for a longer one; any data draw", "[cairo]") {
  SKIP_UNLESS(E::plot_png_available(), "built without cairo (libcairo2-dev)");
  TempDir dir("figure");
  E::PlotFigure empty;
  E::save_plot_png(empty, (dir.path / "empty.png").string());
  const Image e(dir.path / "empty.png");
  CHECK(e.h == 480);
  CHECK(e.w == 640);

  E::PlotFigure f;
  f.series = {{"short", {{0, 1}}}};
  E::save_plot_png(f, (dir.path / "short.png").string());
  f.series = {{"a much longer label for the legend", {{0, 1}}}};
  E::save_plot_png(f, (dir.path / "long.png").string());
  CHECK(Image(dir.path / "long.png").w > Image(dir.path / "short.png").w);

  // Every marker, a single point, a constant, non-finite values, huge and tiny numbers.
  for (const std::string& marker : E::plot_markers()) {
    E::PlotFigure g;
    g.marker = marker;
    g.grid = marker.empty();
    g.x_label = "iteration";
    g.y_label = "loss";
    g.series = {{"constant", {{1e7, 3}, {2e7, 3}, {3e7, NAN}, {4e7, 3}}},
                {"tiny", {{1e7, 1e-9}, {4e7, -1e-9}}},
                {"nan", {{NAN, NAN}}}};
    const fs::path path = dir.path / ("m" + std::to_string(marker.size()) + ".png");
    E::save_plot_png(g, path.string());
    CHECK(Image(path).h == 480);
  }
}

// Not a check: prints the time one figure takes (run it by name).
TEST_CASE("PlotReport: how long one figure takes to draw", "[.timing]") {
  SKIP_UNLESS(E::plot_png_available(), "built without cairo (libcairo2-dev)");
  TempDir dir("time");
  E::PlotFigure f;
  f.x_label = "epoch";
  for (const char* key : {"main/loss", "validation/main/loss"}) {
    Points points;
    for (int i = 1; i <= 100; ++i) points.emplace_back(i, 1.0 / i);
    f.series.push_back({key, points});
  }
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i) E::save_plot_png(f, (dir.path / "t.png").string());
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / 10;
  WARN("one 2-line, 100-point figure: " << ms << " ms");
}
