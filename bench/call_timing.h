// How the micro-benchmarks (bench_gemm, bench_conv) time one call: the best of 5 windows of at
// least MIN_SECONDS / 5 each, after one warm-up call, since on a shared machine the best window
// is the one least disturbed by other work. Wall seconds, or with CPU_TIME process CPU seconds
// divided by the thread count, which stays meaningful on a machine shared with other work.
#pragma once
#include <algorithm>
#include <chrono>
#include <ctime>

namespace bench {

inline double now(bool cpu_time, int threads) {
  if (cpu_time) return double(std::clock()) / CLOCKS_PER_SEC / threads;
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <class Fn>
double seconds_per_call(Fn&& fn, double min_seconds, int threads, bool cpu_time) {
  fn();
  double best = 1e30;
  for (int window = 0; window < 5; ++window) {
    int reps = 0;
    const double start = now(cpu_time, threads);
    double elapsed = 0;
    do {
      fn();
      ++reps;
      elapsed = now(cpu_time, threads) - start;
    } while (elapsed < min_seconds / 5);
    best = std::min(best, elapsed / reps);
  }
  return best;
}

}  // namespace bench
