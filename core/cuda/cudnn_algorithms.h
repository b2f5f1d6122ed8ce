// Which cuDNN algorithm a convolution runs (core/cuda/conv.cu), chosen once per shape and kept.
// Plain C++ with no CUDA type: conv.cu passes in the two ways cuDNN has of proposing algorithms,
// so the rules are tested on the host against scripted proposals (tests/core/cuda/test_cudnn_policy.cpp).
// The rules, as torch.backends.cudnn and Chainer's config.autotune:
//
// - The choice is cached per key: device, direction, dtype, the x/W/y shapes, the geometry with
//   its groups, the math type, and whether only deterministic algorithms may run.
// - By default cuDNN's heuristic chooses (cudnnGet*Algorithm_v7: a host query, no kernel runs);
//   its first proposal that is usable wins.
// - Benchmark mode (config::autotune, CHAINER_AUTOTUNE) times every algorithm on the call's own
//   arrays (cudnnFind*AlgorithmEx) and keeps the fastest usable one. Off by default: the timing
//   runs kernels and waits for them.
// - Usable: cuDNN supports it for the shape, it needs at most the workspace limit, and, where
//   config::cudnn_deterministic (on by default) asks for it, it is deterministic. Nothing usable
//   is an error naming the convolution.
// - While the stream is captured into a CUDA graph nothing is timed (the timing runs kernels
//   and waits for the device): a key first seen there takes the heuristic's choice, and is
//   timed at its first call outside a capture when benchmark mode is on.
// - FP32 without TF32 (ConvMath::Fma) keeps FMA math whatever an algorithm proposes, as PyTorch
//   does, so results match the CPU to float32 accuracy.
// Thread-safe.
//
// What a convolution of one dtype is described to cuDNN with (conv_types), as PyTorch's
// setConvolutionParams: float16 and bfloat16 data compute in FP32 (cuDNN's PSEUDO_HALF and
// PSEUDO_BFLOAT16 configurations: the CPU too computes them in float32, rounding each output
// once) on the tensor cores (CUDNN_TENSOR_OP_MATH); float32 in FMA math unless TF32 is allowed;
// float64 in float64.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/tensor/dtype.h"

namespace chainer::cuda {

enum class ConvDirection { Forward, BackwardData, BackwardFilter };
// CUDNN_FMA_MATH (float32 without TF32), CUDNN_DEFAULT_MATH, CUDNN_TENSOR_OP_MATH.
enum class ConvMath { Fma, Default, TensorOp };
// cuDNN's data types (cudnnDataType_t) that the convolutions use.
enum class ConvDataType { Float, Double, Half, BFloat16 };

// The descriptors' types for a convolution on arrays of DTYPE: the arrays' (tensors and filters),
// the convolution's compute type, and the math type asked of cuDNN's heuristic. The scaling
// factors (alpha, beta) are double for Double data and float for the others, as cuDNN requires.
struct ConvTypes {
  ConvDataType data = ConvDataType::Float;
  ConvDataType compute = ConvDataType::Float;
  ConvMath math = ConvMath::Fma;
  auto operator<=>(const ConvTypes&) const = default;
};
// Throws chainer::Error naming OP for a dtype cuDNN's convolutions do not take (the integers).
ConvTypes conv_types(const char* op, DType dtype, bool allow_tf32);

// What a choice is cached by. Shapes are NCHW (W: C_out, C / groups, kh, kw); GEOMETRY: kh, kw,
// sy, sx, ph, pw, dy, dx, groups.
struct ConvKey {
  int device = 0;
  ConvDirection direction = ConvDirection::Forward;
  int dtype = 0;
  std::array<int64_t, 4> x{}, w{}, y{};
  std::array<int64_t, 9> geometry{};
  ConvMath math = ConvMath::Fma;
  bool deterministic = true;
  auto operator<=>(const ConvKey&) const = default;
};

// One algorithm cuDNN proposes (a cudnnConvolution*AlgoPerf_t).
struct ConvAlgorithm {
  int algo = 0;                // the cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t
  bool supported = true;       // status CUDNN_STATUS_SUCCESS
  size_t workspace_bytes = 0;  // memory
  bool deterministic = true;   // determinism CUDNN_DETERMINISTIC
  ConvMath math = ConvMath::Default;
  float time_ms = -1;  // benchmark only
};

class ConvAlgorithmCache {
 public:
  // cuDNN's proposals for one call. HEURISTIC (no kernel runs) in cuDNN's order of preference;
  // BENCHMARK (runs every algorithm needing at most WORKSPACE_LIMIT bytes) fastest first.
  struct Proposals {
    std::function<std::vector<ConvAlgorithm>()> heuristic;
    std::function<std::vector<ConvAlgorithm>(size_t workspace_limit)> benchmark;
  };
  // Whether to time algorithms and whether the stream is being captured.
  struct Mode {
    bool benchmark = false;
    bool capturing = false;
  };
  // The most workspace one convolution may take: generous for the fast algorithms (FFT and
  // Winograd variants ask for tens of MiB on the reference shapes), small beside a GPU's memory,
  // and a block the caching allocator reuses from one call to the next.
  static constexpr size_t kWorkspaceLimit = size_t(256) << 20;

  explicit ConvAlgorithmCache(size_t workspace_limit = kWorkspaceLimit) : workspace_limit_(workspace_limit) {}

  // The algorithm for KEY (cached, or chosen by the rules above from PROPOSALS). WHAT names the
  // convolution in the error when nothing is usable.
  ConvAlgorithm choose(const ConvKey& key, Mode mode, const Proposals& proposals, const std::string& what);

  size_t workspace_limit() const { return workspace_limit_; }
  int64_t heuristic_queries() const;  // calls of Proposals::heuristic so far
  int64_t benchmarks() const;         // calls of Proposals::benchmark so far
  int64_t cache_hits() const;         // choices served from the cache
  int64_t cached() const;             // keys held

 private:
  struct Entry {
    ConvAlgorithm algorithm;
    bool benchmarked = false;
  };
  // The first usable proposal of CANDIDATES for KEY, or nullptr.
  const ConvAlgorithm* first_usable(const ConvKey& key, const std::vector<ConvAlgorithm>& candidates) const;

  size_t workspace_limit_;
  mutable std::mutex mutex_;
  std::map<ConvKey, Entry> entries_;
  int64_t heuristic_queries_ = 0, benchmarks_ = 0, cache_hits_ = 0;
};

}  // namespace chainer::cuda
