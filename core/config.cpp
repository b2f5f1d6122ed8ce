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

bool env_flag(const char* name, bool fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  return std::strcmp(v, "0") != 0 && std::strcmp(v, "false") != 0;
}

}  // namespace chainer::config
