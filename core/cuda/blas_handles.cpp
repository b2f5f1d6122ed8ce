#include "core/cuda/blas_handles.h"

#include <atomic>
#include <map>
#include <mutex>
#include <vector>

#include "core/util/error.h"

namespace chainer::cuda {

struct BlasHandlePool::Entry {
  int device = 0;
  Handle handle = nullptr;
  bool tf32 = false;  // a new handle computes in FP32 (CUBLAS_DEFAULT_MATH)
  std::map<Stream, std::shared_ptr<void>> workspaces;
};

struct BlasHandlePool::State {
  std::unique_ptr<Native> native;
  size_t workspace_bytes = 0;
  uint64_t id = 0;  // never reused, so a thread's lease of a pool that is gone matches no other
  mutable std::mutex mutex;
  std::vector<std::unique_ptr<Entry>> entries;  // every handle made
  std::vector<Entry*> idle;                     // given back by threads that ended
  int64_t created = 0;
};

// The handles a thread holds, by pool and device. They go back to their pool when the thread
// ends (a pool that is gone by then is skipped); nothing here calls the library.
struct BlasHandlePool::Leases {
  struct Lease {
    uint64_t pool;
    int device;
    std::weak_ptr<State> state;
    Entry* entry;
  };
  std::vector<Lease> held;

  ~Leases() {
    for (Lease& l : held) {
      try {
        if (std::shared_ptr<State> s = l.state.lock()) {
          std::lock_guard<std::mutex> lock(s->mutex);
          s->idle.push_back(l.entry);
        }
      } catch (...) {  // no memory for the list: the handle is not reused, nothing worse
      }
    }
  }
};

namespace {
std::atomic<uint64_t> g_next_pool_id{1};
}  // namespace

BlasHandlePool::BlasHandlePool(std::unique_ptr<Native> native, size_t workspace_bytes)
    : state_(std::make_shared<State>()) {
  CHAINER_ASSERT(native, "BlasHandlePool needs the library's calls");
  state_->native = std::move(native);
  state_->workspace_bytes = workspace_bytes;
  state_->id = g_next_pool_id++;
}

BlasHandlePool::~BlasHandlePool() = default;

BlasHandlePool::Leases& BlasHandlePool::leases() {
  thread_local Leases leases;
  return leases;
}

// An idle handle of DEVICE, or a new one created in relaxed capture mode; leased to this thread.
BlasHandlePool::Entry* BlasHandlePool::lease(int device) {
  State& s = *state_;
  Entry* entry = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    for (size_t i = 0; i < s.idle.size(); ++i)
      if (s.idle[i]->device == device) {
        entry = s.idle[i];
        s.idle.erase(s.idle.begin() + std::ptrdiff_t(i));
        break;
      }
  }
  if (!entry) {
    auto fresh = std::make_unique<Entry>();
    fresh->device = device;
    const CaptureMode previous = s.native->exchange_capture_mode(CaptureMode::Relaxed);
    try {
      fresh->handle = s.native->create();
    } catch (...) {
      try {
        s.native->exchange_capture_mode(previous);
      } catch (...) {  // the error that matters is create's
      }
      throw;
    }
    entry = fresh.get();
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      s.entries.push_back(std::move(fresh));
      ++s.created;
    }
    s.native->exchange_capture_mode(previous);
  }
  leases().held.push_back({s.id, device, state_, entry});
  return entry;
}

BlasHandlePool::Handle BlasHandlePool::get(int device, Stream stream, bool tf32) {
  State& s = *state_;
  Entry* entry = nullptr;
  for (const Leases::Lease& l : leases().held)
    if (l.pool == s.id && l.device == device) {
      entry = l.entry;
      break;
    }
  if (!entry) entry = lease(device);
  // The entry is this thread's alone: no lock from here on.
  if (entry->tf32 != tf32) {
    s.native->set_tf32(entry->handle, tf32);
    entry->tf32 = tf32;
  }
  if (s.workspace_bytes == 0) {  // a library taking its workspace per call
    s.native->set_stream(entry->handle, stream);
    return entry->handle;
  }
  std::shared_ptr<void>& workspace = entry->workspaces[stream];
  if (!workspace) workspace = s.native->allocate_workspace(device, stream, s.workspace_bytes);
  s.native->set_stream(entry->handle, stream);
  s.native->set_workspace(entry->handle, workspace.get(), s.workspace_bytes);  // set_stream reset it
  return entry->handle;
}

int64_t BlasHandlePool::handles_created() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->created;
}

int64_t BlasHandlePool::handles_idle() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return int64_t(state_->idle.size());
}

}  // namespace chainer::cuda
