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

/// Whether this thread's convolutions on cuDNN time every algorithm for each new shape and keep
/// the fastest (chainer.config.autotune, torch.backends.cudnn.benchmark) instead of taking
/// cuDNN's heuristic choice. Off by default, or as environment variable CHAINER_AUTOTUNE says.
/// Timing runs kernels and waits for them, so a shape first met inside a CUDA graph capture is
/// timed at its next call outside one.
bool autotune();
/// Sets this thread's autotune.
void set_autotune(bool autotune);

/// Whether this thread's convolutions on cuDNN use only deterministic algorithms (the same
/// result bit for bit on every run; chainer.config.cudnn_deterministic). On by default, unlike
/// Chainer, or as environment variable CHAINER_CUDNN_DETERMINISTIC says.
bool cudnn_deterministic();
/// Sets this thread's cudnn_deterministic.
void set_cudnn_deterministic(bool deterministic);

/// A yes/no setting from environment variable NAME: FALLBACK when unset or empty; true for 1,
/// true, yes or on, false for 0, false, no or off (any case); anything else is a chainer::Error
/// naming NAME and the value, since a mistyped switch must not silently mean "on". One rule for
/// every switch (CHAINER_HUGEPAGES, CHAINERMN_SHARED_MEMORY, CHAINERMN_DEBUG, ...).
bool env_flag(const char* name, bool fallback);

}  // namespace chainer::config
