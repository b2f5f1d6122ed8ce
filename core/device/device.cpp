#include "core/device/device.h"

namespace chainer {

std::string Device::str() const {
  return type == Type::CPU ? std::string("cpu") : "cuda:" + std::to_string(index);
}

}  // namespace chainer
