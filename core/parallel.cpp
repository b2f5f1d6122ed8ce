#include "core/parallel.h"

#include <omp.h>
#include <pmmintrin.h>
#include <xmmintrin.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "core/parse.h"

namespace chainer {

namespace {
int g_threads = 0;
std::once_flag g_init;

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : 0;
}

void apply_threads(int n) {
  g_threads = n;
  omp_set_num_threads(n);
  // New team members start with the default MXCSR: set FTZ/DAZ on each of them.
#pragma omp parallel num_threads(n)
  enable_flush_denormal();
  enable_flush_denormal();
}

void init_once() {
  std::call_once(g_init, [] { apply_threads(g_threads > 0 ? g_threads : default_num_threads()); });
}
}  // namespace

void enable_flush_denormal() {
  _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
  _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
}

int default_num_threads() {
  if (const char* text = std::getenv("CHAINER_NUM_THREADS"); text && *text)
    return int(parse_integer(text, "CHAINER_NUM_THREADS", 1, kMaxThreads));
  if (int n = env_int("OMP_NUM_THREADS"); n > 0) return n;
  int cores = int(std::thread::hardware_concurrency());
  int ranks = std::max({env_int("MPI_LOCALNRANKS"), env_int("OMPI_COMM_WORLD_LOCAL_SIZE"), 1});
  return std::max(1, cores / ranks);
}

int num_threads() {
  init_once();
  return g_threads;
}

void set_num_threads(int n) {
  init_once();
  apply_threads(n > 0 ? n : default_num_threads());
}

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int threads = num_threads();
  // Four chunks per thread, taken first come first served: on this shared machine one core is
  // often slower than the other for a while, and equal static halves made the faster one wait.
  const int64_t chunks = std::min<int64_t>(int64_t(threads) * 4, std::max<int64_t>(1, n / std::max<int64_t>(grain, 1)));
  if (chunks <= 1 || threads <= 1) {
    fn(0, n);
    return;
  }
  const int team = int(std::min<int64_t>(threads, chunks));
#pragma omp parallel for num_threads(team) schedule(dynamic, 1)
  for (int64_t c = 0; c < chunks; ++c) {
    // 16-element alignment of chunk edges keeps SIMD loops whole in every chunk.
    int64_t b = (n * c / chunks) & ~int64_t(15), e = c + 1 == chunks ? n : (n * (c + 1) / chunks) & ~int64_t(15);
    if (e > b) fn(b, e);
  }
}

}  // namespace chainer
