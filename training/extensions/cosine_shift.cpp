#include "training/extensions/cosine_shift.h"

#include <cmath>
#include <numbers>

#include "training/trainer.h"

namespace chainer::training::extensions {

CosineShift::CosineShift(std::string attr, int64_t t_max, double eta_min, std::optional<double> init,
                         std::shared_ptr<Optimizer> optimizer)
    : attr_(std::move(attr)), t_max_(t_max), eta_min_(eta_min), init_(init), optimizer_(std::move(optimizer)) {
  if (t_max <= 0) throw Error(str("CosineShift: t_max must be a positive number of calls, got ", t_max));
}

Optimizer& CosineShift::optimizer(Trainer& trainer) const {
  return optimizer_ ? *optimizer_ : trainer.updater().get_optimizer("main");
}

void CosineShift::set(Trainer& trainer, double value) {
  optimizer(trainer).set_hyperparam(attr_, value);
  last_value_ = value;
}

void CosineShift::initialize(Trainer& trainer) {
  if (!init_) init_ = optimizer(trainer).hyperparam(attr_);
  set(trainer, last_value_ ? *last_value_ : *init_);
}

void CosineShift::operator()(Trainer& trainer) {
  ++t_;
  if (!init_) init_ = optimizer(trainer).hyperparam(attr_);  // called without initialize()
  // The closed form (PyTorch's _get_closed_form_lr), not its recursive form: the value at t
  // depends on t alone, so a resumed run needs nothing but the count.
  const double c = std::cos(std::numbers::pi * double(t_) / double(t_max_));
  set(trainer, eta_min_ + (*init_ - eta_min_) * (1 + c) / 2);
}

void CosineShift::serialize(Serializer& s) {
  s.value("_t", t_);
  s.value("_last_value", last_value_);  // no entry while unset: Chainer's None
}

}  // namespace chainer::training::extensions
