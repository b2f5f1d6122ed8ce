/// @file
/// LossScaler: the loss scale of mixed-precision training and how it moves (Chainer's
/// Optimizer.loss_scaling, PyTorch's GradScaler). The loss is multiplied by scale() before
/// backward, so gradients too small for float16 survive; the optimizer divides them by it again
/// before its hooks and its step. A dynamic scale skips every step whose gradients hold an inf or
/// a NaN (the scale was too large), multiplies the scale by backoff_factor then, and by
/// growth_factor after growth_interval good steps in a row. A static scale never moves and skips
/// nothing (Chainer's static scaling checks nothing either). The Optimizer owns one
/// (Optimizer::loss_scaling); this class is only the arithmetic and its snapshot entries.
#pragma once
#include <cstdint>
#include <limits>
#include <vector>

#include "core/io/serializer.h"

namespace chainer {

/// Dynamic loss scaling's knobs, PyTorch GradScaler's names and defaults, plus Chainer's bounds.
struct LossScalingOptions {
  double init_scale = 65536.0;     ///< The first scale (GradScaler: 2^16).
  double growth_factor = 2.0;      ///< The scale is multiplied by this after growth_interval good steps in a row.
  double backoff_factor = 0.5;     ///< ... and by this at a skipped step (an inf or NaN gradient).
  int64_t growth_interval = 2000;  ///< Good steps in a row before the scale grows.
  double min_scale = 0.0;          ///< The scale never goes below this (Chainer: 1).
  double max_scale = std::numeric_limits<double>::infinity();  ///< ... nor above this (Chainer: 65504).
  /// Chainer's start: until the first skipped step the scale doubles after EVERY good step, so it
  /// climbs quickly from init_scale to the largest that works; growth_interval applies after.
  bool double_until_first_overflow = false;
};

/// The loss scale and its dynamic state (see the file comment).
class LossScaler {
 public:
  /// A static scale SCALE (positive and finite, else chainer::Error naming it).
  static LossScaler fixed(double scale);
  /// A dynamic scale with OPTIONS (checked: positive factors, backoff below 1, growth at least 1,
  /// interval at least 1, init_scale within [min_scale, max_scale]).
  static LossScaler dynamic(const LossScalingOptions& options);
  /// Chainer 7.8.1's dynamic scaling, loss_scaling(interval, None): starts at 1, doubles after every
  /// good step until the first skip, then grows by 2^(1/INTERVAL) after every good step (it doubles
  /// over INTERVAL good steps); halves at a skip; stays within [1, 65504].
  static LossScaler chainer_dynamic(int64_t interval);

  double scale() const { return scale_; }       ///< The current scale.
  bool is_dynamic() const { return dynamic_; }  ///< Whether steps are checked and the scale moves.
  const LossScalingOptions& options() const { return options_; }  ///< The knobs (dynamic only).
  int64_t good_steps() const { return good_steps_; }  ///< Good steps since the scale last changed by a growth or a skip.
  bool overflowed_ever() const { return overflowed_ever_; }  ///< Whether any step was skipped.
  /// After a step: SKIPPED (its gradients were not all finite) backs the scale off, else it counts
  /// a good step and grows the scale when due. Nothing for a static scale.
  void step_done(bool skipped);
  /// Saves/loads the scale, the good-step count and whether a step was ever skipped (the knobs are
  /// the program's, as the optimizer's hyperparameters are).
  void serialize(Serializer& s);

 private:
  double clamped(double scale) const;

  double scale_ = 1.0;
  bool dynamic_ = false;
  LossScalingOptions options_;
  int64_t good_steps_ = 0;
  bool overflowed_ever_ = false;
};

/// Whether every element of T (a floating tensor on any device) is finite: no inf, no NaN.
/// Reads one number on the host.
bool all_finite(const Tensor& t);
/// Whether every element of every tensor of TS is finite; reads one number per device.
bool all_finite(const std::vector<Tensor>& ts);

}  // namespace chainer
