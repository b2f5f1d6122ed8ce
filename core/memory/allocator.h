/// @file
/// The host memory behind every CPU Storage: 64-byte aligned blocks, with large blocks kept for
/// reuse instead of returned to the C library.
///
/// Why: a training step allocates the same large tensors (activations, gradients, GEMM results,
/// all-reduce buckets) every iteration. Returned to glibc, blocks of this size are unmapped and
/// mapped again, and every page is faulted in and zeroed by the kernel on first touch: measured
/// here, up to a fifth of a data-parallel epoch went to page faults. Like PyTorch's caching
/// allocators, we keep freed large blocks in per-size free lists (sizes rounded up to limit the
/// number of classes) and hand them out again. Small blocks go straight to malloc, whose thread
/// caches already serve them well.
///
/// Blocks above kCachedBlockMaxBytes are not cached either: a step rarely frees one (a data set,
/// a one-off copy of it does), and kept, it would stay resident for the rest of the run; where
/// a step does (a large activation), faulting it in again costs little beside the work that
/// fills it. glibc's malloc draws the same line (its mmap threshold stops growing at 32 MiB).
/// The cache holds at most cache_limit() bytes of free blocks (default 2 GiB, or
/// $CHAINER_ALLOCATOR_CACHE_MB); beyond it freed blocks go back to the system. Thread-safe.
/// Blocks of 2 MiB and more are 2 MiB aligned and advised into transparent huge pages
/// (CHAINER_HUGEPAGES=0 turns that off): fewer TLB misses where a step streams through tens of
/// MB (Adam, GEMM packing); measured 5-20% off an epoch here.
#pragma once
#include <cstddef>
#include <cstdint>

namespace chainer {

/// Counters of the host allocator, from host_allocator_stats().
struct AllocatorStats {
  int64_t allocations = 0;  ///< large blocks handed out
  int64_t cache_hits = 0;   ///< of those, served from the cache
  size_t cached_bytes = 0;  ///< free blocks held right now
  size_t in_use_bytes = 0;  ///< large blocks handed out and not yet freed
};

/// Blocks at least this large are cached (up to kCachedBlockMaxBytes).
constexpr size_t kCachedBlockMinBytes = size_t(64) << 10;
/// Blocks larger than this go back to the system when freed.
constexpr size_t kCachedBlockMaxBytes = size_t(32) << 20;

/// Allocates 64-byte aligned host memory, at least BYTES long (a zero-byte request still gets a
/// block). Throws std::bad_alloc when the system has no memory left, after returning the cache to it.
void* host_allocate(size_t bytes);
/// Frees PTR from host_allocate(BYTES), with the same BYTES.
void host_free(void* ptr, size_t bytes);

/// The allocator's counters now.
AllocatorStats host_allocator_stats();
/// The most bytes of free blocks the cache holds.
size_t host_cache_limit();
/// Sets the cache limit; frees cached blocks beyond the new limit.
void set_host_cache_limit(size_t bytes);
/// Returns every cached block to the system.
void host_empty_cache();

}  // namespace chainer
