// Thread-local configuration, as chainer.config: `train` (dropout and friends behave as in
// training) is switched off by evaluators through a scoped guard.
#pragma once

namespace chainer::config {

bool train();
void set_train(bool train);

// Sets config.train for the lifetime of the guard, then restores the previous value.
class TrainScope {
 public:
  explicit TrainScope(bool train);
  ~TrainScope();
  TrainScope(const TrainScope&) = delete;
  TrainScope& operator=(const TrainScope&) = delete;

 private:
  bool previous_;
};

}  // namespace chainer::config
