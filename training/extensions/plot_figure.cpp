#include "training/extensions/plot_figure.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>

#include "core/util/error.h"

#ifdef CHAINER_WITH_CAIRO
#include <cairo.h>
#endif

namespace chainer::training::extensions {

const std::vector<std::string>& plot_markers() {
  static const std::vector<std::string> markers = {"x", "+", "o", ".", "s", "^", ""};
  return markers;
}

bool plot_png_available() {
#ifdef CHAINER_WITH_CAIRO
  return true;
#else
  return false;
#endif
}

namespace {

void check(const PlotFigure& f) {
  const auto& markers = plot_markers();
  if (std::find(markers.begin(), markers.end(), f.marker) == markers.end())
    throw Error(str("save_plot_png: unknown marker '", f.marker, "' (expected x, +, o, ., s, ^ or empty for none)"));
  for (const auto& [limits, axis] : {std::pair{f.x_limits, "x"}, std::pair{f.y_limits, "y"}})
    if (limits && !(std::isfinite(limits->first) && std::isfinite(limits->second) && limits->first < limits->second))
      throw Error(str("save_plot_png: ", axis, "_limits (", limits->first, ", ", limits->second,
                      ") must be finite and increasing"));
}

}  // namespace

#ifndef CHAINER_WITH_CAIRO

void save_plot_png(const PlotFigure& figure, const std::string& path) {
  check(figure);
  throw Error(str("save_plot_png: cannot draw '", path, "': this build of chainermn-cpp has no cairo "
                  "(install libcairo2-dev and configure again to plot)"));
}

#else

namespace {

// The layout of plot_figure.h, in pixels.
constexpr double kWidth = 640, kHeight = 480;
constexpr double kLeft = 80, kRight = 576, kTop = 57.6, kBottom = 427.2;

bool finite(const std::pair<double, double>& p) { return std::isfinite(p.first) && std::isfinite(p.second); }

// The range an axis shows: as set, else the finite data's widened by 5% at each end.
std::pair<double, double> range(const PlotFigure& f, bool x_axis) {
  if (const auto& set = x_axis ? f.x_limits : f.y_limits) return *set;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const PlotSeries& s : f.series)
    for (const auto& p : s.points)
      if (finite(p)) {
        lo = std::min(lo, x_axis ? p.first : p.second);
        hi = std::max(hi, x_axis ? p.first : p.second);
      }
  if (lo > hi) return {0.0, 1.0};
  if (hi - lo <= 1e-12 * std::max(std::abs(lo), std::abs(hi)))  // matplotlib's nonsingular()
    return lo == 0 && hi == 0 ? std::pair{-0.05, 0.05} : std::pair{lo - 0.05 * std::abs(lo), hi + 0.05 * std::abs(hi)};
  return {lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo)};
}

// Tick positions at a round step (1, 2, 2.5 or 5 times a power of ten, as matplotlib's
// MaxNLocator) giving at most MAX_BINS intervals over [LO, HI], with labels of as many decimals
// as the step needs.
struct Ticks {
  std::vector<double> values;
  std::vector<std::string> labels;
};
Ticks ticks(double lo, double hi, int max_bins) {
  Ticks t;
  const double raw = (hi - lo) / max_bins;
  if (!std::isfinite(raw) || raw <= 0) return t;
  int exponent = int(std::floor(std::log10(raw)));
  double step = 10 * std::pow(10.0, exponent);
  int decimals = std::max(0, -(exponent + 1));
  for (double m : {1.0, 2.0, 2.5, 5.0}) {
    if (m * std::pow(10.0, exponent) >= raw * (1 - 1e-9)) {
      step = m * std::pow(10.0, exponent);
      decimals = std::max(0, -exponent + (m == 2.5 ? 1 : 0));
      break;
    }
  }
  const bool general = std::max(std::abs(lo), std::abs(hi)) >= 1e6 || step < 1e-4;
  const double first = std::ceil(lo / step - 1e-9);
  for (double k = first; k * step <= hi + 1e-9 * step && k < first + max_bins + 1; ++k) {
    const double v = std::abs(k) < 0.5 ? 0.0 : k * step;  // never "-0.0"
    char text[32];
    if (general) std::snprintf(text, sizeof text, "%.4g", v);
    else std::snprintf(text, sizeof text, "%.*f", decimals, v);
    t.values.push_back(v);
    t.labels.push_back(text);
  }
  return t;
}

constexpr double kFont = 13;  // matplotlib's 10 pt at 100 dpi is 13.9 px
constexpr double kTickLength = 5, kTickPad = 5;
constexpr double kLineWidth = 2, kMarkerSize = 8;  // matplotlib's 1.5 pt and 6 pt
// matplotlib's default colour cycle (tab10).
constexpr unsigned kColours[] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd,
                                 0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf};
// The legend, in units of the font size as matplotlib's: line sample, gap to the text, padding
// inside the frame, gap between rows.
constexpr double kHandle = 2.0 * kFont, kHandlePad = 0.8 * kFont, kBorderPad = 0.4 * kFont, kRowGap = 0.5 * kFont;

void set_rgb(cairo_t* cr, unsigned rgb) {
  cairo_set_source_rgb(cr, ((rgb >> 16) & 255) / 255.0, ((rgb >> 8) & 255) / 255.0, (rgb & 255) / 255.0);
}

void select_font(cairo_t* cr) {
  cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, kFont);
}

double text_width(cairo_t* cr, const std::string& text) {
  cairo_text_extents_t e;
  cairo_text_extents(cr, text.c_str(), &e);
  return e.x_advance;
}

// TEXT with its anchor at (X, Y): AX 0, 0.5, 1 for left, centre, right; AY likewise for top,
// middle, bottom of the font's ascent and descent (the same for every text, so labels line up).
void draw_text(cairo_t* cr, const std::string& text, double x, double y, double ax, double ay) {
  cairo_font_extents_t f;
  cairo_font_extents(cr, &f);
  cairo_move_to(cr, x - ax * text_width(cr, text), y + f.ascent - ay * (f.ascent + f.descent));
  cairo_show_text(cr, text.c_str());
}

void draw_marker(cairo_t* cr, const std::string& marker, double x, double y) {
  const double r = kMarkerSize / 2;
  if (marker == "x" || marker == "+") {
    const double d = marker == "x" ? r : 0;
    cairo_move_to(cr, x - r, y - d);
    cairo_line_to(cr, x + r, y + d);
    cairo_move_to(cr, x - d, y + r);
    cairo_line_to(cr, x + d, y - r);
    cairo_stroke(cr);
    return;
  }
  if (marker == "o" || marker == ".") cairo_arc(cr, x, y, marker == "o" ? r : r / 2, 0, 2 * M_PI);
  if (marker == "s") cairo_rectangle(cr, x - r, y - r, 2 * r, 2 * r);
  if (marker == "^") {
    cairo_move_to(cr, x, y - r);
    cairo_line_to(cr, x + r, y + r);
    cairo_line_to(cr, x - r, y + r);
    cairo_close_path(cr);
  }
  cairo_fill(cr);
}

cairo_status_t write_chunk(void* file, const unsigned char* data, unsigned int length) {
  return std::fwrite(data, 1, length, static_cast<FILE*>(file)) == length ? CAIRO_STATUS_SUCCESS
                                                                           : CAIRO_STATUS_WRITE_ERROR;
}

// Owners of cairo's objects, so that a throw frees them.
struct SurfaceDeleter {
  void operator()(cairo_surface_t* s) const { cairo_surface_destroy(s); }
};
struct ContextDeleter {
  void operator()(cairo_t* cr) const { cairo_destroy(cr); }
};
using Surface = std::unique_ptr<cairo_surface_t, SurfaceDeleter>;
using Context = std::unique_ptr<cairo_t, ContextDeleter>;

void write_png(cairo_surface_t* surface, const std::string& path) {
  namespace fs = std::filesystem;
  const std::string tmp = path + ".tmp";
  FILE* file = std::fopen(tmp.c_str(), "wb");
  if (!file) throw Error(str("save_plot_png: cannot write '", path, "': ", std::strerror(errno)));
  const cairo_status_t status = cairo_surface_write_to_png_stream(surface, write_chunk, file);
  const int error = std::ferror(file) ? errno : 0;
  const bool closed = std::fclose(file) == 0;
  std::error_code ec;
  if (status != CAIRO_STATUS_SUCCESS || !closed) {
    fs::remove(tmp, ec);
    throw Error(str("save_plot_png: cannot write '", path,
                    "': ", error ? std::strerror(error) : cairo_status_to_string(status)));
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw Error(str("save_plot_png: cannot rename '", tmp, "' to '", path, "': ", ec.message()));
  }
}

}  // namespace

void save_plot_png(const PlotFigure& figure, const std::string& path) {
  check(figure);
  const auto [x0, x1] = range(figure, true);
  const auto [y0, y1] = range(figure, false);
  auto column = [x0, x1](double x) { return kLeft + (x - x0) / (x1 - x0) * (kRight - kLeft); };
  auto row = [y0, y1](double y) { return kBottom - (y - y0) / (y1 - y0) * (kBottom - kTop); };

  // The legend's size decides the image's width: measure its texts first.
  double label_width = 0;
  {
    Surface scratch(cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1));
    Context cr(cairo_create(scratch.get()));
    select_font(cr.get());
    for (const PlotSeries& s : figure.series) label_width = std::max(label_width, text_width(cr.get(), s.label));
  }
  const double legend_x = kLeft + 1.05 * (kRight - kLeft), legend_y = kTop;
  const double legend_w = 2 * kBorderPad + kHandle + kHandlePad + label_width;
  const double legend_h = 2 * kBorderPad + double(figure.series.size()) * (kFont + kRowGap) - kRowGap;
  const int width = int(figure.series.empty() ? kWidth : std::max(kWidth, std::ceil(legend_x + legend_w + 8)));

  Surface surface(cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, int(kHeight)));
  Context context(cairo_create(surface.get()));
  cairo_t* cr = context.get();
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  select_font(cr);

  const Ticks xt = ticks(x0, x1, 9), yt = ticks(y0, y1, 9);
  if (figure.grid) {
    set_rgb(cr, 0xb0b0b0);
    cairo_set_line_width(cr, 1);
    for (double v : xt.values) {
      cairo_move_to(cr, std::round(column(v)) + 0.5, kTop);
      cairo_line_to(cr, std::round(column(v)) + 0.5, kBottom);
    }
    for (double v : yt.values) {
      cairo_move_to(cr, kLeft, std::round(row(v)) + 0.5);
      cairo_line_to(cr, kRight, std::round(row(v)) + 0.5);
    }
    cairo_stroke(cr);
  }

  // The lines and their markers, clipped to the axes.
  cairo_save(cr);
  cairo_rectangle(cr, kLeft, kTop, kRight - kLeft, kBottom - kTop);
  cairo_clip(cr);
  cairo_set_line_width(cr, kLineWidth);
  cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
  for (size_t i = 0; i < figure.series.size(); ++i) {
    set_rgb(cr, kColours[i % std::size(kColours)]);
    bool drawing = false;
    for (const auto& p : figure.series[i].points) {
      if (!finite(p)) {
        drawing = false;
        continue;
      }
      if (drawing) cairo_line_to(cr, column(p.first), row(p.second));
      else cairo_move_to(cr, column(p.first), row(p.second));
      drawing = true;
    }
    cairo_stroke(cr);
    if (!figure.marker.empty()) {
      cairo_set_line_width(cr, 1.5);
      for (const auto& p : figure.series[i].points)
        if (finite(p)) draw_marker(cr, figure.marker, column(p.first), row(p.second));
      cairo_set_line_width(cr, kLineWidth);
    }
  }
  cairo_restore(cr);

  // The frame, the ticks and their labels.
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_set_line_width(cr, 1);
  cairo_rectangle(cr, std::round(kLeft) + 0.5, std::round(kTop) + 0.5, std::round(kRight - kLeft),
                  std::round(kBottom - kTop));
  for (double v : xt.values) {
    cairo_move_to(cr, std::round(column(v)) + 0.5, kBottom);
    cairo_line_to(cr, std::round(column(v)) + 0.5, kBottom + kTickLength);
  }
  for (double v : yt.values) {
    cairo_move_to(cr, kLeft, std::round(row(v)) + 0.5);
    cairo_line_to(cr, kLeft - kTickLength, std::round(row(v)) + 0.5);
  }
  cairo_stroke(cr);
  const double label_top = kBottom + kTickLength + kTickPad;
  for (size_t i = 0; i < xt.values.size(); ++i) draw_text(cr, xt.labels[i], column(xt.values[i]), label_top, 0.5, 0);
  double widest = 0;
  for (size_t i = 0; i < yt.values.size(); ++i) {
    draw_text(cr, yt.labels[i], kLeft - kTickLength - kTickPad, row(yt.values[i]), 1, 0.5);
    widest = std::max(widest, text_width(cr, yt.labels[i]));
  }
  if (!figure.x_label.empty()) draw_text(cr, figure.x_label, (kLeft + kRight) / 2, label_top + kFont + 4, 0.5, 0);
  if (!figure.y_label.empty()) {
    cairo_save(cr);
    cairo_translate(cr, std::max(kFont, kLeft - kTickLength - kTickPad - widest - 4), (kTop + kBottom) / 2);
    cairo_rotate(cr, -M_PI / 2);
    draw_text(cr, figure.y_label, 0, 0, 0.5, 1);
    cairo_restore(cr);
  }
  if (!figure.title.empty()) draw_text(cr, figure.title, (kLeft + kRight) / 2, kTop - 6, 0.5, 1);

  // The legend: a frame, then per series a sample of its line and marker beside its label.
  if (!figure.series.empty()) {
    cairo_rectangle(cr, std::round(legend_x) + 0.5, legend_y + 0.5, std::round(legend_w), std::round(legend_h));
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_fill_preserve(cr);
    set_rgb(cr, 0xcccccc);
    cairo_stroke(cr);
    for (size_t i = 0; i < figure.series.size(); ++i) {
      const double top = legend_y + kBorderPad + double(i) * (kFont + kRowGap), middle = top + kFont / 2;
      const double hx = legend_x + kBorderPad;
      set_rgb(cr, kColours[i % std::size(kColours)]);
      cairo_set_line_width(cr, kLineWidth);
      cairo_move_to(cr, hx, middle);
      cairo_line_to(cr, hx + kHandle, middle);
      cairo_stroke(cr);
      cairo_set_line_width(cr, 1.5);
      if (!figure.marker.empty()) draw_marker(cr, figure.marker, hx + kHandle / 2, middle);
      cairo_set_source_rgb(cr, 0, 0, 0);
      draw_text(cr, figure.series[i].label, hx + kHandle + kHandlePad, middle, 0, 0.5);
    }
  }

  cairo_surface_flush(surface.get());
  if (cairo_status(cr) != CAIRO_STATUS_SUCCESS)
    throw Error(str("save_plot_png: cannot draw '", path, "': ", cairo_status_to_string(cairo_status(cr))));
  write_png(surface.get(), path);
}

#endif

}  // namespace chainer::training::extensions
