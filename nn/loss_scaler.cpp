#include "nn/loss_scaler.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "core/ops/ops.h"

namespace chainer {

LossScaler LossScaler::fixed(double scale) {
  if (!(scale > 0) || !std::isfinite(scale))
    throw Error(str("loss_scaling: scale must be a positive finite number, got ", scale));
  LossScaler s;
  s.scale_ = scale;
  return s;
}

LossScaler LossScaler::dynamic(const LossScalingOptions& o) {
  if (!(o.growth_factor >= 1) || !std::isfinite(o.growth_factor))
    throw Error(str("loss_scaling: growth_factor must be at least 1, got ", o.growth_factor));
  if (!(o.backoff_factor > 0 && o.backoff_factor < 1))
    throw Error(str("loss_scaling: backoff_factor must be in (0, 1), got ", o.backoff_factor));
  if (o.growth_interval < 1)
    throw Error(str("loss_scaling: growth_interval must be at least 1, got ", o.growth_interval));
  if (!(o.min_scale >= 0) || !(o.max_scale >= o.min_scale))
    throw Error(str("loss_scaling: need 0 <= min_scale <= max_scale, got min_scale ", o.min_scale, " and max_scale ",
                    o.max_scale));
  if (!(o.init_scale > 0) || !std::isfinite(o.init_scale) || o.init_scale < o.min_scale || o.init_scale > o.max_scale)
    throw Error(str("loss_scaling: init_scale must be positive, finite and within [min_scale, max_scale] = [",
                    o.min_scale, ", ", o.max_scale, "], got ", o.init_scale));
  LossScaler s;
  s.dynamic_ = true;
  s.options_ = o;
  s.scale_ = o.init_scale;
  return s;
}

LossScaler LossScaler::chainer_dynamic(int64_t interval) {
  if (interval < 1) throw Error(str("loss_scaling: interval must be at least 1, got ", interval));
  return dynamic({.init_scale = 1.0, .growth_factor = std::pow(2.0, 1.0 / double(interval)), .backoff_factor = 0.5,
                  .growth_interval = 1, .min_scale = 1.0, .max_scale = 65504.0,  // float16's largest, as Chainer
                  .double_until_first_overflow = true});
}

double LossScaler::clamped(double scale) const { return std::max(options_.min_scale, std::min(options_.max_scale, scale)); }

void LossScaler::step_done(bool skipped) {
  if (!dynamic_) return;
  if (skipped) {
    scale_ = clamped(scale_ * options_.backoff_factor);
    good_steps_ = 0;
    overflowed_ever_ = true;
  } else if (options_.double_until_first_overflow && !overflowed_ever_) {
    scale_ = clamped(scale_ * 2.0);
  } else if (++good_steps_ >= options_.growth_interval) {
    scale_ = clamped(scale_ * options_.growth_factor);
    good_steps_ = 0;
  }
}

void LossScaler::serialize(Serializer& s) {
  s.value("scale", scale_);
  s.value("good_steps", good_steps_);
  s.value("overflowed_ever", overflowed_ever_);
  if (s.is_reader() && (!(scale_ > 0) || !std::isfinite(scale_) || good_steps_ < 0))
    throw Error(str("deserialize: the loss scale '", s.prefix(), "scale' is ", scale_, " and its good-step count ",
                    good_steps_, "; expected a positive finite scale and a count of at least 0"));
}

namespace {
// 0 * x is 0 for every finite x and NaN for NaN and infinities, so the sum is NaN exactly when
// some element is not finite (a sum of zeros cannot overflow; half tensors are summed as they are).
Tensor nan_unless_finite(const Tensor& t) { return ops::sum(ops::mul_scalar(t, 0.0)).astype(DType::Float64); }
}  // namespace

bool all_finite(const Tensor& t) { return std::isfinite(nan_unless_finite(t).item_double()); }

bool all_finite(const std::vector<Tensor>& ts) {
  std::map<std::string, Tensor> per_device;  // by Device::str(): one read per device
  for (const Tensor& t : ts) {
    if (!t.defined()) continue;
    Tensor& acc = per_device[t.device().str()];
    acc = acc.defined() ? ops::add(acc, nan_unless_finite(t)) : nan_unless_finite(t);
  }
  for (const auto& [device, acc] : per_device)
    if (!std::isfinite(acc.item_double())) return false;
  return true;
}

}  // namespace chainer
