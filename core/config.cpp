#include "core/config.h"

#include <cstdlib>
#include <cstring>

namespace chainer::config {

namespace {
thread_local bool t_train = true;
}

bool train() { return t_train; }
void set_train(bool train) { t_train = train; }
TrainScope::TrainScope(bool train) : previous_(t_train) { t_train = train; }
TrainScope::~TrainScope() { t_train = previous_; }

namespace {
thread_local bool t_autotune = env_flag("CHAINER_AUTOTUNE", false);
thread_local bool t_cudnn_deterministic = env_flag("CHAINER_CUDNN_DETERMINISTIC", true);
}  // namespace

bool autotune() { return t_autotune; }
void set_autotune(bool autotune) { t_autotune = autotune; }
bool cudnn_deterministic() { return t_cudnn_deterministic; }
void set_cudnn_deterministic(bool deterministic) { t_cudnn_deterministic = deterministic; }

bool env_flag(const char* name, bool fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  return std::strcmp(v, "0") != 0 && std::strcmp(v, "false") != 0;
}

}  // namespace chainer::config
