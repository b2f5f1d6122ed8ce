#include "training/extensions/value_observation.h"

#include "nn/reporter.h"
#include "training/trainer.h"

namespace chainer::training::extensions {

std::shared_ptr<Extension> observe_value(std::string observation_key, std::function<double(Trainer&)> target_func) {
  if (!target_func) throw Error("observe_value: target_func is empty");
  // Reported without an observer, so the key stays as given; the trainer's reporter scope is
  // active while extensions run.
  auto observe = [key = std::move(observation_key), f = std::move(target_func)](Trainer& trainer) {
    report(Observation{{key, ReportValue(f(trainer))}});
  };
  // "_observe_value": the name Chainer's decorated function gives it.
  return make_extension(std::move(observe), {.trigger = IntervalTrigger(1, Unit::Epoch), .default_name = "_observe_value",
                                             .priority = PRIORITY_WRITER});
}

std::shared_ptr<Extension> observe_lr(std::string optimizer_name, std::string observation_key) {
  return observe_value(std::move(observation_key), [name = std::move(optimizer_name)](Trainer& trainer) {
    return trainer.updater().get_optimizer(name).hyperparam("lr");
  });
}

}  // namespace chainer::training::extensions
