#include "training/extensions/warmup_shift.h"

#include "training/trainer.h"

namespace chainer::training::extensions {

WarmupShift::WarmupShift(std::string attr, std::optional<double> warmup_start, int64_t warmup_iter, double init,
                         std::shared_ptr<Optimizer> optimizer)
    : attr_(std::move(attr)), warmup_start_(warmup_start), warmup_iter_(warmup_iter), init_(init),
      optimizer_(std::move(optimizer)) {
  if (warmup_iter <= 0)
    throw Error(str("WarmupShift: warmup_iter must be a positive number of calls, got ", warmup_iter));
}

Optimizer& WarmupShift::optimizer(Trainer& trainer) const {
  return optimizer_ ? *optimizer_ : trainer.updater().get_optimizer("main");
}

// Chainer's form (a weighted mean, not start + t * step), so the values match its to the last bit.
double WarmupShift::value_at(int64_t t) const {
  if (t >= warmup_iter_) return init_;
  return (double(t) * init_ + double(warmup_iter_ - t) * *warmup_start_) / double(warmup_iter_);
}

void WarmupShift::initialize(Trainer& trainer) {
  Optimizer& opt = optimizer(trainer);
  if (!warmup_start_) {
    warmup_start_ = opt.hyperparam(attr_);
    if (t_ > 0) opt.set_hyperparam(attr_, value_at(t_));  // Chainer's would leave the start value
  } else {
    opt.set_hyperparam(attr_, value_at(t_));
  }
}

void WarmupShift::operator()(Trainer& trainer) {
  ++t_;
  if (t_ > warmup_iter_) return;
  Optimizer& opt = optimizer(trainer);
  if (!warmup_start_) warmup_start_ = opt.hyperparam(attr_);  // called without initialize()
  opt.set_hyperparam(attr_, value_at(t_));
}

void WarmupShift::serialize(Serializer& s) { s.value("_t", t_); }

}  // namespace chainer::training::extensions
