// Matrix-product rate (GFLOP/s) of our GEMM backends on the square 1000^3 product and on the
// shapes of the tutorial MLP (batch 100, 784-1000-1000-10), and the epoch floor it implies.
//   build/bench/bench_gemm [--threads N] [--seconds S] [--cpu-time]
//   CHAINER_GEMM_KC=192 build/bench/bench_gemm   # another slice depth than this CPU's caches choose
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "report_errors.h"
#include "core/cpu/family.h"  // gemm_backend()
#include "core/cpu/isa.h"
#include "call_timing.h"
#include "core/ops/ops.h"
#include "core/util/parallel.h"
#include "core/util/random.h"

using namespace chainer;

namespace {
bool g_cpu_time = false;  // --cpu-time (call_timing.h)

struct Case {
  const char* name;
  int64_t m, n, k;
  bool ta, tb;
  double per_iteration;  // calls per training iteration
};
}  // namespace

namespace {
int run(int argc, char** argv) {
  int threads = 2;
  double min_seconds = 0.5;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) min_seconds = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--cpu-time")) g_cpu_time = true;
    else {
      std::fprintf(stderr, "usage: bench_gemm [--threads N] [--seconds S] [--cpu-time]\n");
      return 2;
    }
  }
  set_num_threads(threads);
  auto time_call = [&](auto&& fn) { return bench::seconds_per_call(fn, min_seconds, threads, g_cpu_time); };
  const Case cases[] = {
      {"square 1000x1000x1000", 1000, 1000, 1000, false, false, 0},
      {"fwd l1  y=x W1^T   (100,784)x(784,1000)", 100, 1000, 784, false, true, 1},
      {"fwd l2  y=h W2^T   (100,1000)x(1000,1000)", 100, 1000, 1000, false, true, 1},
      {"fwd l3  y=h W3^T   (100,1000)x(1000,10)", 100, 10, 1000, false, true, 1},
      {"bwd gW1=gy^T x     (1000,100)x(100,784)", 1000, 784, 100, true, false, 1},
      {"bwd gW2=gy^T h     (1000,100)x(100,1000)", 1000, 1000, 100, true, false, 1},
      {"bwd gW3=gy^T h     (10,100)x(100,1000)", 10, 1000, 100, true, false, 1},
      {"bwd gx2=gy W2      (100,1000)x(1000,1000)", 100, 1000, 1000, false, false, 1},
      {"bwd gx3=gy W3      (100,10)x(10,1000)", 100, 1000, 10, false, false, 1},
  };
  std::printf("cpu kernels %s; gemm backend %s (%s), %d threads\n", cpu::isa_description().c_str(), cpu::gemm_backend(),
              cpu::gemm_blocking().c_str(), threads);
  double iteration_seconds = 0, iteration_flop = 0, square_rate = 0;
  for (const Case& c : cases) {
    Tensor a = random::normal(c.ta ? Shape{c.k, c.m} : Shape{c.m, c.k});
    Tensor b = random::normal(c.tb ? Shape{c.n, c.k} : Shape{c.k, c.n});
    Tensor out = Tensor::empty({c.m, c.n});
    const double s = time_call([&] { ops::gemm(a, c.ta, b, c.tb, 1.0, 0.0, out); });
    const double flop = 2.0 * double(c.m) * double(c.n) * double(c.k);
    std::printf("  %-44s %8.1f GFLOP/s  %8.3f ms\n", c.name, flop / s / 1e9, s * 1e3);
    if (c.per_iteration == 0) square_rate = flop / s;
    iteration_seconds += c.per_iteration * s;
    iteration_flop += c.per_iteration * flop;
  }
  const double epoch_flop = 645.8e9;  // the peers' count: 6 * 600 * 100 * (784*1000 + 1000*1000 + 1000*10)
  std::printf("floor from the square rate: %.2f s per epoch (%.0f GFLOP/s)\n", epoch_flop / square_rate, square_rate / 1e9);
  std::printf("GEMM time of one tutorial training epoch (600 iterations, no gx for the input): %.2f s (%.0f GFLOP/s)\n",
              600 * iteration_seconds, iteration_flop / iteration_seconds / 1e9);
  std::printf("{\"cpu_kernels\": \"%s\", \"backend\": \"%s\", \"threads\": %d, \"square_gflops\": %.1f, "
              "\"epoch_gemm_s\": %.3f}\n",
              cpu::isa_description().c_str(), cpu::gemm_backend(), threads, square_rate / 1e9, 600 * iteration_seconds);
  return 0;
}
}  // namespace

int main(int argc, char** argv) { return bench::report_errors([&] { return run(argc, argv); }); }
