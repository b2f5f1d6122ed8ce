// Pinned host buffers for host-to-device copies, one pool per device: a copy from pinned memory
// runs asynchronously (one from pageable memory may wait for the stream), and pinning costs about
// as much as cudaMalloc, so buffers are kept and reused. The policy is written against an injected
// Native interface, as CachingAllocator's, so it is tested on the host
// (tests/core/memory/test_caching_allocator.cpp); core/cuda/device_runtime.cpp plugs in cudaHostAlloc, cudaFreeHost
// and events.
//
// - A buffer is handed out again once the copy that read it has completed: an event is recorded
//   on the copy's stream when it is given back (release), and a ready buffer of the smallest
//   fitting size is taken first.
// - Sizes are powers of two from 4 KiB, so a training loop's batches reuse one or two buffers.
// - Bounded: what the pool holds (free, in flight and handed out) stays under a limit. A request
//   that would pass it first returns free buffers to the host, oldest first, waiting for the copy
//   that read one when it is still in flight: a host that runs ahead of the device by more than
//   the limit is held back by its oldest copy instead of pinning ever more memory. Only buffers
//   handed out and not given back (a captured graph's) can take it past the limit, and buffers
//   for copies being captured: a capture may not free pinned memory nor wait for (or even ask
//   about) a copy, so each gets a new buffer, and trim() returns the excess once it is over.
// - Never throws from its destructor: buffers are returned as far as the device allows.
// Thread-safe (one mutex; a wait for a copy holds it).
#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>

namespace chainer {

class PinnedStaging {
 public:
  using Stream = void*;  // opaque: a cudaStream_t in the CUDA runtime
  using Event = void*;   // opaque: a cudaEvent_t

  // The device's pinned-memory and event functions.
  class Native {
   public:
    virtual ~Native() = default;
    virtual void* allocate(size_t bytes) = 0;  // pinned host memory; throws when there is none
    virtual void free(void* ptr) = 0;          // PTR from allocate
    virtual Event create_event() = 0;          // an event not yet recorded (it counts as done)
    virtual void record_event(Event event, Stream stream) = 0;
    virtual bool event_done(Event event) = 0;  // whether the work before EVENT has completed
    virtual void wait_event(Event event) = 0;  // blocks the host until it has
    virtual void destroy_event(Event event) = 0;
  };

  struct Buffer {
    void* ptr = nullptr;
    size_t bytes = 0;      // its size: at least what was asked for
    Event done = nullptr;  // recorded when it is given back
  };
  struct Stats {
    size_t held_bytes = 0;        // pinned memory held: free, in flight and handed out
    size_t free_bytes = 0;        // of that, in buffers given back
    int64_t host_allocs = 0;      // buffers pinned so far
    int64_t host_frees = 0;       // buffers returned so far
    int64_t waits = 0;            // times acquire waited for a copy to make room
  };

  static constexpr size_t kMinBuffer = 4096;
  static constexpr size_t kDefaultLimit = size_t(256) << 20;
  // The size of the buffer a request of BYTES gets.
  static size_t buffer_size(size_t bytes);

  // LIMIT: the pinned bytes the pool aims to stay under.
  explicit PinnedStaging(std::unique_ptr<Native> native, size_t limit = kDefaultLimit);
  ~PinnedStaging();  // returns the buffers given back; one handed out and never given back is the owner's
  PinnedStaging(const PinnedStaging&) = delete;
  PinnedStaging& operator=(const PinnedStaging&) = delete;

  // A buffer of at least BYTES, free to be written at once.
  Buffer acquire(size_t bytes);
  // The same for a copy that a CUDA graph captures: always a new buffer, past the limit if need
  // be; no buffer is returned and no copy waited for or asked about.
  Buffer acquire_while_capturing(size_t bytes);
  // Returns free buffers to the host, oldest first (waiting for the copy that read one), until
  // the pool is back under its limit or has none left: after a capture passed it.
  void trim();
  // B is read by work queued on STREAM so far (a copy); it is handed out again once that completes.
  void release(Buffer b, Stream stream);
  Stats stats() const;

 private:
  void return_buffer(const Buffer& b);
  void wait_for_oldest();    // until the copy that read the oldest free buffer is done
  Buffer pin(size_t size);  // a new buffer
  std::unique_ptr<Native> native_;
  size_t limit_;
  mutable std::mutex mutex_;
  std::deque<Buffer> free_;  // given back, oldest first (their copies complete in that order per stream)
  Stats stats_;
};

}  // namespace chainer
