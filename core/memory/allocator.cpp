#include "core/memory/allocator.h"

#include <sys/mman.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "core/util/config.h"
#include "core/util/parse.h"

namespace chainer {
namespace {

// Rounds a large request up to a size class: 8 classes per power of two (at most 12.5% waste),
// and at least to whole 4 KiB pages.
size_t size_class(size_t bytes) {
  size_t power = kCachedBlockMinBytes;
  while (power * 2 <= bytes) power *= 2;
  const size_t step = power / 8;
  return (bytes + step - 1) / step * step;
}

size_t limit_from_environment() {
  if (const char* mb = std::getenv("CHAINER_ALLOCATOR_CACHE_MB"); mb && *mb)
    return size_t(parse_integer(mb, "CHAINER_ALLOCATOR_CACHE_MB", 0, int64_t(1) << 30)) << 20;
  return size_t(2) << 30;
}

struct Cache {
  std::mutex mutex;
  std::map<size_t, std::vector<void*>> free_blocks;  // size class -> blocks
  AllocatorStats stats;
  size_t limit = limit_from_environment();

  // Frees cached blocks, largest first, until at most KEEP bytes stay cached. Caller holds mutex.
  void trim(size_t keep) {
    while (stats.cached_bytes > keep && !free_blocks.empty()) {
      auto it = std::prev(free_blocks.end());
      std::free(it->second.back());
      it->second.pop_back();
      stats.cached_bytes -= it->first;
      if (it->second.empty()) free_blocks.erase(it);
    }
  }
};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: storages may outlive static destruction
  return *c;
}

// Blocks of 2 MiB and more are 2 MiB aligned and advised into transparent huge pages (this
// kernel's THP mode is "madvise"): Adam and the GEMM packing stream through tens of MB of
// parameters, gradients and moments every step, which in 4 KiB pages means a TLB miss every
// 4 KiB. CHAINER_HUGEPAGES=0 turns it off.
bool use_huge_pages() {
  static const bool on = config::env_flag("CHAINER_HUGEPAGES", true);
  return on;
}

void* system_allocate(size_t bytes) {
  constexpr size_t kHuge = size_t(2) << 20;
  if (bytes >= kHuge && use_huge_pages()) {
    const size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
    void* p = std::aligned_alloc(kHuge, rounded);
    if (p) madvise(p, rounded, MADV_HUGEPAGE);  // advice only: failure changes nothing
    return p;
  }
  const size_t rounded = (bytes + 63) / 64 * 64;
  return std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
}

}  // namespace

void* host_allocate(size_t bytes) {
  if (bytes < kCachedBlockMinBytes) {
    if (void* p = system_allocate(bytes)) return p;
    throw std::bad_alloc();
  }
  const size_t cls = size_class(bytes);
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    ++c.stats.allocations;
    c.stats.in_use_bytes += cls;
    auto it = c.free_blocks.find(cls);
    if (it != c.free_blocks.end()) {
      void* p = it->second.back();
      it->second.pop_back();
      if (it->second.empty()) c.free_blocks.erase(it);
      c.stats.cached_bytes -= cls;
      ++c.stats.cache_hits;
      return p;
    }
  }
  void* p = system_allocate(cls);
  if (!p) {
    std::lock_guard<std::mutex> lock(c.mutex);
    c.trim(0);
    p = system_allocate(cls);
    if (!p) {
      c.stats.in_use_bytes -= cls;
      throw std::bad_alloc();
    }
  }
  return p;
}

void host_free(void* ptr, size_t bytes) {
  if (!ptr) return;
  if (bytes < kCachedBlockMinBytes) {
    std::free(ptr);
    return;
  }
  const size_t cls = size_class(bytes);
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.stats.in_use_bytes -= cls;
  if (cls > kCachedBlockMaxBytes || c.stats.cached_bytes + cls > c.limit) {
    std::free(ptr);
    return;
  }
  c.free_blocks[cls].push_back(ptr);
  c.stats.cached_bytes += cls;
}

AllocatorStats host_allocator_stats() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.stats;
}

size_t host_cache_limit() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.limit;
}

void set_host_cache_limit(size_t bytes) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.limit = bytes;
  c.trim(bytes);
}

void host_empty_cache() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.trim(0);
}

}  // namespace chainer
