#include "core/config.h"

namespace chainer::config {

namespace {
thread_local bool t_train = true;
}

bool train() { return t_train; }
void set_train(bool train) { t_train = train; }
TrainScope::TrainScope(bool train) : previous_(t_train) { t_train = train; }
TrainScope::~TrainScope() { t_train = previous_; }

}  // namespace chainer::config
