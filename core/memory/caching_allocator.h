// The caching allocator behind every CUDA tensor: one per device. A training step allocates the
// same tensors every iteration, and cudaMalloc/cudaFree cost tens of microseconds and synchronize
// the device, so freed blocks are kept and handed out again; a steady-state step calls cudaMalloc
// zero times. The policy is written against an injected Native interface, so it is tested on the
// host (tests/core/memory/test_caching_allocator.cpp); core/cuda/runtime.cu plugs in cudaMalloc, cudaFree and
// events. The policy, as PyTorch's CUDACachingAllocator with what a training loop does not need
// left out (no block splitting or merging):
//
// - Size classes. A request rounds up to a multiple of 512 bytes, then to one of 8 classes per
//   power of two (at most 12.5% waste). Blocks are reused only for requests of their class.
// - Small and large. Classes up to 1 MiB are carved from 2 MiB slabs, one class per slab, so a
//   step's many small tensors (scalars, biases) cost few native allocations; larger classes get
//   one native allocation per block.
// - Streams. A block belongs to the stream it was allocated for and is reused only for requests on
//   that stream: work on one stream runs in order, so a block freed after its last use was queued
//   is safe to hand out again at once. A block also used on another stream (record_stream) goes
//   back only once events recorded on those streams at free time have completed.
// - Graph capture. While a stream is captured into a CUDA graph, its requests come from a pool
//   private to that capture, whose blocks are never handed to anything else while the graph
//   lives, so replays may write them. Blocks allocated before the capture and freed during it are
//   held back until the pool is released (the graph may read them). release_pool() returns the
//   pool's free blocks to the stream's ordinary pool, and its blocks still in use go there when
//   freed.
// - Out of memory. When the native allocation fails, every cached free block (private pools'
//   excepted) is returned and the allocation retried once; then chainer::Error names the device,
//   the size asked for, what is in use and cached, and suggests a smaller batch. While any stream
//   is being captured nothing is returned (cudaFree is not stream-ordered: it would invalidate
//   the capture, and a block freed there might be one the graph reads; PyTorch's allocator skips
//   that step during captures too): a request on the captured stream then throws
//   CaptureOutOfMemory, so the caller abandons the capture and runs the step eagerly, where the
//   cache can be returned; a request on another stream throws chainer::Error.
// - Statistics: bytes in use (by class size), their peak, bytes reserved from the device, native
//   allocation and free counts, requests and cache hits.
// Thread-safe.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/device/cuda.h"

namespace chainer {

// The device ran out of memory while a stream was being captured into a CUDA graph: a capture
// failure (the step may fit when run eagerly), not the end of training.
class CaptureOutOfMemory : public cuda::CaptureError {
 public:
  using cuda::CaptureError::CaptureError;
};

class CachingAllocator {
 public:
  using Stream = void*;  // opaque: a cudaStream_t in the CUDA runtime
  using Event = void*;   // opaque: a cudaEvent_t
  using PoolId = uint64_t;

  // The device's own memory functions.
  class Native {
   public:
    virtual ~Native() = default;
    virtual void* allocate(size_t bytes) = 0;  // nullptr when the device is out of memory
    virtual void free(void* ptr) = 0;          // PTR from allocate (may wait for the device)
    virtual Event record_event(Stream stream) = 0;
    virtual bool event_done(Event event) = 0;  // whether the work before EVENT has completed
    virtual void destroy_event(Event event) = 0;
  };

  static constexpr size_t kMinBlock = 512;
  static constexpr size_t kSmallLimit = size_t(1) << 20;  // classes up to this come from slabs
  static constexpr size_t kSlabBytes = size_t(2) << 20;
  // The class a request of BYTES is served from (at least kMinBlock, also for 0 bytes).
  static size_t size_class(size_t bytes);

  // DEVICE_NAME ("cuda:0") appears in error messages.
  CachingAllocator(std::string device_name, std::unique_ptr<Native> native);
  ~CachingAllocator();  // returns every block to NATIVE (nothing may be in use by then)
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least BYTES for work on STREAM. Throws chainer::Error when the device has no
  // memory left even after the cache was returned.
  void* allocate(size_t bytes, Stream stream);
  // PTR from allocate. Throws InternalError for a pointer this allocator did not hand out.
  void free(void* ptr);
  // PTR is also used by work queued on STREAM (besides its own stream).
  void record_stream(void* ptr, Stream stream);

  // Requests for STREAM come from a new private pool until end_capture(STREAM).
  PoolId begin_capture(Stream stream);
  void end_capture(Stream stream);
  // The graph that used POOL is gone (see the policy above).
  void release_pool(PoolId pool);

  // Returns every cached free block (and every slab with no block in use) to the device;
  // private pools' blocks stay. Returns nothing while a stream is being captured.
  void empty_cache();
  cuda::MemoryStats stats() const;
  void reset_peak();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace chainer
