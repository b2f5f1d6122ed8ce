/// @file
/// FailOnNonNumber, as chainer.training.extensions.FailOnNonNumber: after each update, checks
/// every parameter of every optimizer's target and stops training with chainer::Error when one
/// holds a NaN or an infinity, naming the optimizer and the parameter ("/l1/W"): a diverged run
/// stops at once instead of computing on NaNs until the stop trigger. As Chainer's, it checks the
/// parameters' data, not their gradients (an optimizer step turns a non-finite gradient into
/// non-finite data, which the check then sees).
#pragma once
#include <string>

#include "training/extension.h"

namespace chainer::training::extensions {

/// Stops training when a parameter holds NaN or infinity, as Chainer's `extensions.FailOnNonNumber`.
class FailOnNonNumber : public Extension {
 public:
  /// Throws chainer::Error naming the first parameter (in optimizer-name, then parameter-name
  /// order) that holds a NaN or an infinity.
  void operator()(Trainer& trainer) override;
  std::string default_name() const override { return "FailOnNonNumber"; }
};

}  // namespace chainer::training::extensions
