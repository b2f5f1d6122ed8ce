/// @file
/// observe_value and observe_lr, as chainer.training.extensions: extensions that report a value
/// computed from the trainer (an optimizer's learning rate) into the observation each time they
/// run, every epoch by default, at PRIORITY_WRITER so that LogReport, run later in the same
/// iteration, logs it and PrintReport can show it as a column ("lr").
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "training/extension.h"

namespace chainer::training::extensions {

/// Reports TARGET_FUNC(trainer) under OBSERVATION_KEY, as Chainer's `extensions.observe_value`.
std::shared_ptr<Extension> observe_value(std::string observation_key, std::function<double(Trainer&)> target_func);
/// Reports the hyperparameter "lr" of the optimizer OPTIMIZER_NAME under OBSERVATION_KEY, as
/// Chainer's `extensions.observe_lr`.
std::shared_ptr<Extension> observe_lr(std::string optimizer_name = "main", std::string observation_key = "lr");

}  // namespace chainer::training::extensions
