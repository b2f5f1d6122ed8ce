/// @file
/// ProgressBar, as Chainer's: every update_interval iterations, redraws on stderr the overall
/// bar, this epoch's bar, the iteration and epoch, iterations per second and the estimated time
/// left.
#pragma once
#include <chrono>
#include <deque>
#include <iostream>
#include <optional>

#include "training/extension.h"

namespace chainer::training::extensions {

/// Draws the training's progress on a terminal, as `chainer.training.extensions.ProgressBar`.
/// On cout, cerr or clog redirected away from a terminal (a log file) it draws nothing: its
/// drawing is cursor movements that would litter the file (Chainer's writes them anyway).
class ProgressBar : public Extension {
 public:
  /// A bar of BAR_LENGTH characters over TRAINING_LENGTH (unset: the stop trigger's
  /// training_length()), redrawn every UPDATE_INTERVAL iterations on OUT.
  explicit ProgressBar(std::optional<TrainingLength> training_length = {}, int64_t update_interval = 100,
                       int bar_length = 50, std::ostream& out = std::cerr);
  /// Takes the training length from the stop trigger when none was given; a stop trigger without
  /// one (a lambda, a ManualScheduleTrigger) throws, asking for training_length.
  void initialize(Trainer& trainer) override;
  void operator()(Trainer& trainer) override;  ///< Redraws every update_interval iterations.
  std::string default_name() const override { return "ProgressBar"; }
  void finalize() override;  ///< Erases the last drawing.

 private:
  std::optional<TrainingLength> length_;
  int64_t update_interval_;
  int bar_length_;
  std::ostream& out_;
  std::deque<std::pair<int64_t, std::chrono::steady_clock::time_point>> recent_;
  bool drawn_ = false;
};

}  // namespace chainer::training::extensions
