#include "core/memory/pinned_staging.h"

#include <algorithm>
#include <bit>

#include "core/util/error.h"

namespace chainer {

size_t PinnedStaging::buffer_size(size_t bytes) { return std::max(kMinBuffer, std::bit_ceil(bytes)); }

PinnedStaging::PinnedStaging(std::unique_ptr<Native> native, size_t limit) : native_(std::move(native)), limit_(limit) {
  CHAINER_ASSERT(native_, "PinnedStaging: no native functions");
}

// Runs at exit too, possibly after the CUDA runtime is gone: a failure leaves the rest to the
// process's end instead of throwing from a destructor.
PinnedStaging::~PinnedStaging() {
  for (const Buffer& b : free_) {
    try {
      native_->destroy_event(b.done);
      native_->free(b.ptr);
    } catch (...) {
      return;
    }
  }
}

void PinnedStaging::return_buffer(const Buffer& b) {
  native_->destroy_event(b.done);
  native_->free(b.ptr);
  stats_.held_bytes -= b.bytes;
  stats_.free_bytes -= b.bytes;
  ++stats_.host_frees;
}

PinnedStaging::Buffer PinnedStaging::acquire(size_t bytes) {
  std::lock_guard lock(mutex_);
  const size_t size = buffer_size(bytes);
  // The smallest ready buffer that fits.
  auto best = free_.end();
  for (auto it = free_.begin(); it != free_.end(); ++it)
    if (it->bytes >= size && (best == free_.end() || it->bytes < best->bytes) && native_->event_done(it->done))
      best = it;
  auto take = [&](std::deque<Buffer>::iterator it) {
    const Buffer b = *it;
    free_.erase(it);
    stats_.free_bytes -= b.bytes;
    return b;
  };
  if (best != free_.end()) return take(best);
  // Room under the limit: the oldest buffers go back to the host, each once its copy is done; one
  // that fits is taken instead.
  while (stats_.held_bytes + size > limit_ && !free_.empty()) {
    wait_for_oldest();
    if (free_.front().bytes >= size) return take(free_.begin());
    const Buffer old = free_.front();
    free_.pop_front();
    return_buffer(old);
  }
  return pin(size);
}

PinnedStaging::Buffer PinnedStaging::acquire_while_capturing(size_t bytes) {
  std::lock_guard lock(mutex_);
  return pin(buffer_size(bytes));
}

void PinnedStaging::trim() {
  std::lock_guard lock(mutex_);
  while (stats_.held_bytes > limit_ && !free_.empty()) {
    wait_for_oldest();
    const Buffer old = free_.front();
    free_.pop_front();
    return_buffer(old);
  }
}

void PinnedStaging::wait_for_oldest() {
  if (native_->event_done(free_.front().done)) return;
  native_->wait_event(free_.front().done);
  ++stats_.waits;
}

PinnedStaging::Buffer PinnedStaging::pin(size_t size) {
  Buffer b;
  b.ptr = native_->allocate(size);
  b.bytes = size;
  try {
    b.done = native_->create_event();
  } catch (...) {
    native_->free(b.ptr);
    throw;
  }
  stats_.held_bytes += size;
  ++stats_.host_allocs;
  return b;
}

void PinnedStaging::release(Buffer b, Stream stream) {
  std::lock_guard lock(mutex_);
  native_->record_event(b.done, stream);
  free_.push_back(b);
  stats_.free_bytes += b.bytes;
}

PinnedStaging::Stats PinnedStaging::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace chainer
