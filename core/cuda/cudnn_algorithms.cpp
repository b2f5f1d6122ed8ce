#include "core/cuda/cudnn_algorithms.h"

#include "core/util/error.h"

namespace chainer::cuda {

ConvTypes conv_types(const char* op, DType dtype, bool allow_tf32) {
  switch (dtype) {
    case DType::Float32:
      return {ConvDataType::Float, ConvDataType::Float, allow_tf32 ? ConvMath::Default : ConvMath::Fma};
    case DType::Float64: return {ConvDataType::Double, ConvDataType::Double, ConvMath::Default};
    case DType::Float16: return {ConvDataType::Half, ConvDataType::Float, ConvMath::TensorOp};
    case DType::BFloat16: return {ConvDataType::BFloat16, ConvDataType::Float, ConvMath::TensorOp};
    default: break;
  }
  throw Error(str(op, ": cuDNN's convolutions take float32, float64, float16 or bfloat16, not ", dtype_name(dtype)));
}

const ConvAlgorithm* ConvAlgorithmCache::first_usable(const ConvKey& key,
                                                      const std::vector<ConvAlgorithm>& candidates) const {
  for (const ConvAlgorithm& c : candidates)
    if (c.supported && c.workspace_bytes <= workspace_limit_ && (c.deterministic || !key.deterministic)) return &c;
  return nullptr;
}

ConvAlgorithm ConvAlgorithmCache::choose(const ConvKey& key, Mode mode, const Proposals& proposals,
                                         const std::string& what) {
  const bool time_it = mode.benchmark && !mode.capturing;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(key);
    if (it != entries_.end() && (it->second.benchmarked || !time_it)) {
      ++cache_hits_;
      return it->second.algorithm;
    }
  }
  // Proposals are asked for outside the lock: they call cuDNN (and the benchmark runs kernels).
  std::vector<ConvAlgorithm> candidates;
  if (time_it) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++benchmarks_;
    }
    candidates = proposals.benchmark(workspace_limit_);
  } else {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++heuristic_queries_;
    }
    candidates = proposals.heuristic();
  }
  const ConvAlgorithm* found = first_usable(key, candidates);
  if (!found) {
    int unsupported = 0, too_large = 0, nondeterministic = 0;
    for (const ConvAlgorithm& c : candidates) {
      if (!c.supported) ++unsupported;
      else if (c.workspace_bytes > workspace_limit_) ++too_large;
      else ++nondeterministic;
    }
    throw Error(str(what, ": cuDNN has no usable algorithm (of ", candidates.size(), " proposed: ", unsupported,
                    " unsupported, ", too_large, " needing more than the ", workspace_limit_ >> 20,
                    " MiB workspace limit, ", nondeterministic,
                    " not deterministic while config::cudnn_deterministic is on)"));
  }
  ConvAlgorithm chosen = *found;
  if (key.math == ConvMath::Fma) chosen.math = ConvMath::Fma;  // no TF32, whatever cuDNN proposed
  std::lock_guard<std::mutex> lock(mutex_);
  entries_[key] = Entry{chosen, time_it};
  return chosen;
}

int64_t ConvAlgorithmCache::heuristic_queries() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return heuristic_queries_;
}

int64_t ConvAlgorithmCache::benchmarks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return benchmarks_;
}

int64_t ConvAlgorithmCache::cache_hits() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cache_hits_;
}

int64_t ConvAlgorithmCache::cached() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return int64_t(entries_.size());
}

}  // namespace chainer::cuda
