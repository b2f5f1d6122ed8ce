/// @file
/// Thread-local configuration, as chainer.config: `train` (dropout and friends behave as in
/// training) is switched off by evaluators through a scoped guard.
#pragma once

namespace chainer::config {

/// Whether this thread runs in training mode (chainer.config.train); true by default.
bool train();
/// Sets this thread's training mode.
void set_train(bool train);

/// Sets config.train for the lifetime of the guard, then restores the previous value.
class TrainScope {
 public:
  /// Sets config.train to TRAIN until the guard is destroyed.
  explicit TrainScope(bool train);
  ~TrainScope();
  TrainScope(const TrainScope&) = delete;
  TrainScope& operator=(const TrainScope&) = delete;

 private:
  bool previous_;
};

/// A yes/no setting from environment variable NAME: FALLBACK when unset or empty, false for "0"
/// or "false", true for anything else. One rule for every switch (CHAINER_HUGEPAGES,
/// CHAINERMN_SHARED_MEMORY, CHAINERMN_DEBUG, ...).
bool env_flag(const char* name, bool fallback);

}  // namespace chainer::config
