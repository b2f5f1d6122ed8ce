#include "training/extensions/cosine_shift.h"

#include <cmath>
#include <numbers>

#include "training/trainer.h"

namespace chainer::training::extensions {

CosineShift::CosineShift(std::string attr, int64_t t_max, double eta_min, std::optional<double> init,
                         std::shared_ptr<Optimizer> optimizer)
    : HyperparameterShift(std::move(attr), init, std::move(optimizer)), t_max_(t_max), eta_min_(eta_min) {
  if (t_max <= 0) throw Error(str("CosineShift: t_max must be a positive number of calls, got ", t_max));
}

double CosineShift::value_at(int64_t t, double init) const {
  // The closed form (PyTorch's _get_closed_form_lr), not its recursive form: the value at t
  // depends on t alone, so a resumed run needs nothing but the count.
  const double c = std::cos(std::numbers::pi * double(t) / double(t_max_));
  return eta_min_ + (init - eta_min_) * (1 + c) / 2;
}

}  // namespace chainer::training::extensions
