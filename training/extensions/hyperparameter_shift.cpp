#include "training/extensions/hyperparameter_shift.h"

#include <utility>

#include "training/trainer.h"

namespace chainer::training::extensions {

HyperparameterShift::HyperparameterShift(std::string attr, std::optional<double> init,
                                         std::shared_ptr<Optimizer> optimizer)
    : attr_(std::move(attr)), init_(init), optimizer_(std::move(optimizer)) {}

Optimizer& HyperparameterShift::optimizer(Trainer& trainer) const {
  return optimizer_ ? *optimizer_ : trainer.updater().get_optimizer("main");
}

void HyperparameterShift::set(Trainer& trainer, double value) {
  optimizer(trainer).set_hyperparam(attr_, value);
  last_value_ = value;
}

void HyperparameterShift::initialize(Trainer& trainer) {
  if (!init_) init_ = optimizer(trainer).hyperparam(attr_);
  set(trainer, last_value_ ? *last_value_ : *init_);
}

void HyperparameterShift::operator()(Trainer& trainer) {
  ++t_;
  if (!init_) init_ = optimizer(trainer).hyperparam(attr_);  // called without initialize()
  set(trainer, value_at(t_, *init_));
}

void HyperparameterShift::serialize(Serializer& s) {
  s.value("_t", t_);
  s.value("_last_value", last_value_);  // no entry while unset: Chainer's None
}

}  // namespace chainer::training::extensions
