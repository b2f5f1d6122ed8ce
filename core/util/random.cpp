#include "core/util/random.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numbers>

namespace chainer {

namespace {
uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
}  // namespace

void Generator::seed(uint64_t seed) {
  uint64_t x = seed;
  for (auto& w : s_) w = splitmix64(x);
  has_cached_normal_ = false;
}

uint64_t Generator::next_u64() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Generator::uniform() { return double(next_u64() >> 11) * 0x1.0p-53; }

double Generator::normal() {
  if (has_cached_normal_) {
    has_cached_normal_ = false;
    return cached_normal_;
  }
  double u1;
  do u1 = uniform(); while (u1 <= 0.0);
  const double u2 = uniform();
  const double r = std::sqrt(-2.0 * std::log(u1));
  cached_normal_ = r * std::sin(2.0 * std::numbers::pi * u2);
  has_cached_normal_ = true;
  return r * std::cos(2.0 * std::numbers::pi * u2);
}

uint64_t Generator::below(uint64_t n) {
  if (n == 0) return 0;
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do x = next_u64(); while (x >= limit);
  return x % n;
}

std::vector<int64_t> Generator::permutation(int64_t n) {
  std::vector<int64_t> p(size_t(std::max<int64_t>(n, 0)));
  for (int64_t i = 0; i < n; ++i) p[size_t(i)] = i;
  for (int64_t i = n - 1; i > 0; --i) std::swap(p[size_t(i)], p[size_t(below(uint64_t(i) + 1))]);
  return p;
}

std::vector<uint64_t> Generator::state() const {
  uint64_t bits;
  std::memcpy(&bits, &cached_normal_, sizeof bits);
  return {s_[0], s_[1], s_[2], s_[3], uint64_t(has_cached_normal_), bits};
}

void Generator::set_state(const std::vector<uint64_t>& state) {
  if (state.size() != 6) throw Error(str("Generator: a saved state has 6 words, got ", state.size()));
  for (int i = 0; i < 4; ++i) s_[size_t(i)] = state[size_t(i)];
  has_cached_normal_ = state[4] != 0;
  std::memcpy(&cached_normal_, &state[5], sizeof cached_normal_);
}

namespace random {

uint64_t default_seed() {
  // Read from the launcher's environment, not from MPI: the core layer knows nothing of MPI,
  // and the generator may be used before MPI starts. A value that is not a rank counts as none.
  for (const char* name : {"PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"}) {
    const char* text = std::getenv(name);
    if (!text || !*text) continue;
    char* end = nullptr;
    const long long rank = std::strtoll(text, &end, 10);
    if (*end == '\0' && rank >= 0) return uint64_t(rank);
  }
  return 0;
}

Generator& default_generator() {
  static Generator gen(default_seed());
  return gen;
}

void seed(uint64_t s) { default_generator().seed(s); }

Tensor normal(const Shape& shape, double mean, double stddev, DType dtype, Generator* gen) {
  Generator& g = gen ? *gen : default_generator();
  Tensor t = Tensor::empty(shape, dtype);
  CHAINER_DISPATCH_FLOATING(dtype, "random.normal", [&] {
    scalar_t* p = t.data<scalar_t>();
    for (int64_t i = 0, n = t.numel(); i < n; ++i) p[i] = scalar_t(mean + stddev * g.normal());
  });
  return t;
}

Tensor uniform(const Shape& shape, double low, double high, DType dtype, Generator* gen) {
  Generator& g = gen ? *gen : default_generator();
  Tensor t = Tensor::empty(shape, dtype);
  CHAINER_DISPATCH_FLOATING(dtype, "random.uniform", [&] {
    scalar_t* p = t.data<scalar_t>();
    for (int64_t i = 0, n = t.numel(); i < n; ++i) p[i] = scalar_t(low + (high - low) * g.uniform());
  });
  return t;
}

}  // namespace random
}  // namespace chainer
