#include "training/extensions/plot_report.h"

#include <algorithm>
#include <charconv>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>

#include "training/trainer.h"

namespace chainer::training::extensions {

using PlotData = std::map<std::string, std::vector<std::pair<double, double>>>;

PlotReport::PlotReport(std::vector<std::string> y_keys, std::string x_key, IntervalTrigger trigger,
                       Postprocess postprocess, std::string filename, std::string marker, bool grid)
    : y_keys_(std::move(y_keys)), x_key_(std::move(x_key)), trigger_(trigger), postprocess_(std::move(postprocess)),
      filename_(std::move(filename)), marker_(std::move(marker)), grid_(grid) {
  const auto& markers = plot_markers();
  if (std::find(markers.begin(), markers.end(), marker_) == markers.end())
    throw Error(str("PlotReport: unknown marker '", marker_, "' (expected x, +, o, ., s, ^ or empty for none)"));
  for (const std::string& k : y_keys_) data_[k];
  if (!available()) {
    static std::once_flag warned;
    std::call_once(warned, [] {
      std::cerr << "warning: PlotReport: this build of chainermn-cpp has no cairo, so nothing will be plotted; "
                   "install libcairo2-dev and configure again to plot figures\n";
    });
  }
}

bool PlotReport::available() { return plot_png_available(); }

void PlotReport::operator()(Trainer& trainer) {
  if (!available()) return;
  Observation selected;
  for (const auto& [k, v] : trainer.observation())
    if (k == x_key_ || std::find(y_keys_.begin(), y_keys_.end(), k) != y_keys_.end()) selected[k] = v;
  summary_.add(selected);
  if (!trigger_(trainer)) return;

  Observation means = summary_.compute_mean();
  summary_ = DictSummary();
  means["epoch"] = double(trainer.updater().epoch());
  means["iteration"] = double(trainer.updater().iteration());
  const auto x = means.find(x_key_);
  if (x == means.end())
    throw Error(str("PlotReport: the x key '", x_key_, "' was not reported (expected \"epoch\", \"iteration\" or a key "
                    "reported since the last plot)"));
  for (const std::string& k : y_keys_)
    if (const auto y = means.find(k); y != means.end()) data_[k].emplace_back(x->second.value(), y->second.value());

  PlotFigure figure;
  figure.x_label = x_key_;
  figure.marker = marker_;
  figure.grid = grid_;
  for (const std::string& k : y_keys_)
    if (!data_[k].empty()) figure.series.push_back({k, data_[k]});
  if (figure.series.empty()) return;  // nothing reported yet: no file, as Chainer's (a.has_data())
  if (postprocess_) postprocess_(figure, means);
  save_plot_png(figure, (std::filesystem::path(trainer.out()) / filename_).string());
}

namespace {

std::string number(double v) {
  if (!std::isfinite(v)) return std::isnan(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity";  // as Python's json
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);  // shortest text that reads back exactly
  return std::string(buf, end);
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + '"';
}

// Reads the JSON that to_json writes: one object of lists of [x, y] pairs.
class Reader {
 public:
  explicit Reader(const std::string& text) : text_(text) {}
  PlotData object() {
    PlotData data;
    expect('{');
    if (peek() == '}') return ++at_, end(data);
    do {
      std::vector<std::pair<double, double>>& points = data[string()];
      expect(':');
      expect('[');
      if (peek() == ']') {
        ++at_;
        continue;
      }
      do {
        expect('[');
        const double x = value();
        expect(',');
        points.emplace_back(x, value());
        expect(']');
      } while (next_is(','));
      expect(']');
    } while (next_is(','));
    expect('}');
    return end(data);
  }

 private:
  [[noreturn]] void corrupt() const {
    throw Error(str("PlotReport: the saved plot data are corrupt at character ", at_, " of '", text_.substr(0, 200), "'"));
  }
  char peek() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
    return at_ < text_.size() ? text_[at_] : '\0';
  }
  void expect(char c) {
    if (peek() != c) corrupt();
    ++at_;
  }
  bool next_is(char c) {
    if (peek() != c) return false;
    ++at_;
    return true;
  }
  std::string string() {
    expect('"');
    std::string s;
    for (; at_ < text_.size() && text_[at_] != '"'; ++at_) {
      if (text_[at_] == '\\') ++at_;
      if (at_ < text_.size()) s += text_[at_];
    }
    expect('"');
    return s;
  }
  double value() {
    peek();
    for (const auto& [word, v] : {std::pair{"NaN", NAN}, std::pair{"Infinity", INFINITY}, std::pair{"-Infinity", -INFINITY}})
      if (text_.compare(at_, std::strlen(word), word) == 0) return at_ += std::strlen(word), v;
    double v = 0;
    const auto [end, ec] = std::from_chars(text_.data() + at_, text_.data() + text_.size(), v);
    if (ec != std::errc()) corrupt();
    at_ = size_t(end - text_.data());
    return v;
  }
  PlotData end(PlotData data) {
    if (peek() != '\0') corrupt();
    return data;
  }
  const std::string& text_;
  size_t at_ = 0;
};

}  // namespace

std::string PlotReport::to_json(const PlotData& data) {
  std::string out = "{";
  for (const auto& [key, points] : data) {
    out += (out.size() > 1 ? ", " : "") + quoted(key) + ": [";
    for (size_t i = 0; i < points.size(); ++i)
      out += (i ? ", [" : "[") + number(points[i].first) + ", " + number(points[i].second) + "]";
    out += "]";
  }
  return out + "}";
}

PlotData PlotReport::from_json(const std::string& text) { return Reader(text).object(); }

void PlotReport::serialize(Serializer& s) {
  Serializer t = s["_trigger"];
  trigger_.serialize(t);
  Serializer sum = s["_summary"];
  summary_.serialize(sum);
  const std::string key = "_plot_" + filename_;
  std::string text = s.is_reader() ? std::string() : to_json(data_);
  s.value(key, text);
  if (!s.is_reader() || text.empty()) return;  // empty: a lenient reader found no saved data
  data_ = from_json(text);
  for (const std::string& k : y_keys_) data_[k];
}

}  // namespace chainer::training::extensions
