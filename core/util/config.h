/// @file
/// Thread-local configuration, as chainer.config: `train` (dropout and friends behave as in
/// training) is switched off by evaluators through a scoped guard.
#pragma once
#include <string>

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

/// chainer.config.dtype: the dtype links create their parameters in and the models compute in.
/// Float32 by default. Float16 and BFloat16 make half parameters (step them with
/// Optimizer::use_fp32_update) and compute in half; Mixed16 and MixedBf16 (Chainer's mixed16)
/// keep float32 parameters and compute in half: the functions of the half list (linear,
/// convolutions, matmul) cast their inputs to it and the full-precision ones (softmax, the losses,
/// normalizations) to float32, as PyTorch's autocast (nn/autocast.h; docs/mixed_precision.md).
enum class Dtype { Float32, Float64, Float16, BFloat16, Mixed16, MixedBf16 };
/// This thread's config.dtype.
Dtype dtype();
/// Sets this thread's config.dtype.
void set_dtype(Dtype dtype);
/// Its name as the apps' --dtype spells it: "float32", "float64", "float16", "bfloat16",
/// "mixed16", "mixed_bf16".
const char* dtype_name(Dtype dtype);
/// The Dtype named NAME (as dtype_name gives it); a chainer::Error listing the names otherwise.
Dtype parse_dtype(const std::string& name);

/// Sets config.dtype for the lifetime of the guard, then restores the previous value (as
/// `with chainer.using_config('dtype', chainer.mixed16)`).
class DtypeScope {
 public:
  /// Sets config.dtype to DTYPE until the guard is destroyed.
  explicit DtypeScope(Dtype dtype);
  ~DtypeScope();
  DtypeScope(const DtypeScope&) = delete;
  DtypeScope& operator=(const DtypeScope&) = delete;

 private:
  Dtype previous_;
};

/// A yes/no setting from environment variable NAME: FALLBACK when unset or empty; true for 1,
/// true, yes or on, false for 0, false, no or off (any case); anything else is a chainer::Error
/// naming NAME and the value, since a mistyped switch must not silently mean "on". One rule for
/// every switch (CHAINER_HUGEPAGES, CHAINERMN_SHARED_MEMORY, CHAINERMN_DEBUG, ...).
bool env_flag(const char* name, bool fallback);

}  // namespace chainer::config
