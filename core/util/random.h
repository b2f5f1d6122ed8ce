/// @file
/// Random numbers with a state that can be saved and restored (snapshots resume bit for bit).
/// xoshiro256** seeded through splitmix64; normals by Box-Muller. Same seed, same stream, on
/// every platform, unlike std::normal_distribution.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "core/tensor/tensor.h"

namespace chainer {

/// A random number generator whose state snapshots can save and restore (xoshiro256**).
class Generator {
 public:
  explicit Generator(uint64_t seed = 0) { this->seed(seed); }  ///< a generator seeded with SEED
  void seed(uint64_t seed);                   ///< restarts the stream from SEED
  uint64_t next_u64();                        ///< the next 64 random bits
  double uniform();                           ///< uniform in [0, 1)
  double normal();                            ///< standard normal, N(0, 1)
  uint64_t below(uint64_t n);                 ///< uniform integer in [0, n), unbiased
  std::vector<int64_t> permutation(int64_t n);  ///< a random permutation of [0, n) (Fisher-Yates)

  /// Saved/restored by snapshots: 4 words of state, then the cached normal (flag, bits).
  std::vector<uint64_t> state() const;
  /// Restores a state() taken earlier.
  void set_state(const std::vector<uint64_t>& state);

 private:
  std::array<uint64_t, 4> s_{};
  bool has_cached_normal_ = false;
  double cached_normal_ = 0.0;
};

/// The process-wide generator, and tensors of random samples (numpy.random's role).
namespace random {
/// The process-wide generator used by initializers and dropout unless one is passed explicitly.
/// It starts from default_seed(), so the processes of an MPI job draw different numbers (their
/// dropout masks differ, as with ChainerMN's unseeded per-process generators) until seed() is
/// called: seeding every rank alike gives every rank the same numbers again, and
/// `random::seed(s + comm->rank())` keeps them apart.
Generator& default_generator();
/// The default generator's first seed: this process's rank in its MPI job as the launcher set
/// it (PMI_RANK, OMPI_COMM_WORLD_RANK or PMIX_RANK), else 0, so a single process always
/// starts from 0.
uint64_t default_seed();
/// Seeds the default generator.
void seed(uint64_t seed);
/// A tensor of normal samples (MEAN, STDDEV) from GEN (the default generator when null).
Tensor normal(const Shape& shape, double mean = 0.0, double stddev = 1.0, DType dtype = DType::Float32,
              Generator* gen = nullptr);
/// A tensor of uniform samples in [LOW, HIGH) from GEN (the default generator when null).
Tensor uniform(const Shape& shape, double low = 0.0, double high = 1.0, DType dtype = DType::Float32,
               Generator* gen = nullptr);
}  // namespace random

}  // namespace chainer
