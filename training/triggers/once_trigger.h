/// @file
/// OnceTrigger, as chainer.training.triggers.OnceTrigger: fires at the first iteration of
/// training and never again; with CALL_ON_RESUME, also at the first iteration of a resumed run.
/// Its state (whether it has fired) goes into snapshots as Chainer's `_flag_first`; a resumed
/// trigger that will not fire is finished(), so the trainer skips its extension's initialize().
#pragma once
#include "training/trigger.h"

namespace chainer::training {

/// Fires once, at the first iteration (and again after a resume when asked), as Chainer's `OnceTrigger`.
class OnceTrigger {
 public:
  /// A trigger firing at its first call; with CALL_ON_RESUME, also at its first call after a resume.
  explicit OnceTrigger(bool call_on_resume = false) : flag_resumed_(call_on_resume) {}
  bool operator()(const Trainer& trainer);  ///< Whether this is the call it fires at.
  /// Saves or restores `_flag_first`; a snapshot without it (one written before the trigger
  /// existed) reads as fired, as Chainer's guesses.
  void serialize(Serializer& s);
  /// Whether the trigger will not fire again.
  bool finished() const { return !(flag_first_ || flag_resumed_); }

 private:
  bool flag_first_ = true;
  bool flag_resumed_;
};

}  // namespace chainer::training
