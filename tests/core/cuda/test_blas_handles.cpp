// The cuBLAS handle policy (core/cuda/blas_handles.h), on the host: a fake library whose handles
// behave as cuBLAS's do where the policy depends on it (setting the stream drops the workspace
// back to the library's default pool; creation fails while this thread's capture mode is global
// and a capture is in progress), a per-thread capture mode, and a fake allocator that counts its
// blocks.
#include <catch2/catch.hpp>

#include <atomic>
#include <condition_variable>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/cuda/blas_handles.h"

using chainer::cuda::BlasHandlePool;
using CaptureMode = BlasHandlePool::CaptureMode;
using Handle = BlasHandlePool::Handle;
using Stream = BlasHandlePool::Stream;

namespace {

Stream stream(int i) { return reinterpret_cast<Stream>(static_cast<uintptr_t>(i)); }
const Stream s1 = stream(1), s2 = stream(2);
constexpr size_t kBytes = 4096;

thread_local CaptureMode t_mode = CaptureMode::Global;  // as cudaThreadExchangeStreamCaptureMode's

// What the library and the allocator saw, shared between a test and the FakeBlas its pool owns.
struct FakeLibrary {
  struct FakeHandle {
    int device = 0;
    Stream stream = nullptr;
    const void* workspace = nullptr;  // nullptr: the library's default pool
    bool tf32 = false;
    CaptureMode created_in = CaptureMode::Global;
  };
  struct Block {
    int device;
    Stream stream;
    size_t bytes;
  };
  std::mutex mutex;
  bool capturing = false;  // a capture is in progress on some stream of the process
  int fail_creates = 0;    // the next N creates fail
  int current_device = 0;  // the device creates bind to (the caller's current device)
  std::vector<std::unique_ptr<FakeHandle>> handles;
  std::map<const void*, Block> blocks;  // live workspaces
  int64_t allocations = 0, frees = 0, set_stream_calls = 0, set_tf32_calls = 0;
  // set_stream and set_workspace calls in order, one character each: 's' and 'w'.
  std::map<Handle, std::string> calls;

  FakeHandle& handle(Handle h) { return *static_cast<FakeHandle*>(h); }
};

class FakeBlas : public BlasHandlePool::Native {
 public:
  explicit FakeBlas(std::shared_ptr<FakeLibrary> lib) : lib_(std::move(lib)) {}

  Handle create() override {
    std::lock_guard<std::mutex> lock(lib_->mutex);
    if (lib_->fail_creates > 0) {
      --lib_->fail_creates;
      throw std::runtime_error("cublasCreate failed");
    }
    // cuBLAS allocates and queries the device: forbidden under global capture mode.
    if (lib_->capturing && t_mode == CaptureMode::Global)
      throw std::runtime_error("cublasCreate: operation not permitted when stream is capturing");
    auto h = std::make_unique<FakeLibrary::FakeHandle>();
    h->device = lib_->current_device;
    h->created_in = t_mode;
    lib_->handles.push_back(std::move(h));
    return lib_->handles.back().get();
  }
  void set_stream(Handle h, Stream s) override {
    std::lock_guard<std::mutex> lock(lib_->mutex);
    lib_->handle(h).stream = s;
    lib_->handle(h).workspace = nullptr;  // cublasSetStream resets the workspace
    lib_->calls[h] += 's';
    ++lib_->set_stream_calls;
  }
  void set_workspace(Handle h, void* workspace, size_t bytes) override {
    std::lock_guard<std::mutex> lock(lib_->mutex);
    lib_->handle(h).workspace = bytes == kBytes ? workspace : nullptr;  // a wrong size fails the checks
    lib_->calls[h] += 'w';
  }
  void set_tf32(Handle h, bool tf32) override {
    std::lock_guard<std::mutex> lock(lib_->mutex);
    lib_->handle(h).tf32 = tf32;
    ++lib_->set_tf32_calls;
  }
  CaptureMode exchange_capture_mode(CaptureMode mode) override {
    const CaptureMode previous = t_mode;
    t_mode = mode;
    return previous;
  }
  std::shared_ptr<void> allocate_workspace(int device, Stream s, size_t bytes) override {
    void* p = ::operator new(bytes);
    {
      std::lock_guard<std::mutex> lock(lib_->mutex);
      lib_->blocks[p] = {device, s, bytes};
      ++lib_->allocations;
    }
    std::shared_ptr<FakeLibrary> lib = lib_;
    return std::shared_ptr<void>(p, [lib](void* q) {
      {
        std::lock_guard<std::mutex> lock(lib->mutex);
        lib->blocks.erase(q);
        ++lib->frees;
      }
      ::operator delete(q);
    });
  }

 private:
  std::shared_ptr<FakeLibrary> lib_;
};

struct Fixture {
  std::shared_ptr<FakeLibrary> lib = std::make_shared<FakeLibrary>();
  BlasHandlePool pool{std::make_unique<FakeBlas>(lib), kBytes};

  // The handle's state as a product launched now would find it.
  FakeLibrary::FakeHandle& state(Handle h) { return lib->handle(h); }
  // Whether W is a live workspace block of DEVICE for stream S.
  bool is_workspace(const void* w, int device, Stream s) {
    auto it = lib->blocks.find(w);
    return it != lib->blocks.end() && it->second.device == device && it->second.stream == s &&
           it->second.bytes == kBytes;
  }
};

// Runs F on a new thread and waits for it to end (its handles then go back to the pool); what F
// throws is thrown here.
template <class F>
void on_a_thread(F f) {
  std::exception_ptr error;
  std::thread t([&] {
    try {
      f();
    } catch (...) {
      error = std::current_exception();
    }
  });
  t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace

TEST_CASE("blas handles: every handle is returned on its stream with the pool's workspace, set after the stream",
          "[blas_handles]") {
  Fixture fx;
  for (Stream s : {s1, s1, s2, s1, s2, s2}) {
    const Handle h = fx.pool.get(0, s, false);
    INFO("stream " << s);
    CHECK(fx.state(h).stream == s);
    // cublasSetStream dropped the workspace to cuBLAS's default pool: it must be set again.
    CHECK(fx.state(h).workspace != nullptr);
    CHECK(fx.is_workspace(fx.state(h).workspace, 0, s));
  }
  const Handle h = fx.pool.get(0, s1, false);
  // Every set_stream is followed by a set_workspace before the handle is handed out.
  CHECK(fx.lib->calls[h] == "swswswswswswsw");
}

TEST_CASE("blas handles: one workspace per handle and stream, from the allocator, allocated once",
          "[blas_handles]") {
  Fixture fx;
  const void* first = nullptr;
  for (int i = 0; i < 50; ++i) {
    const Handle h = fx.pool.get(0, s1, false);
    if (i == 0) first = fx.state(h).workspace;
    CHECK(fx.state(h).workspace == first);
  }
  CHECK(fx.lib->allocations == 1);
  fx.pool.get(0, s2, false);
  CHECK(fx.lib->allocations == 2);  // another stream, another block
  fx.lib->current_device = 1;
  const Handle other = fx.pool.get(1, s1, false);
  CHECK(fx.lib->allocations == 3);  // another device, another handle and block
  CHECK(fx.state(other).device == 1);
  CHECK(fx.is_workspace(fx.state(other).workspace, 1, s1));
  CHECK(fx.lib->frees == 0);  // kept for the handle's life
}

TEST_CASE("blas handles: each thread and device has its own handle", "[blas_handles]") {
  Fixture fx;
  const Handle mine = fx.pool.get(0, s1, false);
  CHECK(fx.pool.get(0, s1, false) == mine);
  fx.lib->current_device = 1;
  const Handle mine_on_1 = fx.pool.get(1, s1, false);
  CHECK(mine_on_1 != mine);
  fx.lib->current_device = 0;

  // Four threads alive at once, each asking many times: four handles, each always its thread's.
  constexpr int kThreads = 4;
  std::mutex m;
  std::condition_variable cv;
  int started = 0, done = 0;
  // Every thread waits at both ends for all the others, so none ends (giving its handle back)
  // while another is still to ask.
  auto meet = [&](int& count) {
    std::unique_lock<std::mutex> lock(m);
    ++count;
    cv.notify_all();
    cv.wait(lock, [&] { return count == kThreads; });
  };
  std::vector<std::set<Handle>> seen(kThreads);
  std::vector<int> wrong_state(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      meet(started);
      const Stream s = t % 2 ? s1 : s2;
      for (int i = 0; i < 2000; ++i) {
        const Handle h = fx.pool.get(0, s, false);
        seen[size_t(t)].insert(h);
        std::lock_guard<std::mutex> lock(fx.lib->mutex);
        // No other thread moved this handle between get() and now.
        if (fx.state(h).stream != s || fx.state(h).workspace == nullptr) ++wrong_state[size_t(t)];
      }
      meet(done);
    });
  for (std::thread& t : threads) t.join();
  std::set<Handle> all = {mine, mine_on_1};
  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t);
    CHECK(seen[size_t(t)].size() == 1);
    CHECK(wrong_state[size_t(t)] == 0);
    all.insert(seen[size_t(t)].begin(), seen[size_t(t)].end());
  }
  CHECK(all.size() == size_t(kThreads + 2));
  CHECK(fx.pool.handles_created() == kThreads + 2);
}

TEST_CASE("blas handles: a thread's handles go back when it ends and serve the next thread", "[blas_handles]") {
  Fixture fx;
  Handle first = nullptr, second = nullptr;
  on_a_thread([&] { first = fx.pool.get(0, s1, true); });
  CHECK(fx.pool.handles_idle() == 1);
  on_a_thread([&] { second = fx.pool.get(0, s1, true); });
  CHECK(second == first);
  CHECK(fx.pool.handles_created() == 1);
  CHECK(fx.lib->allocations == 1);  // its workspace came with it
  CHECK(fx.lib->set_tf32_calls == 1);  // and its math mode

  // An idle handle of another device is not handed out.
  Handle on_1 = nullptr;
  fx.lib->current_device = 1;
  on_a_thread([&] { on_1 = fx.pool.get(1, s1, false); });
  CHECK(on_1 != first);
  CHECK(fx.state(on_1).device == 1);
  CHECK(fx.pool.handles_idle() == 2);
  CHECK(fx.pool.handles_created() == 2);

  // A thread that outlives its pool leaves nothing dangling: the handle is forgotten.
  auto lib = std::make_shared<FakeLibrary>();
  std::mutex m;
  std::condition_variable cv;
  bool pool_gone = false;
  std::thread late;
  {
    BlasHandlePool short_lived(std::make_unique<FakeBlas>(lib), kBytes);
    bool got = false;
    late = std::thread([&] {
      short_lived.get(0, s1, false);
      std::unique_lock<std::mutex> lock(m);
      got = true;
      cv.notify_all();
      cv.wait(lock, [&] { return pool_gone; });
    });
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return got; });
  }
  {
    std::lock_guard<std::mutex> lock(m);
    pool_gone = true;
    cv.notify_all();
  }
  late.join();
  CHECK(lib->frees == 1);  // the pool gave its workspace back when it went
}

TEST_CASE("blas handles: created in relaxed capture mode, the thread's mode restored after", "[blas_handles]") {
  Fixture fx;
  fx.lib->capturing = true;  // a thread's first product comes inside a capture
  for (CaptureMode mode : {CaptureMode::Global, CaptureMode::ThreadLocal}) {
    INFO("the thread's mode: " << int(mode));
    Handle h = nullptr;
    CaptureMode after = CaptureMode::Relaxed;
    REQUIRE_NOTHROW(on_a_thread([&] {
      t_mode = mode;
      h = fx.pool.get(0, s1, false);
      after = t_mode;
    }));
    CHECK(fx.state(h).created_in == CaptureMode::Relaxed);
    CHECK(after == mode);
  }

  // A failed creation restores the mode too, reaches the caller, and the next call tries again.
  fx.lib->current_device = 1;
  fx.lib->fail_creates = 1;
  t_mode = CaptureMode::Global;
  CHECK_THROWS_WITH(fx.pool.get(1, s1, false), "cublasCreate failed");
  CHECK(t_mode == CaptureMode::Global);
  const Handle h = fx.pool.get(1, s1, false);
  CHECK(fx.state(h).device == 1);
  CHECK(t_mode == CaptureMode::Global);
}

TEST_CASE("blas handles: the math mode is set when TF32 is switched, and only then", "[blas_handles]") {
  Fixture fx;
  Handle h = fx.pool.get(0, s1, false);
  CHECK(fx.lib->set_tf32_calls == 0);  // a new handle already computes in FP32
  CHECK_FALSE(fx.state(h).tf32);
  h = fx.pool.get(0, s1, true);
  CHECK(fx.state(h).tf32);
  fx.pool.get(0, s1, true);
  CHECK(fx.lib->set_tf32_calls == 1);
  h = fx.pool.get(0, s2, false);
  CHECK_FALSE(fx.state(h).tf32);
  CHECK(fx.lib->set_tf32_calls == 2);
}
