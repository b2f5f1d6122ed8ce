#include "core/tensor/storage.h"

#include "core/memory/allocator.h"
#include "core/cuda/runtime.h"
#include "core/util/error.h"

namespace chainer {

Storage::Storage(size_t bytes, Device device) : bytes_(bytes), device_(device) {
  if (device.is_cuda()) {
    // A block of the device's caching allocator (core/memory/caching_allocator.h), given back when
    // owner_ drops it.
    owner_ = cuda::detail::runtime(device.index).allocate(device.index, bytes);
    data_ = owner_.get();
    return;
  }
  // 64-byte aligned (one cache line, what AVX-512 loads like best); large blocks are recycled
  // (core/memory/allocator.h).
  data_ = host_allocate(bytes);
}

Storage::Storage(void* data, size_t bytes, Device device, std::shared_ptr<void> owner)
    : data_(data), bytes_(bytes), device_(device), owner_(std::move(owner)) {
  if (!owner_) throw InternalError("storage: wrapped memory needs an owner");
}

Storage::~Storage() {
  if (!owner_) host_free(data_, bytes_);
}

}  // namespace chainer
