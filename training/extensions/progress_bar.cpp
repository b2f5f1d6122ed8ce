#include "training/extensions/progress_bar.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "training/extensions/terminal.h"
#include "training/trainer.h"

namespace chainer::training::extensions {

ProgressBar::ProgressBar(std::optional<TrainingLength> training_length, int64_t update_interval, int bar_length,
                         std::ostream& out)
    : length_(training_length), update_interval_(update_interval), bar_length_(bar_length), out_(out) {
  if (update_interval <= 0) throw Error(str("ProgressBar: update_interval must be positive, got ", update_interval));
  if (training_length && !(training_length->length > 0))
    throw Error(str("ProgressBar: training_length must be positive, got ", training_length->length));
}

void ProgressBar::initialize(Trainer& trainer) {
  if (length_) return;
  length_ = trainer.stop_trigger().training_length();
  if (!length_)
    throw Error("ProgressBar: the stop trigger has no training length (training_length()); pass training_length, "
                "e.g. {20, Unit::Epoch}");
}

namespace {
std::string bar(double fraction, int length) {
  fraction = std::clamp(fraction, 0.0, 1.0);
  const int filled = int(fraction * length);
  return "[" + std::string(size_t(filled), '#') + std::string(size_t(length - filled), '.') + "]";
}
}  // namespace

void ProgressBar::operator()(Trainer& trainer) {
  if (is_standard_stream(out_) && !is_terminal(out_)) return;  // redirected: no cursor movements in a file
  const Updater& u = trainer.updater();
  const int64_t iteration = u.iteration();
  const auto now = std::chrono::steady_clock::now();
  recent_.emplace_back(iteration, now);
  if (recent_.size() > 10) recent_.pop_front();
  if (iteration % update_interval_ != 0) return;
  if (!length_) initialize(trainer);
  const TrainingLength length = *length_;
  const bool by_epoch = length.unit == Unit::Epoch;
  const double done = by_epoch ? u.epoch_detail() : double(iteration);
  const double total_fraction = done / length.length;
  const double epoch_fraction = u.epoch_detail() - std::floor(u.epoch_detail());
  double speed = 0;
  if (recent_.size() > 1) {
    const double dt = std::chrono::duration<double>(recent_.back().second - recent_.front().second).count();
    if (dt > 0) speed = double(recent_.back().first - recent_.front().first) / dt;
  }
  char buf[512];
  std::string text;
  std::snprintf(buf, sizeof buf, "\033[J     total %s %6.2f%%\n", bar(total_fraction, bar_length_).c_str(), 100 * total_fraction);
  text += buf;
  std::snprintf(buf, sizeof buf, "this epoch %s %6.2f%%\n", bar(epoch_fraction, bar_length_).c_str(), 100 * epoch_fraction);
  text += buf;
  std::snprintf(buf, sizeof buf, "%10lld iter, %lld epoch / %s\n", (long long)iteration, (long long)u.epoch(), length.str().c_str());
  text += buf;
  if (speed > 0) {
    const double left_iterations =
        by_epoch ? (length.length - u.epoch_detail()) * double(iteration) / std::max(u.epoch_detail(), 1e-12)
                 : length.length - double(iteration);
    const long long secs = (long long)std::max(0.0, left_iterations / speed);
    std::snprintf(buf, sizeof buf, "%10.5g iters/sec. Estimated time to finish: %lld:%02lld:%02lld.\n", speed, secs / 3600,
                  secs / 60 % 60, secs % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%10s iters/sec. Estimated time to finish: unknown.\n", "");
  }
  text += buf;
  // Back to the top of the drawing, as Chainer does: whatever is printed next (PrintReport's
  // rows, on stdout) is written over the bar and stays, and the next drawing starts below it.
  // Moving up only at the next drawing would erase the lines printed in between.
  text += "\033[4A";
  out_ << text << std::flush;
  drawn_ = true;
}

void ProgressBar::finalize() {
  if (drawn_) out_ << "\033[J" << std::flush;  // erase the last drawing
  drawn_ = false;
}

}  // namespace chainer::training::extensions
