// How the cuDNN convolutions choose their algorithms (core/cuda/cudnn_algorithms.h) and hold
// their handles (core/cuda/blas_handles.h, made with no workspace), on the host: cuDNN's two
// ways of proposing algorithms are scripted lists, each call counted, so the cache, the
// deterministic filter, benchmark mode, the capture rule and the workspace limit are checked
// without a GPU, as are the descriptors' types for each dtype. The switches behind the mode
// (config::autotune, config::cudnn_deterministic) are checked at the end.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/util/config.h"
#include "core/cuda/blas_handles.h"
#include "core/cuda/cudnn_algorithms.h"
#include "core/util/error.h"

using chainer::cuda::BlasHandlePool;
using chainer::cuda::ConvAlgorithm;
using chainer::cuda::ConvAlgorithmCache;
using chainer::cuda::ConvDirection;
using chainer::cuda::ConvKey;
using chainer::cuda::ConvMath;

namespace {

constexpr size_t kLimit = 1000;  // the workspace limit of the caches below

// The key of the fashion-2 layer's forward (100, 32, 28, 28) * (32, 32, 3, 3), pad 1.
ConvKey fashion2() {
  ConvKey k;
  k.x = {100, 32, 28, 28};
  k.w = {32, 32, 3, 3};
  k.y = {100, 32, 28, 28};
  k.geometry = {3, 3, 1, 1, 1, 1, 1, 1, 1};
  return k;
}

ConvAlgorithm algo(int id, size_t bytes = 0, bool deterministic = true, bool supported = true,
                   ConvMath math = ConvMath::Default) {
  return {.algo = id, .supported = supported, .workspace_bytes = bytes, .deterministic = deterministic, .math = math};
}

// cuDNN's proposals, scripted: what each way returns, and how often each was asked.
struct Script {
  std::vector<ConvAlgorithm> heuristic{algo(1)};
  std::vector<ConvAlgorithm> benchmark{algo(2)};
  int heuristic_calls = 0, benchmark_calls = 0;
  size_t benchmark_limit = 0;

  ConvAlgorithmCache::Proposals proposals() {
    return {.heuristic =
                [this] {
                  ++heuristic_calls;
                  return heuristic;
                },
            .benchmark =
                [this](size_t limit) {
                  ++benchmark_calls;
                  benchmark_limit = limit;
                  return benchmark;
                }};
  }
};

const ConvAlgorithmCache::Mode kHeuristic{.benchmark = false, .capturing = false};
const ConvAlgorithmCache::Mode kBenchmark{.benchmark = true, .capturing = false};
const ConvAlgorithmCache::Mode kBenchmarkCapturing{.benchmark = true, .capturing = true};

}  // namespace

TEST_CASE("cudnn algorithms: the heuristic chooses by default, once per key", "[cudnn]") {
  ConvAlgorithmCache cache(kLimit);
  Script s;
  s.heuristic = {algo(6), algo(1)};
  CHECK(cache.choose(fashion2(), kHeuristic, s.proposals(), "conv").algo == 6);  // cuDNN's first preference
  CHECK(cache.choose(fashion2(), kHeuristic, s.proposals(), "conv").algo == 6);
  CHECK(s.heuristic_calls == 1);
  CHECK(s.benchmark_calls == 0);
  CHECK(cache.heuristic_queries() == 1);
  CHECK(cache.cache_hits() == 1);
  CHECK(cache.cached() == 1);
}

TEST_CASE("cudnn algorithms: every part of the key makes its own entry", "[cudnn]") {
  ConvAlgorithmCache cache(kLimit);
  Script s;
  std::vector<ConvKey> keys(10, fashion2());
  keys[1].device = 1;
  keys[2].direction = ConvDirection::BackwardData;
  keys[3].dtype = 1;
  keys[4].x[0] = 99;  // another batch size
  keys[5].w = {64, 32, 3, 3};
  keys[6].y[2] = 27;
  keys[7].geometry[8] = 2;  // groups
  keys[8].math = ConvMath::Default;
  keys[9].deterministic = false;
  for (const ConvKey& k : keys) cache.choose(k, kHeuristic, s.proposals(), "conv");
  CHECK(s.heuristic_calls == 10);
  CHECK(cache.cached() == 10);
  for (const ConvKey& k : keys) cache.choose(k, kHeuristic, s.proposals(), "conv");
  CHECK(s.heuristic_calls == 10);
  CHECK(cache.cache_hits() == 10);
}

TEST_CASE("cudnn algorithms: only deterministic ones while cudnn_deterministic is on", "[cudnn]") {
  ConvAlgorithmCache cache(kLimit);
  Script s;
  s.heuristic = {algo(0, 0, false), algo(1, 0, true)};  // the preferred one is not deterministic
  ConvKey k = fashion2();
  CHECK(cache.choose(k, kHeuristic, s.proposals(), "conv").algo == 1);
  k.deterministic = false;
  CHECK(cache.choose(k, kHeuristic, s.proposals(), "conv").algo == 0);
}

TEST_CASE("cudnn algorithms: unsupported ones and ones needing more than the workspace limit are skipped",
          "[cudnn]") {
  ConvAlgorithmCache cache(kLimit);
  Script s;
  s.heuristic = {algo(4, 0, true, false), algo(5, kLimit + 1), algo(7, kLimit)};
  const ConvAlgorithm a = cache.choose(fashion2(), kHeuristic, s.proposals(), "conv");
  CHECK(a.algo == 7);
  CHECK(a.workspace_bytes == kLimit);
  CHECK(ConvAlgorithmCache().workspace_limit() == ConvAlgorithmCache::kWorkspaceLimit);
}

TEST_CASE("cudnn algorithms: nothing usable is an error naming the convolution and why each was refused",
          "[cudnn]") {
  ConvAlgorithmCache cache(kLimit);
  Script s;
  s.heuristic = {algo(0, 0, true, false), algo(1, 2 << 20), algo(2, 0, false)};
  ConvAlgorithmCache big;  // the real limit, in MiB in the message
  REQUIRE_THROWS_AS(cache.choose(fashion2(), kHeuristic, s.proposals(), "conv"), chainer::Error);
  s.heuristic[1].workspace_bytes = ConvAlgorithmCache::kWorkspaceLimit + 1;
  REQUIRE_THROWS_WITH(big.choose(fashion2(), kHeuristic, s.proposals(), "convolution_2d on cuDNN (x (1, 2, 3, 4))"),
                      "convolution_2d on cuDNN (x (1, 2, 3, 4)): cuDNN has no usable algorithm (of 3 proposed: 1 "
                      "unsupported, 1 needing more than the 256 MiB workspace limit, 1 not deterministic while "
                      "config::cudnn_deterministic is on)");
  CHECK(big.cached() == 0);  // a failure is not cached: the next call asks again
}

TEST_CASE("cudnn algorithms: benchmark mode times once per key, within the workspace limit", "[cudnn]") {
  ConvAlgorithmCache cache(kLimit);
  Script s;
  s.benchmark = {algo(3, 0, false), algo(5, kLimit * 2), algo(2, 10)};  // fastest first
  const ConvAlgorithm a = cache.choose(fashion2(), kBenchmark, s.proposals(), "conv");
  CHECK(a.algo == 2);  // the fastest deterministic one within the limit
  CHECK(s.benchmark_limit == kLimit);
  CHECK(cache.choose(fashion2(), kBenchmark, s.proposals(), "conv").algo == 2);
  CHECK(s.benchmark_calls == 1);
  CHECK(s.heuristic_calls == 0);
  CHECK(cache.benchmarks() == 1);
  // Switched off, the timed choice stays (it is the better one).
  CHECK(cache.choose(fashion2(), kHeuristic, s.proposals(), "conv").algo == 2);
  CHECK(s.heuristic_calls == 0);
}

TEST_CASE("cudnn algorithms: a heuristic choice is timed once benchmark mode is switched on", "[cudnn]") {
  ConvAlgorithmCache cache(kLimit);
  Script s;
  CHECK(cache.choose(fashion2(), kHeuristic, s.proposals(), "conv").algo == 1);
  CHECK(cache.choose(fashion2(), kBenchmark, s.proposals(), "conv").algo == 2);
  CHECK(cache.choose(fashion2(), kBenchmark, s.proposals(), "conv").algo == 2);
  CHECK(s.heuristic_calls == 1);
  CHECK(s.benchmark_calls == 1);
}

TEST_CASE("cudnn algorithms: nothing is timed while capturing; the shape is timed at its next call outside",
          "[cudnn]") {
  ConvAlgorithmCache cache(kLimit);
  Script s;
  CHECK(cache.choose(fashion2(), kBenchmarkCapturing, s.proposals(), "conv").algo == 1);  // the heuristic's
  CHECK(cache.choose(fashion2(), kBenchmarkCapturing, s.proposals(), "conv").algo == 1);  // cached
  CHECK(s.benchmark_calls == 0);
  CHECK(s.heuristic_calls == 1);
  CHECK(cache.choose(fashion2(), kBenchmark, s.proposals(), "conv").algo == 2);
  CHECK(s.benchmark_calls == 1);
  // A timed choice serves later captures.
  CHECK(cache.choose(fashion2(), kBenchmarkCapturing, s.proposals(), "conv").algo == 2);
  CHECK(s.benchmark_calls == 1);
  CHECK(s.heuristic_calls == 1);
}

TEST_CASE("cudnn algorithms: float32 without TF32 keeps FMA math whatever cuDNN proposes", "[cudnn]") {
  ConvAlgorithmCache cache(kLimit);
  Script s;
  s.heuristic = {algo(1, 0, true, true, ConvMath::TensorOp)};
  ConvKey k = fashion2();
  k.math = ConvMath::Fma;
  CHECK(cache.choose(k, kHeuristic, s.proposals(), "conv").math == ConvMath::Fma);
  k.math = ConvMath::Default;  // TF32 allowed (or float64): cuDNN's math type stands
  CHECK(cache.choose(k, kHeuristic, s.proposals(), "conv").math == ConvMath::TensorOp);
}

TEST_CASE("cudnn types: half data computes in FP32 on the tensor cores; float32 in FMA unless TF32", "[cudnn]") {
  using chainer::cuda::conv_types;
  using chainer::cuda::ConvDataType;
  using chainer::cuda::ConvTypes;
  using chainer::DType;
  for (bool tf32 : {false, true}) {
    INFO("allow_tf32 " << tf32);
    // cuDNN's PSEUDO_HALF and PSEUDO_BFLOAT16 configurations: the CPU computes them in float32 too.
    CHECK(conv_types("conv", DType::Float16, tf32) ==
          ConvTypes{ConvDataType::Half, ConvDataType::Float, ConvMath::TensorOp});
    CHECK(conv_types("conv", DType::BFloat16, tf32) ==
          ConvTypes{ConvDataType::BFloat16, ConvDataType::Float, ConvMath::TensorOp});
    CHECK(conv_types("conv", DType::Float64, tf32) ==
          ConvTypes{ConvDataType::Double, ConvDataType::Double, ConvMath::Default});
  }
  CHECK(conv_types("conv", DType::Float32, false) ==
        ConvTypes{ConvDataType::Float, ConvDataType::Float, ConvMath::Fma});
  CHECK(conv_types("conv", DType::Float32, true) ==
        ConvTypes{ConvDataType::Float, ConvDataType::Float, ConvMath::Default});
  CHECK_THROWS_WITH(conv_types("convolution_2d", DType::Int32, false),
                    Catch::Contains("convolution_2d: cuDNN's convolutions take float32, float64, float16 or "
                                    "bfloat16, not int32"));
  // Half math is asked as TensorOp, and whatever cuDNN's chosen algorithm says stands (only FMA
  // is forced).
  ConvAlgorithmCache cache(kLimit);
  Script s;
  s.heuristic = {algo(1, 0, true, true, ConvMath::Default)};
  ConvKey k = fashion2();
  k.dtype = int(DType::Float16);
  k.math = conv_types("conv", DType::Float16, false).math;
  CHECK(cache.choose(k, kHeuristic, s.proposals(), "conv").math == ConvMath::Default);
}

TEST_CASE("cudnn algorithms: threads choosing at once agree and the cache stays whole", "[cudnn]") {
  ConvAlgorithmCache cache(kLimit);
  std::vector<std::thread> threads;
  std::vector<int> chosen(8, -1);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      Script s;
      s.heuristic = {algo(9)};
      for (int i = 0; i < 100; ++i) {
        ConvKey k = fashion2();
        k.x[0] = i % 5 + 1;
        chosen[size_t(t)] = cache.choose(k, kHeuristic, s.proposals(), "conv").algo;
      }
    });
  for (std::thread& t : threads) t.join();
  for (int c : chosen) CHECK(c == 9);
  CHECK(cache.cached() == 5);
  CHECK(cache.heuristic_queries() + cache.cache_hits() == 800);
}

namespace {
// cuDNN's handle calls as the pool makes them: cudnnCreate and cudnnSetStream, counted; the
// workspace and math-mode calls must never come.
class FakeCudnn : public BlasHandlePool::Native {
 public:
  int creates = 0, set_streams = 0, workspace_calls = 0;
  BlasHandlePool::Handle create() override { return reinterpret_cast<BlasHandlePool::Handle>(uintptr_t(++creates)); }
  void set_stream(BlasHandlePool::Handle, BlasHandlePool::Stream) override { ++set_streams; }
  void set_workspace(BlasHandlePool::Handle, void*, size_t) override { ++workspace_calls; }
  void set_tf32(BlasHandlePool::Handle, bool) override { ++workspace_calls; }
  BlasHandlePool::CaptureMode exchange_capture_mode(BlasHandlePool::CaptureMode mode) override { return mode; }
  std::shared_ptr<void> allocate_workspace(int, BlasHandlePool::Stream, size_t) override {
    ++workspace_calls;
    return std::make_shared<int>(0);
  }
};
}  // namespace

TEST_CASE("cudnn handles: a pool with no workspace binds the stream on every call and allocates nothing",
          "[cudnn]") {
  auto native = std::make_unique<FakeCudnn>();
  FakeCudnn& lib = *native;
  BlasHandlePool pool(std::move(native), 0);
  const auto stream = reinterpret_cast<BlasHandlePool::Stream>(uintptr_t(7));
  BlasHandlePool::Handle h = pool.get(0, stream, false);
  CHECK(pool.get(0, stream, false) == h);
  CHECK(pool.get(1, stream, false) != h);  // one per device
  CHECK(lib.creates == 2);
  CHECK(lib.set_streams == 3);
  CHECK(lib.workspace_calls == 0);
}

TEST_CASE("config: autotune is off and cudnn_deterministic on by default, each set per thread", "[cudnn]") {
  // The defaults come from CHAINER_AUTOTUNE and CHAINER_CUDNN_DETERMINISTIC when set: a thread
  // started after changing them reads the new values.
  ::unsetenv("CHAINER_AUTOTUNE");
  ::unsetenv("CHAINER_CUDNN_DETERMINISTIC");
  bool autotune = true, deterministic = false;
  std::thread([&] {
    autotune = chainer::config::autotune();
    deterministic = chainer::config::cudnn_deterministic();
  }).join();
  CHECK_FALSE(autotune);
  CHECK(deterministic);
  ::setenv("CHAINER_AUTOTUNE", "1", 1);
  ::setenv("CHAINER_CUDNN_DETERMINISTIC", "0", 1);
  std::thread([&] {
    autotune = chainer::config::autotune();
    deterministic = chainer::config::cudnn_deterministic();
    chainer::config::set_autotune(false);  // this thread's alone
  }).join();
  CHECK(autotune);
  CHECK_FALSE(deterministic);
  ::unsetenv("CHAINER_AUTOTUNE");
  ::unsetenv("CHAINER_CUDNN_DETERMINISTIC");
  std::thread([&] {
    chainer::config::set_autotune(true);
    chainer::config::set_cudnn_deterministic(false);
    autotune = chainer::config::autotune();
    deterministic = chainer::config::cudnn_deterministic();
  }).join();
  CHECK(autotune);
  CHECK_FALSE(deterministic);
  std::thread([&] { autotune = chainer::config::autotune(); }).join();
  CHECK_FALSE(autotune);
}
