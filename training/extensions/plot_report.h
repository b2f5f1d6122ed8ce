/// @file
/// PlotReport, as Chainer's: averages the y keys' values between firings of its trigger, and
/// at each firing appends each key's mean, against x_key, to its data and redraws
/// `<out>/<filename>` as a PNG line chart (plot_figure.h: the layout and the library). Keys not
/// reported yet are left out of the figure, and no file is written until one has a point, as
/// in Chainer. The data go into snapshots (as Chainer's `_plot_<filename>`, JSON), so a resumed
/// run's figure continues its curves.
///
/// Drawing needs cairo at build time: PlotReport::available() says whether this build has it.
/// Without it a PlotReport warns once and does nothing, as Chainer's does without matplotlib.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "nn/reporter.h"
#include "training/extension.h"
#include "training/extensions/plot_figure.h"

namespace chainer::training::extensions {

/// Plots the means of reported values against the epoch, the iteration or another key, as a PNG.
class PlotReport : public Extension {
 public:
  /// Called before each drawing with the figure (which it may change) and the means this firing
  /// plots (with "epoch" and "iteration"), as Chainer's postprocess(figure, axes, summary).
  using Postprocess = std::function<void(PlotFigure& figure, const Observation& means)>;

  /// Plots Y_KEYS (one line each; none: nothing is drawn) against X_KEY ("epoch", "iteration"
  /// or a reported key, averaged like the y keys) at each firing of TRIGGER, to FILENAME in the
  /// trainer's output directory, with MARKER at each point (one of plot_markers()) and a grid
  /// when GRID is set. Throws chainer::Error naming an unknown marker.
  explicit PlotReport(std::vector<std::string> y_keys, std::string x_key = "iteration",
                      IntervalTrigger trigger = IntervalTrigger(1, Unit::Epoch), Postprocess postprocess = {},
                      std::string filename = "plot.png", std::string marker = "x", bool grid = true);
  /// Whether this build can plot (it found cairo), as Chainer's `PlotReport.available()`.
  static bool available();
  /// Adds this iteration's values to the means and, when its trigger fires, adds a point per key
  /// and redraws the file. Throws chainer::Error when X_KEY was not reported (naming it) or the
  /// file cannot be written (naming the path and the reason).
  void operator()(Trainer& trainer) override;
  std::string default_name() const override { return "PlotReport"; }
  /// Saves or restores the points (`_plot_<filename>`), the means so far and the trigger's position.
  void serialize(Serializer& s) override;

  /// The points so far, (x, mean) per firing, by y key.
  const std::map<std::string, std::vector<std::pair<double, double>>>& data() const { return data_; }
  /// DATA as Chainer writes it into snapshots: `{"key": [[x, y], ...], ...}`.
  static std::string to_json(const std::map<std::string, std::vector<std::pair<double, double>>>& data);
  /// Reads back what to_json writes (and Chainer's json.dumps of the same); throws chainer::Error when corrupt.
  static std::map<std::string, std::vector<std::pair<double, double>>> from_json(const std::string& text);

 private:
  std::vector<std::string> y_keys_;
  std::string x_key_;
  IntervalTrigger trigger_;
  Postprocess postprocess_;
  std::string filename_;
  std::string marker_;
  bool grid_;
  DictSummary summary_;
  std::map<std::string, std::vector<std::pair<double, double>>> data_;
};

}  // namespace chainer::training::extensions
