// The policy is in core/memory/caching_allocator.h. The bookkeeping, as PyTorch's CUDACachingAllocator
// keeps it: plain structs and a few maps, one mutex around all of them.
//
// - Every block is in `blocks` (pointer -> Block) from the native allocation that made it until
//   that allocation is returned: a large block is its own native allocation, a slab is carved
//   into blocks of its class at once.
// - A block not in use is in exactly one of three places: a free list (keyed by pool, stream and
//   class; handed out from the back), `pending` (events recorded at free not yet complete), or
//   the `held` list of a capture pool (freed while that capture was under way, see retire()).
// - A slab counts its blocks that are not on a free list (`busy`); only a slab with none goes
//   back to the device, and only through empty_cache, the retry when out of memory, or the
//   destructor.
// - Pool 0 is the ordinary pool; begin_capture() numbers private pools from 1.
//
// Statistics: in_use_bytes counts the class size of blocks handed out; reserved_bytes the native
// bytes held (2 MiB per slab, the class size per large block); cached_bytes the class size of
// blocks on free lists, of every pool, private ones included: what could be handed out at once
// to a request of its class, stream and pool. Blocks waiting for events or held back for a
// graph, and a slab's tail where its class does not divide 2 MiB, are in neither in_use nor
// cached, so in_use + cached <= reserved. device_mallocs counts native allocations that
// succeeded (a failed attempt before the retry is not counted), so mallocs - frees is the number
// of native allocations held.
#include "core/memory/caching_allocator.h"

#include <algorithm>
#include <bit>
#include <compare>
#include <cstdio>
#include <limits>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/util/error.h"

namespace chainer {
namespace {

using Stream = CachingAllocator::Stream;
using Event = CachingAllocator::Event;
using PoolId = CachingAllocator::PoolId;

constexpr PoolId kOrdinary = 0;
// Larger requests fail at once as out of memory (and size classes stay free of overflow).
constexpr size_t kMaxRequest = std::numeric_limits<size_t>::max() / 4;

// "512 bytes", "12.0 MiB".
std::string format_bytes(size_t bytes) {
  if (bytes < 1024) return str(bytes, bytes == 1 ? " byte" : " bytes");
  static const char* const units[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = double(bytes) / 1024;
  int unit = 0;
  while (value >= 1024 && unit < 3) value /= 1024, ++unit;
  char text[48];
  std::snprintf(text, sizeof text, "%.1f %s", value, units[unit]);
  return text;
}

}  // namespace

struct CachingAllocator::State {
  struct Slab {
    void* base;
    size_t size;  // the class of its blocks
    size_t busy;  // its blocks not on a free list (in use, pending or held back)
  };
  struct Block {
    void* ptr;
    size_t size;  // its class
    Stream stream;
    PoolId pool;
    Slab* slab;  // nullptr: a large block, its own native allocation
    bool in_use = false;
    std::vector<Stream> stream_uses;  // other streams it was used on (record_stream)
    int pending_events = 0;
  };
  struct Key {
    PoolId pool;
    uintptr_t stream;
    size_t size;
    auto operator<=>(const Key&) const = default;
  };
  struct Pool {
    bool capturing = true;
    std::vector<Block*> held;  // blocks freed during its capture that its graph may read (retire())
  };

  std::string device;
  std::unique_ptr<Native> native;
  mutable std::mutex mutex;
  std::unordered_map<void*, Block> blocks;  // node-based: Block* and Slab* stay valid
  std::unordered_map<void*, Slab> slabs;
  std::map<Key, std::vector<Block*>> free_lists;
  std::vector<std::pair<Event, Block*>> pending;
  std::map<PoolId, Pool> pools;  // private pools not yet released
  std::unordered_map<Stream, PoolId> capturing;
  PoolId next_pool = 1;
  cuda::MemoryStats stats;

  static Key key(PoolId pool, Stream stream, size_t size) {
    return {pool, reinterpret_cast<uintptr_t>(stream), size};
  }

  void push_free(Block* b) {
    free_lists[key(b->pool, b->stream, b->size)].push_back(b);
    if (b->slab) --b->slab->busy;
    stats.cached_bytes += b->size;
  }

  Block* pop_free(PoolId pool, Stream stream, size_t size) {
    auto it = free_lists.find(key(pool, stream, size));
    if (it == free_lists.end() || it->second.empty()) return nullptr;
    Block* b = it->second.back();
    it->second.pop_back();
    if (b->slab) ++b->slab->busy;
    stats.cached_bytes -= b->size;
    return b;
  }

  Block* add_block(void* ptr, size_t size, Stream stream, PoolId pool, Slab* slab) {
    return &blocks.try_emplace(ptr, Block{ptr, size, stream, pool, slab, false, {}, 0}).first->second;
  }

  void native_free(void* ptr, size_t bytes) {
    native->free(ptr);
    ++stats.device_frees;
    stats.reserved_bytes -= bytes;
  }

  // A new block of class SIZE from the device: a large block, or the first of a new slab whose
  // other blocks go to the free list. Out of memory, the cache is returned and the device asked
  // once more, unless a capture is under way (see the policy); nullptr when that fails too.
  Block* allocate_native(PoolId pool, Stream stream, size_t size) {
    const bool small = size <= kSmallLimit;
    const size_t bytes = small ? kSlabBytes : size;
    void* ptr = native->allocate(bytes);
    if (!ptr) {
      process_events();
      if (capturing.empty() && release_cached()) ptr = native->allocate(bytes);
    }
    if (!ptr) return nullptr;
    ++stats.device_mallocs;
    stats.reserved_bytes += bytes;
    if (!small) return add_block(ptr, size, stream, pool, nullptr);
    const size_t count = kSlabBytes / size;
    Slab* slab = &slabs.try_emplace(ptr, Slab{ptr, size, count}).first->second;
    // Pushed last to first, so the slab is handed out in address order.
    char* base = static_cast<char*>(ptr);
    for (size_t i = count - 1; i > 0; --i) push_free(add_block(base + i * size, size, stream, pool, slab));
    return add_block(ptr, size, stream, pool, slab);
  }

  // The capture under way on B's stream or on a stream B was also used on; 0 when none.
  PoolId capture_reading(const Block& b) const {
    auto pool_of = [&](Stream s) {
      auto it = capturing.find(s);
      return it == capturing.end() ? kOrdinary : it->second;
    };
    if (PoolId pool = pool_of(b.stream)) return pool;
    for (Stream s : b.stream_uses)
      if (PoolId pool = pool_of(s)) return pool;
    return kOrdinary;
  }

  // B is no longer in use: where it goes.
  // - A capture under way may read it: held back with that capture's pool until release_pool,
  //   unless B is that pool's own block used on no other stream (a temporary of the capture,
  //   reused within it in stream order). No event is recorded on a stream being captured.
  // - Used on other streams: pending until events recorded on them now complete.
  // - Otherwise: its free list, ready at once.
  void retire(Block* b) {
    const PoolId capture = capture_reading(*b);
    if (capture != kOrdinary && (capture != b->pool || !b->stream_uses.empty())) {
      pools.at(capture).held.push_back(b);
      return;
    }
    if (!b->stream_uses.empty()) {
      for (Stream s : b->stream_uses) {
        pending.emplace_back(native->record_event(s), b);
        ++b->pending_events;
      }
      b->stream_uses.clear();
      return;
    }
    push_free(b);
  }

  // Pending blocks whose events have all completed go to their free lists.
  void process_events() {
    size_t kept = 0;
    for (size_t i = 0; i < pending.size(); ++i) {
      auto [event, b] = pending[i];
      if (!native->event_done(event)) {
        pending[kept++] = pending[i];
        continue;
      }
      native->destroy_event(event);
      if (--b->pending_events == 0) push_free(b);
    }
    pending.resize(kept);
  }

  // Returns the ordinary pool's free large blocks and its slabs with no busy block to the
  // device. Whether anything was returned. A block leaves the books only once the device took it
  // back, so a free that throws leaves it, and the rest, cached and counted.
  bool release_cached() {
    std::vector<Block*> large;
    std::vector<Block*> slab_bases;  // the first block of each slab with none busy
    for (const auto& [k, list] : free_lists) {
      if (k.pool != kOrdinary) continue;
      for (Block* b : list) {
        if (!b->slab) large.push_back(b);
        else if (b->slab->busy == 0 && b->ptr == b->slab->base) slab_bases.push_back(b);
      }
    }
    for (Block* b : large) {
      void* const ptr = b->ptr;  // copied: the erase below destroys *b
      native_free(ptr, b->size);
      unlist(b->pool, b->stream, b->size, [&](Block* x) { return x == b; });
      stats.cached_bytes -= b->size;
      blocks.erase(ptr);
    }
    for (Block* first : slab_bases) {
      Slab* slab = first->slab;
      void* const base = slab->base;
      const size_t size = slab->size, count = kSlabBytes / size;
      native_free(base, kSlabBytes);
      // A slab with none busy has all its blocks on this one list.
      unlist(first->pool, first->stream, size, [&](Block* x) { return x->slab == slab; });
      stats.cached_bytes -= count * size;
      for (size_t i = 0; i < count; ++i) blocks.erase(static_cast<char*>(base) + i * size);
      slabs.erase(base);
    }
    return !large.empty() || !slab_bases.empty();
  }

  // Takes the blocks that WHICH picks off the free list of POOL, STREAM and SIZE.
  template <class Pick>
  void unlist(PoolId pool, Stream stream, size_t size, Pick which) {
    auto it = free_lists.find(key(pool, stream, size));
    CHAINER_ASSERT(it != free_lists.end(), "CachingAllocator: a cached block is on no free list (", device, ")");
    std::erase_if(it->second, which);
    if (it->second.empty()) free_lists.erase(it);
  }

  std::string out_of_memory(size_t bytes) const {
    return str("out of memory on ", device, ": tried to allocate ", format_bytes(bytes), " (",
               format_bytes(stats.in_use_bytes), " already in use, ", format_bytes(stats.cached_bytes),
               " cached and ", format_bytes(stats.reserved_bytes),
               " reserved in all by the allocator); try a smaller batch size");
  }

  Block* find_in_use(void* ptr, const char* what) {
    auto it = blocks.find(ptr);
    CHAINER_ASSERT(it != blocks.end() && it->second.in_use, what, ": ", ptr,
                   " is not a block in use from the allocator of ", device,
                   it == blocks.end() ? "" : " (not in use: freed already?)");
    return &it->second;
  }
};

size_t CachingAllocator::size_class(size_t bytes) {
  CHAINER_ASSERT(bytes <= kMaxRequest, "size_class: ", bytes, " bytes is beyond any device");
  const size_t rounded = std::max(kMinBlock, (bytes + kMinBlock - 1) / kMinBlock * kMinBlock);
  const size_t step = std::max(kMinBlock, std::bit_floor(rounded) / 8);  // 8 classes per power of two
  return (rounded + step - 1) / step * step;
}

CachingAllocator::CachingAllocator(std::string device_name, std::unique_ptr<Native> native)
    : state_(std::make_unique<State>()) {
  CHAINER_ASSERT(native, "CachingAllocator: no native allocator for ", device_name);
  state_->device = std::move(device_name);
  state_->native = std::move(native);
}

// A block still in use here is the owner's bug; its memory is returned all the same, since the
// device's memory goes with its allocator.
// A device call that fails here (the runtime torn down first at exit) leaves the rest to the
// process's end: a destructor must not throw.
CachingAllocator::~CachingAllocator() {
  State& s = *state_;
  try {
    for (auto [event, b] : s.pending) s.native->destroy_event(event);
    for (auto& [base, slab] : s.slabs) s.native->free(base);
    for (auto& [ptr, b] : s.blocks)
      if (!b.slab) s.native->free(ptr);
  } catch (...) {
  }
}

void* CachingAllocator::allocate(size_t bytes, Stream stream) {
  State& s = *state_;
  std::lock_guard lock(s.mutex);
  if (bytes > kMaxRequest) throw Error(s.out_of_memory(bytes));
  s.process_events();
  const size_t size = size_class(bytes);
  const auto capture = s.capturing.find(stream);
  const PoolId pool = capture == s.capturing.end() ? kOrdinary : capture->second;
  State::Block* b = s.pop_free(pool, stream, size);
  if (b) {
    ++s.stats.cache_hits;
  } else if (!(b = s.allocate_native(pool, stream, size))) {
    if (pool != kOrdinary)
      throw CaptureOutOfMemory(s.out_of_memory(bytes) +
                               " (while a CUDA graph was being captured, when the cache is not returned to the device)");
    if (!s.capturing.empty())
      throw Error(s.out_of_memory(bytes) + " (while a CUDA graph was being captured on another stream, when the "
                                           "cache is not returned to the device)");
    throw Error(s.out_of_memory(bytes));
  }
  b->in_use = true;
  ++s.stats.allocations;
  s.stats.in_use_bytes += size;
  s.stats.peak_in_use_bytes = std::max(s.stats.peak_in_use_bytes, s.stats.in_use_bytes);
  return b->ptr;
}

void CachingAllocator::free(void* ptr) {
  State& s = *state_;
  std::lock_guard lock(s.mutex);
  State::Block* b = s.find_in_use(ptr, "CachingAllocator::free");
  b->in_use = false;
  s.stats.in_use_bytes -= b->size;
  s.process_events();
  s.retire(b);
}

void CachingAllocator::record_stream(void* ptr, Stream stream) {
  State& s = *state_;
  std::lock_guard lock(s.mutex);
  State::Block* b = s.find_in_use(ptr, "CachingAllocator::record_stream");
  auto& uses = b->stream_uses;
  if (stream != b->stream && std::find(uses.begin(), uses.end(), stream) == uses.end()) uses.push_back(stream);
}

CachingAllocator::PoolId CachingAllocator::begin_capture(Stream stream) {
  State& s = *state_;
  std::lock_guard lock(s.mutex);
  CHAINER_ASSERT(!s.capturing.contains(stream), "begin_capture: the stream is being captured already (", s.device, ")");
  const PoolId pool = s.next_pool++;
  s.pools[pool] = {};
  s.capturing[stream] = pool;
  return pool;
}

void CachingAllocator::end_capture(Stream stream) {
  State& s = *state_;
  std::lock_guard lock(s.mutex);
  auto it = s.capturing.find(stream);
  CHAINER_ASSERT(it != s.capturing.end(), "end_capture: the stream is not being captured (", s.device, ")");
  s.pools.at(it->second).capturing = false;
  s.capturing.erase(it);
}

void CachingAllocator::release_pool(PoolId pool) {
  State& s = *state_;
  std::lock_guard lock(s.mutex);
  auto it = s.pools.find(pool);
  CHAINER_ASSERT(it != s.pools.end(), "release_pool: no pool ", pool, " on ", s.device, " (released already?)");
  CHAINER_ASSERT(!it->second.capturing, "release_pool: pool ", pool, " on ", s.device, " is being captured");
  const std::vector<State::Block*> held = std::move(it->second.held);
  s.pools.erase(it);
  // Its blocks, wherever they are, belong to their stream's ordinary pool from now on.
  for (auto& [ptr, b] : s.blocks)
    if (b.pool == pool) b.pool = kOrdinary;
  auto list = s.free_lists.lower_bound({pool, 0, 0});
  while (list != s.free_lists.end() && list->first.pool == pool) {
    auto& to = s.free_lists[{kOrdinary, list->first.stream, list->first.size}];
    to.insert(to.end(), list->second.begin(), list->second.end());
    list = s.free_lists.erase(list);
  }
  // What its graph might have read goes back as if freed now.
  for (State::Block* b : held) s.retire(b);
}

void CachingAllocator::empty_cache() {
  State& s = *state_;
  std::lock_guard lock(s.mutex);
  s.process_events();
  if (s.capturing.empty()) s.release_cached();  // see the policy: nothing is returned during a capture
}

cuda::MemoryStats CachingAllocator::stats() const {
  std::lock_guard lock(state_->mutex);
  return state_->stats;
}

void CachingAllocator::reset_peak() {
  std::lock_guard lock(state_->mutex);
  state_->stats.peak_in_use_bytes = state_->stats.in_use_bytes;
}

}  // namespace chainer
