/// @file
/// A reference-counted, 64-byte aligned block of memory on one device. Tensors and their views
/// share a Storage through shared_ptr, so a view keeps its base alive. A Storage may also wrap
/// memory that something else owns (a segment shared between processes, a block of the CUDA
/// caching allocator), keeping that owner alive instead of freeing the memory itself.
#pragma once
#include <cstddef>
#include <memory>

#include "core/device/device.h"

namespace chainer {

/// A block of memory on one device, shared by the tensors that view it.
class Storage {
 public:
  /// Allocates BYTES on DEVICE.
  Storage(size_t bytes, Device device);
  /// BYTES at DATA, owned by OWNER: kept alive as long as this storage, never freed here.
  Storage(void* data, size_t bytes, Device device, std::shared_ptr<void> owner);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() { return data_; }  ///< the first byte (a device pointer on a GPU)
  const void* data() const { return data_; }  ///< the first byte (a device pointer on a GPU)
  size_t bytes() const { return bytes_; }  ///< the size in bytes
  Device device() const { return device_; }  ///< where the memory lives

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
  Device device_;
  std::shared_ptr<void> owner_;  // set for wrapped memory
};

}  // namespace chainer
