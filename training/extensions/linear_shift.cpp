#include "training/extensions/linear_shift.h"

#include "training/trainer.h"

namespace chainer::training::extensions {

LinearShift::LinearShift(std::string attr, std::pair<double, double> value_range,
                         std::pair<int64_t, int64_t> time_range, std::shared_ptr<Optimizer> optimizer)
    : attr_(std::move(attr)), value_range_(value_range), time_range_(time_range), optimizer_(std::move(optimizer)) {
  if (time_range.first > time_range.second)
    throw Error(str("LinearShift: time_range must not decrease, got (", time_range.first, ", ", time_range.second, ")"));
}

double LinearShift::value_at(int64_t t) const {
  const auto [t1, t2] = time_range_;
  const auto [v1, v2] = value_range_;
  if (t <= t1) return v1;
  if (t >= t2) return v2;
  return v1 + double(t - t1) / double(t2 - t1) * (v2 - v1);
}

void LinearShift::set(Trainer& trainer, double value) {
  (optimizer_ ? *optimizer_ : trainer.updater().get_optimizer("main")).set_hyperparam(attr_, value);
  last_value_ = value;
}

void LinearShift::initialize(Trainer& trainer) { set(trainer, last_value_ ? *last_value_ : value_at(t_)); }

void LinearShift::operator()(Trainer& trainer) { set(trainer, value_at(++t_)); }

void LinearShift::serialize(Serializer& s) {
  s.value("_t", t_);
  s.value("_last_value", last_value_);  // no entry while unset: Chainer's None
}

}  // namespace chainer::training::extensions
