#include "training/triggers/once_trigger.h"

namespace chainer::training {

bool OnceTrigger::operator()(const Trainer& /*trainer*/) {
  const bool fire = !finished();
  flag_first_ = flag_resumed_ = false;
  return fire;
}

void OnceTrigger::serialize(Serializer& s) {
  if (s.is_reader() && !s.contains("_flag_first")) {
    flag_first_ = false;
    return;
  }
  s.value("_flag_first", flag_first_);
}

}  // namespace chainer::training
