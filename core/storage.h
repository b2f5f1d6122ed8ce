// A reference-counted, 64-byte aligned block of memory on one device. Tensors and their views
// share a Storage through shared_ptr, so a view keeps its base alive.
#pragma once
#include <cstddef>
#include <memory>

#include "core/device.h"

namespace chainer {

class Storage {
 public:
  Storage(size_t bytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
  Device device_;
};

}  // namespace chainer
