#include "core/storage.h"

#include <cstdlib>
#include <new>

#include "core/error.h"

namespace chainer {

Storage::Storage(size_t bytes, Device device) : bytes_(bytes), device_(device) {
  if (!device.is_cpu()) throw Error(str("storage: device ", device.str(), " is not available in this build"));
  // 64 bytes: one cache line, and the alignment AVX-512 loads like best.
  size_t rounded = (bytes + 63) / 64 * 64;
  data_ = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (!data_) throw std::bad_alloc();
}

Storage::~Storage() { std::free(data_); }

}  // namespace chainer
