// The device caching allocator's policy (core/memory/caching_allocator.h), on the host: a fake device
// hands out malloc'd memory (unique, writable, checked by the sanitizers), counts its calls, can
// run out of memory at a byte budget, and records events whose completion the test decides. The
// pinned staging buffers' policy (core/memory/pinned_staging.h) likewise, at the end.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/memory/caching_allocator.h"
#include "core/util/error.h"
#include "core/memory/pinned_staging.h"

using chainer::CachingAllocator;
using chainer::CaptureOutOfMemory;

namespace {

using Stream = CachingAllocator::Stream;
using Event = CachingAllocator::Event;

constexpr size_t KiB = 1024, MiB = 1024 * KiB;

Stream stream(int i) { return reinterpret_cast<Stream>(static_cast<uintptr_t>(i)); }
const Stream s1 = stream(1), s2 = stream(2), s3 = stream(3);

// What the device saw, shared between a test and the FakeNative its allocator owns.
struct FakeDevice {
  struct FakeEvent {
    Stream stream;
    bool done = false;
    bool destroyed = false;
  };
  std::mutex mutex;
  size_t budget = std::numeric_limits<size_t>::max();  // bytes it can hand out in all
  size_t used = 0;
  int64_t allocate_calls = 0;  // failed ones included
  int64_t allocations = 0;
  int64_t frees = 0;
  int failing_frees = 0;  // the next this many frees fail (the memory stays allocated)
  std::map<void*, size_t> live;
  std::vector<std::unique_ptr<FakeEvent>> events;

  // The work queued on S so far has completed: its events are done.
  void complete(Stream s) {
    for (auto& e : events)
      if (e->stream == s) e->done = true;
  }
  int events_recorded(Stream s) const {
    int n = 0;
    for (auto& e : events) n += e->stream == s;
    return n;
  }
  int events_alive() const {
    int n = 0;
    for (auto& e : events) n += !e->destroyed;
    return n;
  }
};

class FakeNative : public CachingAllocator::Native {
 public:
  explicit FakeNative(std::shared_ptr<FakeDevice> device) : d_(std::move(device)) {}
  void* allocate(size_t bytes) override {
    std::lock_guard lock(d_->mutex);
    ++d_->allocate_calls;
    if (bytes > d_->budget - d_->used) return nullptr;
    void* p = std::malloc(bytes);
    d_->live[p] = bytes;
    d_->used += bytes;
    ++d_->allocations;
    return p;
  }
  void free(void* ptr) override {
    std::lock_guard lock(d_->mutex);
    auto it = d_->live.find(ptr);
    if (it == d_->live.end()) throw std::logic_error("fake device: free of a pointer it did not allocate");
    if (d_->failing_frees > 0) {
      --d_->failing_frees;
      throw std::runtime_error("fake device: the free failed");
    }
    d_->used -= it->second;
    d_->live.erase(it);
    std::free(ptr);
    ++d_->frees;
  }
  Event record_event(Stream s) override {
    std::lock_guard lock(d_->mutex);
    d_->events.push_back(std::make_unique<FakeDevice::FakeEvent>(FakeDevice::FakeEvent{s}));
    return d_->events.back().get();
  }
  bool event_done(Event e) override {
    std::lock_guard lock(d_->mutex);
    auto* event = static_cast<FakeDevice::FakeEvent*>(e);
    if (event->destroyed) throw std::logic_error("fake device: query of a destroyed event");
    return event->done;
  }
  void destroy_event(Event e) override {
    std::lock_guard lock(d_->mutex);
    auto* event = static_cast<FakeDevice::FakeEvent*>(e);
    if (event->destroyed) throw std::logic_error("fake device: event destroyed twice");
    event->destroyed = true;
  }

 private:
  std::shared_ptr<FakeDevice> d_;
};

// An allocator for "cuda:0" over a fake device with BUDGET bytes.
struct Setup {
  std::shared_ptr<FakeDevice> device = std::make_shared<FakeDevice>();
  std::unique_ptr<CachingAllocator> alloc;
  explicit Setup(size_t budget = std::numeric_limits<size_t>::max()) {
    device->budget = budget;
    alloc = std::make_unique<CachingAllocator>("cuda:0", std::make_unique<FakeNative>(device));
  }
  // Allocates and writes every byte (the sanitizers catch a block that overlaps another).
  void* take(size_t bytes, Stream s = s1) {
    void* p = alloc->allocate(bytes, s);
    std::memset(p, 0xab, bytes);
    return p;
  }
};

}  // namespace

TEST_CASE("caching allocator: size classes are multiples of 512 bytes, 8 per power of two") {
  auto size_class = &CachingAllocator::size_class;
  CHECK(size_class(0) == 512);
  CHECK(size_class(1) == 512);
  CHECK(size_class(512) == 512);
  CHECK(size_class(513) == 1024);
  CHECK(size_class(1025) == 1536);
  CHECK(size_class(4096) == 4096);
  CHECK(size_class(4097) == 4608);  // 4 KiB + 4 KiB / 8
  CHECK(size_class(8193) == 9216);  // 8 KiB + 8 KiB / 8
  CHECK(size_class(1 * MiB) == 1 * MiB);
  CHECK(size_class(1 * MiB + 1) == 1 * MiB + 128 * KiB);
  CHECK(size_class(3 * MiB - 1000) == 3 * MiB);
  CHECK(size_class(100'000'000) == 96 * MiB);  // 64 MiB + 4 x 8 MiB >= 100 MB
  CHECK(size_class((size_t(1) << 40) + 1) == (size_t(1) << 40) + (size_t(1) << 37));
  // Never smaller than asked, at most 12.5% (or 511 bytes) more, and a class is its own class.
  for (size_t bytes = 1; bytes < 64 * MiB; bytes = bytes * 5 / 4 + 7) {
    const size_t c = size_class(bytes);
    INFO(bytes << " bytes -> " << c);
    CHECK(c >= bytes);
    CHECK(c % 512 == 0);
    CHECK(c - bytes <= std::max<size_t>(511, bytes / 8));
    CHECK(size_class(c) == c);
  }
}

TEST_CASE("caching allocator: a repeated training step allocates from the device only in the first") {
  Setup t;
  // Tensors of an MLP step (scalars, biases, inputs, activations, weights, gradients) on two streams.
  const std::vector<size_t> sizes = {4, 4, 40, 4000, 4000, 313'600,  // scalars, biases, a batch of 100 x 784
                                     400'000, 400'000, 4'000'000, 3'136'000, 40'000};
  auto step = [&] {
    std::vector<void*> blocks;
    for (size_t i = 0; i < sizes.size(); ++i) blocks.push_back(t.take(sizes[i], i % 3 ? s1 : s2));
    t.alloc->free(blocks[5]);  // freed mid-step and asked for again
    blocks[5] = t.take(sizes[5], s2);
    for (size_t i = blocks.size(); i-- > 0;) t.alloc->free(blocks[i]);
  };
  step();
  const int64_t after_first = t.device->allocate_calls;
  const auto first = t.alloc->stats();
  CHECK(first.device_mallocs == after_first);
  for (int i = 0; i < 9; ++i) step();
  CHECK(t.device->allocate_calls == after_first);
  CHECK(t.device->frees == 0);
  const auto s = t.alloc->stats();
  CHECK(s.allocations == 10 * int64_t(sizes.size() + 1));
  CHECK(s.cache_hits == s.allocations - s.device_mallocs);
  CHECK(s.in_use_bytes == 0);
  CHECK(s.reserved_bytes == first.reserved_bytes);
}

TEST_CASE("caching allocator: a freed block is handed out again only for its own class") {
  Setup t;
  void* small = t.take(1000);  // class 1024
  t.alloc->free(small);
  void* other = t.take(1500);  // class 1536: another slab
  CHECK(other != small);
  CHECK(t.alloc->stats().device_mallocs == 2);
  CHECK(t.take(600) == small);  // 600 bytes is class 1024 too
  t.alloc->free(other);

  void* large = t.take(3 * MiB);
  t.alloc->free(large);
  void* larger = t.take(3 * MiB + 1);  // class 3.25 MiB
  CHECK(larger != large);
  CHECK(t.alloc->stats().device_mallocs == 4);
  CHECK(t.take(3 * MiB - 1000) == large);  // class 3 MiB
  CHECK(t.alloc->stats().device_mallocs == 4);
}

TEST_CASE("caching allocator: a freed block is handed out again only for its own stream") {
  Setup t;
  void* p = t.take(5 * MiB, s1);
  t.alloc->free(p);
  void* q = t.take(5 * MiB, s2);
  CHECK(q != p);
  CHECK(t.alloc->stats().device_mallocs == 2);
  CHECK(t.take(5 * MiB, s1) == p);  // at once: work on one stream runs in order, no event needed
  CHECK(t.device->events.empty());

  void* small = t.take(100, s1);
  t.alloc->free(small);
  CHECK(t.take(100, s2) != small);  // small blocks too: s2 gets a slab of its own
  CHECK(t.alloc->stats().device_mallocs == 4);
}

TEST_CASE("caching allocator: small classes are carved from 2 MiB slabs, one class per slab") {
  Setup t;
  std::set<void*> seen;
  for (int i = 0; i < 4096; ++i) seen.insert(t.take(512));  // 4096 x 512 bytes = one slab
  CHECK(seen.size() == 4096);
  auto s = t.alloc->stats();
  CHECK(s.device_mallocs == 1);
  CHECK(t.device->live.begin()->second == 2 * MiB);
  CHECK(s.reserved_bytes == 2 * MiB);
  CHECK(s.in_use_bytes == 2 * MiB);
  CHECK(s.cache_hits == 4095);
  // The 4097th block starts a second slab, and so does another class.
  seen.insert(t.take(512));
  CHECK(t.alloc->stats().device_mallocs == 2);
  void* a = t.take(1 * MiB);
  void* b = t.take(1 * MiB);  // classes up to 1 MiB come from slabs: two per slab
  CHECK(t.alloc->stats().device_mallocs == 3);
  CHECK(static_cast<char*>(b) - static_cast<char*>(a) == std::ptrdiff_t(1 * MiB));
  t.take(1 * MiB + 1);  // above 1 MiB: one native allocation per block
  CHECK(t.alloc->stats().device_mallocs == 4);
  CHECK(t.device->used == 3 * 2 * MiB + 1 * MiB + 128 * KiB);
  CHECK(t.alloc->stats().reserved_bytes == t.device->used);
}

TEST_CASE("caching allocator: a block used on another stream is reused only after its event completes") {
  Setup t;
  void* p = t.take(5 * MiB, s1);
  t.alloc->record_stream(p, s2);
  t.alloc->record_stream(p, s2);  // once is enough
  t.alloc->record_stream(p, s1);  // its own stream needs no event
  t.alloc->free(p);
  CHECK(t.device->events_recorded(s2) == 1);
  CHECK(t.device->events_recorded(s1) == 0);
  CHECK(t.alloc->stats().cached_bytes == 0);  // not ready for reuse

  void* q = t.take(5 * MiB, s1);  // s2 may still read p
  CHECK(q != p);
  CHECK(t.alloc->stats().device_mallocs == 2);

  t.device->complete(s2);
  CHECK(t.take(5 * MiB, s1) == p);
  CHECK(t.alloc->stats().device_mallocs == 2);
  CHECK(t.device->events_alive() == 0);

  // The event is checked at the next free and empty_cache as well.
  t.alloc->record_stream(p, s3);
  t.alloc->free(p);
  t.device->complete(s3);
  t.alloc->free(q);  // sees the event done
  CHECK(t.alloc->stats().cached_bytes == 10 * MiB);
  CHECK(t.device->events_alive() == 0);

  void* r = t.take(5 * MiB, s1);
  t.alloc->record_stream(r, s2);
  t.alloc->free(r);
  t.alloc->empty_cache();  // returns the other free block and keeps r: s2 may still use it
  CHECK(t.device->live.size() == 1);
  CHECK(t.device->live.count(r) == 1);
  t.device->complete(s2);
  t.alloc->empty_cache();
  CHECK(t.device->live.empty());
  CHECK(t.device->events_alive() == 0);
}

TEST_CASE("caching allocator: a capture allocates from a private pool that ordinary requests never see") {
  Setup t;
  void* before = t.take(5 * MiB, s1);
  t.alloc->free(before);  // a free ordinary block of the class
  const auto pool = t.alloc->begin_capture(s1);
  void* in_graph = t.take(5 * MiB, s1);
  CHECK(in_graph != before);
  CHECK(t.alloc->stats().device_mallocs == 2);
  void* temp = t.take(5 * MiB, s1);
  t.alloc->free(temp);  // a temporary of the capture is reused within it, in stream order
  CHECK(t.take(5 * MiB, s1) == temp);
  CHECK(t.take(5 * MiB, s2) != in_graph);  // other streams are not captured
  t.alloc->end_capture(s1);

  t.alloc->free(in_graph);
  t.alloc->free(temp);
  CHECK(t.take(5 * MiB, s1) == before);
  void* fresh = t.take(5 * MiB, s1);  // the pool's two free blocks stay with the graph
  CHECK(fresh != in_graph);
  CHECK(fresh != temp);
  CHECK(t.alloc->stats().device_mallocs == 5);
  // A later capture gets a pool of its own.
  const auto second = t.alloc->begin_capture(s1);
  CHECK(second != pool);
  void* next = t.take(5 * MiB, s1);
  CHECK(next != in_graph);
  CHECK(next != temp);
  t.alloc->end_capture(s1);
  t.alloc->free(next);
  t.alloc->release_pool(second);

  // Small blocks too: the capture's slab is its own.
  void* small_before = t.take(100, s1);
  t.alloc->free(small_before);
  const auto third = t.alloc->begin_capture(s1);
  void* small_in_graph = t.take(100, s1);
  t.alloc->end_capture(s1);
  t.alloc->free(small_in_graph);
  for (int i = 0; i < 4096; ++i) CHECK(t.alloc->allocate(100, s1) != small_in_graph);
  t.alloc->release_pool(third);
  t.alloc->release_pool(pool);
}

TEST_CASE("caching allocator: a block allocated before a capture and freed during it waits for release") {
  Setup t;
  void* p = t.take(5 * MiB, s1);
  void* small = t.take(100, s1);
  const auto pool = t.alloc->begin_capture(s1);
  t.alloc->free(p);  // the graph may read it at every replay
  t.alloc->free(small);
  t.alloc->end_capture(s1);
  CHECK(t.alloc->stats().cached_bytes == 2 * MiB - 512);  // the slab's other blocks only
  CHECK(t.take(5 * MiB, s1) != p);
  for (int i = 0; i < 4096; ++i) CHECK(t.alloc->allocate(100, s1) != small);
  t.alloc->empty_cache();
  CHECK(t.device->live.count(p) == 1);  // held back, not returned either
  const int64_t mallocs = t.alloc->stats().device_mallocs;

  t.alloc->release_pool(pool);
  CHECK(t.take(5 * MiB, s1) == p);
  CHECK(t.take(100, s1) == small);
  CHECK(t.alloc->stats().device_mallocs == mallocs);
}

TEST_CASE("caching allocator: release_pool gives the pool's blocks to ordinary requests on its stream") {
  Setup t;
  const auto pool = t.alloc->begin_capture(s1);
  void* freed_after = t.take(5 * MiB, s1);
  void* kept = t.take(6 * MiB, s1);  // a graph output, still in use at release
  void* small = t.take(100, s1);
  t.alloc->end_capture(s1);
  t.alloc->free(freed_after);
  t.alloc->free(small);
  const int64_t mallocs = t.alloc->stats().device_mallocs;

  t.alloc->release_pool(pool);
  CHECK(t.take(5 * MiB, s1) == freed_after);
  CHECK(t.take(100, s1) == small);
  t.alloc->free(kept);  // goes to the ordinary pool when freed
  CHECK(t.take(6 * MiB, s1) == kept);
  CHECK(t.alloc->stats().device_mallocs == mallocs);
  CHECK(t.take(5 * MiB, s2) != freed_after);  // still of its stream
  CHECK_THROWS_AS(t.alloc->release_pool(pool), chainer::InternalError);  // once
}

TEST_CASE("caching allocator: a block used on two streams freed during a capture is held, then waits for its event") {
  Setup t;
  void* p = t.take(5 * MiB, s1);
  t.alloc->record_stream(p, s2);
  const auto pool = t.alloc->begin_capture(s1);
  t.alloc->free(p);
  CHECK(t.device->events.empty());  // no event is recorded during a capture
  t.alloc->end_capture(s1);
  t.device->complete(s2);
  CHECK(t.take(5 * MiB, s1) != p);

  t.alloc->release_pool(pool);
  CHECK(t.device->events_recorded(s2) == 1);  // as if freed now
  void* q = t.take(5 * MiB, s1);
  CHECK(q != p);
  t.device->complete(s2);
  CHECK(t.take(5 * MiB, s1) == p);
}

TEST_CASE("caching allocator: a block of another stream also used on the captured one is held back too") {
  Setup t;
  void* p = t.take(5 * MiB, s2);
  t.alloc->record_stream(p, s1);  // the graph's work on s1 reads it
  const auto pool = t.alloc->begin_capture(s1);
  t.alloc->free(p);
  t.alloc->end_capture(s1);
  CHECK(t.device->events.empty());
  CHECK(t.take(5 * MiB, s2) != p);
  t.alloc->release_pool(pool);
  CHECK(t.device->events_recorded(s1) == 1);
  t.device->complete(s1);
  CHECK(t.take(5 * MiB, s2) == p);
}

TEST_CASE("caching allocator: capture calls out of order are internal errors") {
  Setup t;
  CHECK_THROWS_AS(t.alloc->end_capture(s1), chainer::InternalError);
  const auto pool = t.alloc->begin_capture(s1);
  CHECK_THROWS_AS(t.alloc->begin_capture(s1), chainer::InternalError);
  CHECK_THROWS_AS(t.alloc->release_pool(pool), chainer::InternalError);  // still capturing
  CHECK_THROWS_AS(t.alloc->release_pool(pool + 1), chainer::InternalError);
  t.alloc->end_capture(s1);
  t.alloc->release_pool(pool);
}

TEST_CASE("caching allocator: out of memory, the cache is returned and the allocation retried") {
  Setup t(20 * MiB);
  void* a = t.take(6 * MiB);
  void* b = t.take(100);  // its slab is in use, so it stays
  t.alloc->free(t.take(100, s2));  // an empty slab
  t.alloc->free(a);
  CHECK(t.device->used == 10 * MiB);
  const int64_t calls = t.device->allocate_calls;

  void* c = t.take(14 * MiB);  // fits only once the cache is returned
  CHECK(t.device->allocate_calls == calls + 2);  // failed, then retried
  CHECK(t.device->frees == 2);  // a and the empty slab
  CHECK(t.device->live.count(a) == 0);
  const auto s = t.alloc->stats();
  CHECK(s.reserved_bytes == 16 * MiB);
  CHECK(s.in_use_bytes == 14 * MiB + 512);
  CHECK(s.device_frees == 2);
  t.alloc->free(c);
  t.alloc->free(b);
}

TEST_CASE("caching allocator: out of memory after the retry is an error that says what was asked and held") {
  Setup t(16 * MiB);
  void* a = t.take(8 * MiB);
  void* small = t.take(1000);
  const auto before = t.alloc->stats();
  const int64_t calls = t.device->allocate_calls;
  try {
    t.alloc->allocate(12 * MiB, s1);
    FAIL("no error");
  } catch (const chainer::Error& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find("out of memory on cuda:0: tried to allocate 12.0 MiB") == 0);
    CHECK(what.find("8.0 MiB already in use") != std::string::npos);  // 8 MiB + 1 KiB
    CHECK(what.find("2.0 MiB cached") != std::string::npos);          // the slab's other blocks
    CHECK(what.find("10.0 MiB reserved") != std::string::npos);
    CHECK(what.find("smaller batch") != std::string::npos);
  }
  CHECK(t.device->allocate_calls == calls + 1);  // nothing cached to return: no retry
  const auto after = t.alloc->stats();
  CHECK(after.allocations == before.allocations);
  CHECK(after.in_use_bytes == before.in_use_bytes);
  CHECK_THROWS_WITH(t.alloc->allocate(std::numeric_limits<size_t>::max(), s1),
                    Catch::StartsWith("out of memory on cuda:0: tried to allocate"));
  // Still usable.
  t.alloc->free(a);
  void* b = t.take(12 * MiB);  // returns a's 8 MiB, then fits
  t.alloc->free(b);
  t.alloc->free(small);
}

TEST_CASE("caching allocator: out of memory does not return private pools' blocks") {
  Setup t(12 * MiB);
  const auto pool = t.alloc->begin_capture(s1);
  void* in_graph = t.take(8 * MiB, s1);
  t.alloc->end_capture(s1);
  t.alloc->free(in_graph);
  CHECK_THROWS_AS(t.alloc->allocate(8 * MiB, s1), chainer::Error);
  CHECK(t.device->live.count(in_graph) == 1);
  t.alloc->release_pool(pool);
  CHECK(t.take(8 * MiB, s1) == in_graph);
}

TEST_CASE("caching allocator: out of memory during a capture returns nothing to the device and fails the capture") {
  Setup t(12 * MiB);
  t.alloc->free(t.take(6 * MiB));  // cached: returning it would make room
  t.alloc->free(t.take(100));      // an empty slab, cached
  const auto pool = t.alloc->begin_capture(s1);
  void* temp = t.take(1 * MiB, s1);
  const auto before = t.alloc->stats();
  CHECK_THROWS_AS(t.alloc->allocate(5 * MiB, s1), CaptureOutOfMemory);
  CHECK_THROWS_WITH(t.alloc->allocate(5 * MiB, s1),
                    Catch::StartsWith("out of memory on cuda:0: tried to allocate 5.0 MiB") &&
                        Catch::Contains("while a CUDA graph was being captured"));
  // A request on a stream not being captured is plain out of memory, not a capture failure.
  try {
    t.alloc->allocate(5 * MiB, s2);
    FAIL("no error");
  } catch (const chainer::cuda::CaptureError&) {
    FAIL("a capture failure for a stream not being captured");
  } catch (const chainer::Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("captured on another stream"));
  }
  t.alloc->empty_cache();
  CHECK(t.device->frees == 0);  // cudaFree would invalidate the capture
  const auto after = t.alloc->stats();
  CHECK(after.cached_bytes == before.cached_bytes);
  CHECK(after.reserved_bytes == before.reserved_bytes);
  CHECK(after.in_use_bytes == before.in_use_bytes);
  // The caller abandons the capture; eagerly, the cache is returned and the step fits.
  t.alloc->free(temp);
  t.alloc->end_capture(s1);
  t.alloc->release_pool(pool);
  void* eager = t.take(5 * MiB, s1);
  CHECK(t.device->frees >= 1);
  t.alloc->free(eager);
}

TEST_CASE("caching allocator: a free that fails while the cache is returned loses no block") {
  Setup t;
  void* a = t.take(3 * MiB);
  void* b = t.take(4 * MiB);
  void* small = t.take(100, s2);
  t.alloc->free(a);
  t.alloc->free(b);
  t.alloc->free(small);
  const auto full = t.alloc->stats();
  t.device->failing_frees = 1;
  CHECK_THROWS_WITH(t.alloc->empty_cache(), "fake device: the free failed");
  const auto partly = t.alloc->stats();
  // What the device did not take back is still cached, counted, and returned next time.
  CHECK(partly.reserved_bytes == t.device->used);
  CHECK(partly.cached_bytes == full.cached_bytes - (full.reserved_bytes - partly.reserved_bytes));
  t.alloc->empty_cache();
  CHECK(t.device->live.empty());
  const auto emptied = t.alloc->stats();
  CHECK(emptied.reserved_bytes == 0);
  CHECK(emptied.cached_bytes == 0);
  CHECK(emptied.device_frees == 3);
  // A device that fails at exit: the destructor does not throw.
  t.alloc->free(t.take(3 * MiB));
  t.device->failing_frees = 1;
  void* leaked = t.device->live.begin()->first;
  CHECK_NOTHROW(t.alloc.reset());
  std::free(leaked);
  t.device->live.clear();
}

TEST_CASE("caching allocator: empty_cache returns free blocks and empty slabs, and keeps private pools'") {
  Setup t;
  void* large = t.take(3 * MiB);
  void* in_slab = t.take(100);
  void* alone = t.take(2000);  // a slab of class 2048 with nothing else in use
  const auto pool = t.alloc->begin_capture(s2);
  void* in_graph = t.take(3 * MiB, s2);
  void* small_in_graph = t.take(100, s2);
  t.alloc->end_capture(s2);
  t.alloc->free(in_graph);
  t.alloc->free(small_in_graph);
  t.alloc->free(large);
  t.alloc->free(alone);
  t.take(200);  // another block of in_slab's slab, in use
  CHECK(t.alloc->stats().device_mallocs == 5);

  t.alloc->empty_cache();
  auto s = t.alloc->stats();
  CHECK(s.device_frees == 2);  // large and alone's slab
  CHECK(t.device->frees == 2);
  CHECK(t.device->live.count(large) == 0);
  CHECK(t.device->live.count(alone) == 0);
  CHECK(t.device->live.count(in_graph) == 1);
  CHECK(s.reserved_bytes == 2 * MiB + 3 * MiB + 2 * MiB);
  CHECK(s.in_use_bytes == 1024);
  CHECK(s.cached_bytes == (2 * MiB - 1024) + 3 * MiB + 2 * MiB);
  t.alloc->free(in_slab);

  t.alloc->release_pool(pool);
  t.alloc->empty_cache();  // now ordinary blocks
  CHECK(t.device->live.size() == 1);  // in_slab's slab: one block still in use
  CHECK(t.alloc->stats().reserved_bytes == 2 * MiB);
}

TEST_CASE("caching allocator: statistics in a simple sequence") {
  Setup t;
  auto s = t.alloc->stats();
  CHECK(s.in_use_bytes == 0);
  CHECK(s.reserved_bytes == 0);
  CHECK(s.device_mallocs == 0);

  void* a = t.take(1000);  // class 1024 from a new slab
  s = t.alloc->stats();
  CHECK(s.in_use_bytes == 1024);
  CHECK(s.peak_in_use_bytes == 1024);
  CHECK(s.reserved_bytes == 2 * MiB);
  CHECK(s.cached_bytes == 2 * MiB - 1024);
  CHECK(s.device_mallocs == 1);
  CHECK(s.allocations == 1);
  CHECK(s.cache_hits == 0);

  void* b = t.take(3 * MiB - 1000);  // class 3 MiB
  t.alloc->free(b);
  s = t.alloc->stats();
  CHECK(s.in_use_bytes == 1024);
  CHECK(s.peak_in_use_bytes == 3 * MiB + 1024);
  CHECK(s.reserved_bytes == 5 * MiB);
  CHECK(s.cached_bytes == 5 * MiB - 1024);
  CHECK(s.device_mallocs == 2);
  CHECK(s.allocations == 2);

  t.alloc->reset_peak();
  CHECK(t.alloc->stats().peak_in_use_bytes == 1024);
  void* c = t.take(3 * MiB);
  void* d = t.take(1024);
  s = t.alloc->stats();
  CHECK(c == b);
  CHECK(s.allocations == 4);
  CHECK(s.cache_hits == 2);
  CHECK(s.device_mallocs == 2);
  CHECK(s.in_use_bytes == 3 * MiB + 2048);
  CHECK(s.peak_in_use_bytes == 3 * MiB + 2048);
  CHECK(s.cached_bytes == 2 * MiB - 2048);
  t.alloc->free(a);
  t.alloc->free(c);
  t.alloc->free(d);
  t.alloc->empty_cache();
  s = t.alloc->stats();
  CHECK(s.reserved_bytes == 0);
  CHECK(s.cached_bytes == 0);
  CHECK(s.device_frees == 2);
  CHECK(s.peak_in_use_bytes == 3 * MiB + 2048);
}

TEST_CASE("caching allocator: freeing a pointer it did not hand out is an internal error") {
  Setup t;
  int on_stack = 0;
  CHECK_THROWS_AS(t.alloc->free(&on_stack), chainer::InternalError);
  void* p = t.take(4000);
  CHECK_THROWS_AS(t.alloc->free(static_cast<char*>(p) + 8), chainer::InternalError);
  CHECK_THROWS_AS(t.alloc->record_stream(&on_stack, s2), chainer::InternalError);
  t.alloc->free(p);
  CHECK_THROWS_WITH(t.alloc->free(p), Catch::Contains("freed already"));
  CHECK(t.alloc->stats().in_use_bytes == 0);
}

TEST_CASE("caching allocator: the destructor returns everything to the device") {
  auto device = std::make_shared<FakeDevice>();
  {
    CachingAllocator alloc("cuda:0", std::make_unique<FakeNative>(device));
    void* large = alloc.allocate(3 * MiB, s1);
    alloc.free(alloc.allocate(100, s1));
    void* pending = alloc.allocate(4 * MiB, s1);
    alloc.record_stream(pending, s2);
    alloc.free(pending);
    const auto pool = alloc.begin_capture(s1);
    alloc.free(alloc.allocate(5 * MiB, s1));
    alloc.free(large);  // held back
    alloc.end_capture(s1);
    (void)pool;
    CHECK(device->live.size() == 4);
  }
  CHECK(device->live.empty());
  CHECK(device->frees == device->allocations);
  CHECK(device->events_alive() == 0);
}

TEST_CASE("caching allocator: threads on their own streams share one allocator") {
  Setup t;
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&t, i] {
      const Stream s = stream(10 + i);
      for (int step = 0; step < 200; ++step) {
        const Stream next = stream(10 + (i + 1) % kThreads);
        void* blocks[4] = {t.alloc->allocate(100, s), t.alloc->allocate(4000, s), t.alloc->allocate(3 * MiB, s),
                           t.alloc->allocate(100, next)};
        std::memset(blocks[1], i, 4000);
        t.alloc->record_stream(blocks[0], next);
        for (void* p : blocks) t.alloc->free(p);
        if (step % 50 == 0) t.alloc->empty_cache();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  const auto s = t.alloc->stats();
  CHECK(s.in_use_bytes == 0);
  CHECK(s.allocations == kThreads * 200 * 4);
  CHECK(s.reserved_bytes == t.device->used);
}

// ---- Pinned staging buffers (core/memory/pinned_staging.h), on the host against a fake device ----

namespace {

using chainer::PinnedStaging;

// A fake of pinned memory and events: malloc'd buffers; an event is done when never recorded,
// or once its stream completed; wait_event completes the work on its stream up to that event.
struct FakePinned {
  struct FakeEvent {
    Stream stream = nullptr;
    int64_t order = 0;  // when it was last recorded
    bool recorded = false, done = true, destroyed = false;
  };
  int64_t recorded = 0;
  std::map<void*, size_t> live;
  std::vector<std::unique_ptr<FakeEvent>> events;
  int64_t waits = 0, queries = 0;
  bool failing = false;  // every call fails (the CUDA runtime is gone)
  void complete(Stream s) {
    for (auto& e : events)
      if (e->recorded && e->stream == s) e->done = true;
  }
};

class FakePinnedNative : public PinnedStaging::Native {
 public:
  explicit FakePinnedNative(std::shared_ptr<FakePinned> d) : d_(std::move(d)) {}
  void* allocate(size_t bytes) override {
    fail_if_gone();
    void* p = std::malloc(bytes);
    d_->live[p] = bytes;
    return p;
  }
  void free(void* ptr) override {
    fail_if_gone();
    if (!d_->live.erase(ptr)) throw std::logic_error("fake pinned: free of a pointer it did not allocate");
    std::free(ptr);
  }
  Event create_event() override {
    fail_if_gone();
    d_->events.push_back(std::make_unique<FakePinned::FakeEvent>());
    return d_->events.back().get();
  }
  void record_event(Event e, Stream s) override {
    auto* event = live_event(e);
    event->stream = s;
    event->order = ++d_->recorded;
    event->recorded = true;
    event->done = false;
  }
  bool event_done(Event e) override {
    ++d_->queries;
    return live_event(e)->done;
  }
  void wait_event(Event e) override {
    ++d_->waits;
    const FakePinned::FakeEvent& until = *live_event(e);
    for (auto& other : d_->events)
      if (other->recorded && other->stream == until.stream && other->order <= until.order) other->done = true;
  }
  void destroy_event(Event e) override {
    fail_if_gone();
    live_event(e)->destroyed = true;
  }

 private:
  void fail_if_gone() {
    if (d_->failing) throw std::runtime_error("fake pinned: the runtime is gone");
  }
  FakePinned::FakeEvent* live_event(Event e) {
    auto* event = static_cast<FakePinned::FakeEvent*>(e);
    if (event->destroyed) throw std::logic_error("fake pinned: use of a destroyed event");
    return event;
  }
  std::shared_ptr<FakePinned> d_;
};

}  // namespace

TEST_CASE("pinned staging: a buffer is reused once the copy that read it completed, the smallest that fits first") {
  auto d = std::make_shared<FakePinned>();
  PinnedStaging staging(std::make_unique<FakePinnedNative>(d));
  CHECK(PinnedStaging::buffer_size(1) == 4096);
  CHECK(PinnedStaging::buffer_size(5000) == 8192);
  PinnedStaging::Buffer big = staging.acquire(100'000), small = staging.acquire(100);
  CHECK(big.bytes == 128 * KiB);
  CHECK(small.bytes == 4 * KiB);
  std::memset(big.ptr, 1, big.bytes);
  staging.release(big, s1);
  staging.release(small, s1);
  // In flight: a new buffer.
  PinnedStaging::Buffer third = staging.acquire(100);
  CHECK(third.ptr != small.ptr);
  d->complete(s1);
  // Done: the smallest that fits, not the first given back.
  PinnedStaging::Buffer again = staging.acquire(100);
  CHECK(again.ptr == small.ptr);
  CHECK(staging.stats().host_allocs == 3);
  CHECK(staging.stats().waits == 0);
  staging.release(again, s1);
  staging.release(third, s1);
}

TEST_CASE("pinned staging: a host running ahead of the device waits for its oldest copy instead of pinning more") {
  auto d = std::make_shared<FakePinned>();
  PinnedStaging staging(std::make_unique<FakePinnedNative>(d), 64 * KiB);
  // Sixteen 8 KiB copies queued and none completed: 64 KiB pinned at most.
  std::vector<void*> seen;
  for (int i = 0; i < 16; ++i) {
    PinnedStaging::Buffer b = staging.acquire(8 * KiB);
    seen.push_back(b.ptr);
    staging.release(b, s1);
    CHECK(staging.stats().held_bytes <= 64 * KiB);
  }
  CHECK(staging.stats().host_allocs == 8);
  CHECK(staging.stats().waits == 8);
  CHECK(d->waits == 8);
  CHECK(seen[8] == seen[0]);  // the oldest copy's buffer, once it completed
  // Larger requests later: the small buffers go back to the host to make room.
  d->complete(s1);
  PinnedStaging::Buffer large = staging.acquire(40 * KiB);
  CHECK(large.bytes == 64 * KiB);
  const auto stats = staging.stats();
  CHECK(stats.held_bytes == 64 * KiB);
  CHECK(stats.host_frees == 8);
  CHECK(d->live.size() == 1);
  staging.release(large, s1);
}

TEST_CASE("pinned staging: buffers handed out (to a graph) may pass the limit; the destructor never throws") {
  auto d = std::make_shared<FakePinned>();
  {
    PinnedStaging staging(std::make_unique<FakePinnedNative>(d), 16 * KiB);
    PinnedStaging::Buffer a = staging.acquire(16 * KiB), b = staging.acquire(16 * KiB);  // a graph keeps both
    CHECK(staging.stats().held_bytes == 32 * KiB);
    CHECK(staging.stats().waits == 0);
    staging.release(a, s1);
    staging.release(b, s1);
    d->failing = true;  // destroyed at exit, after the runtime
  }
  CHECK(d->live.size() == 2);  // left to the process's end
  d->failing = false;
  {
    PinnedStaging staging(std::make_unique<FakePinnedNative>(d));
    staging.release(staging.acquire(10), s2);
  }
  CHECK(d->live.size() == 2);  // the second pool returned its own
  for (auto& [ptr, bytes] : d->live) std::free(ptr);
}

TEST_CASE("pinned staging: a captured copy's buffer is pinned anew past the limit, with no wait, free or query; trim brings the pool back") {
  auto d = std::make_shared<FakePinned>();
  PinnedStaging staging(std::make_unique<FakePinnedNative>(d), 16 * KiB);
  PinnedStaging::Buffer a = staging.acquire(8 * KiB), b = staging.acquire(8 * KiB);
  staging.release(a, s1);
  staging.release(b, s1);  // at the limit, both copies in flight
  const int64_t queries = d->queries;
  // CUDA forbids freeing pinned memory and waiting for (or asking about) a copy while capturing.
  PinnedStaging::Buffer captured = staging.acquire_while_capturing(8 * KiB);
  CHECK(captured.bytes == 8 * KiB);
  CHECK(captured.ptr != a.ptr);
  CHECK(captured.ptr != b.ptr);
  CHECK(d->queries == queries);
  CHECK(d->waits == 0);
  CHECK(staging.stats().host_frees == 0);
  CHECK(staging.stats().held_bytes == 24 * KiB);
  // After the capture (the graph keeps CAPTURED): the oldest free buffer goes, once its copy is done.
  staging.trim();
  CHECK(staging.stats().held_bytes == 16 * KiB);
  CHECK(staging.stats().host_frees == 1);
  CHECK(d->waits == 1);
  CHECK(d->live.count(a.ptr) == 0);
  staging.trim();  // under the limit: nothing more
  CHECK(staging.stats().host_frees == 1);
  // The graph is destroyed: under the limit still, its buffer is kept for reuse.
  staging.release(captured, s1);
  staging.trim();
  CHECK(staging.stats().held_bytes == 16 * KiB);
  CHECK(staging.stats().free_bytes == 16 * KiB);
}
