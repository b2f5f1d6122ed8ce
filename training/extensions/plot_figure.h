/// @file
/// PlotFigure: the line chart PlotReport draws (one line per series over a shared x axis, with
/// markers, grid and legend), and save_plot_png, which writes it as a PNG through cairo.
///
/// The layout is fixed, so that what a reader finds in the pixels follows from the data alone:
/// the image is 480 pixels high and at least 640 wide (matplotlib's default figure, 6.4 x 4.8
/// inches at 100 dpi); the axes' inner box runs from x = 80 to 576 and from y = 57.6 (top) to
/// 427.2 (bottom), where matplotlib's default subplot puts it; the legend stands to the right of
/// the axes, as Chainer's `bbox_to_anchor=(1.05, 1)`, and the image widens to fit it (as
/// Chainer's `bbox_inches='tight'` does). Unless set, an axis shows the finite data's range
/// widened by 5% at each end (matplotlib's default margins), and a single value v shows
/// v - 5%|v| .. v + 5%|v| (-0.05 .. 0.05 for 0); with no data at all, 0 .. 1.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace chainer::training::extensions {

/// One line of a figure: its points in the order they are joined, and its legend entry.
struct PlotSeries {
  std::string label;  ///< The legend's text for this line.
  std::vector<std::pair<double, double>> points;  ///< (x, y) pairs; a non-finite one breaks the line.
};

/// What a figure shows. PlotReport fills one at each plot and hands it to its postprocess
/// callback, which may change anything before it is drawn.
struct PlotFigure {
  std::vector<PlotSeries> series;  ///< The lines, drawn in matplotlib's colour cycle (tab10) in this order.
  std::string x_label;  ///< Under the x axis (PlotReport: its x_key).
  std::string y_label;  ///< Beside the y axis (PlotReport: none, as Chainer's).
  std::string title;  ///< Above the axes (PlotReport: none, as Chainer's).
  std::string marker = "x";  ///< Drawn at each point: one of plot_markers(); "" for none.
  bool grid = true;  ///< Grey lines at the ticks of both axes.
  std::optional<std::pair<double, double>> x_limits;  ///< The x range shown; unset: from the data (see above).
  std::optional<std::pair<double, double>> y_limits;  ///< The y range shown; unset: from the data (see above).
};

/// The markers a figure can draw, as matplotlib names them: "x", "+", "o", ".", "s" (square),
/// "^" (triangle), "*" (star), and "" for none.
const std::vector<std::string>& plot_markers();

/// Whether this build can draw figures: it found cairo when it was configured.
bool plot_png_available();

/// Draws FIGURE and writes it to PATH as an RGB PNG, in the layout above. The file appears
/// whole or not at all (written beside it, then renamed). Throws chainer::Error naming the
/// path and the reason when it cannot be written, naming the marker when it is not one of
/// plot_markers(), naming the limits when an axis's are not finite and increasing, and when
/// this build has no cairo.
void save_plot_png(const PlotFigure& figure, const std::string& path);

}  // namespace chainer::training::extensions
