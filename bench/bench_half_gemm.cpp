// Matrix-product rate (GFLOP/s) in float32, bfloat16 and float16 (half operands and C, products
// accumulated in float32) on the shapes of the tutorial MLP (batch 100, 784-1000-1000-10: the
// forward products and the backward ones with their transposes) and two square ones, in the
// kernel family CHAINER_CPU_ISA chooses: avx512_bf16 multiplies bfloat16 with vdpbf16ps, the
// others widen half operands while packing (what a CPU without AVX512_BF16 gets).
// bench/compare_half_gemm.sh runs it beside PyTorch's.
//   build/bench/bench_half_gemm [--threads N] [--seconds S] [--cpu-time]
// Prints a table and one JSON line (GFLOP/s per case and dtype).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "call_timing.h"
#include "core/cpu/family.h"  // gemm_backend()
#include "core/cpu/isa.h"
#include "core/ops/ops.h"
#include "core/util/parallel.h"
#include "core/util/random.h"
#include "report_errors.h"

using namespace chainer;

namespace {
struct Case {
  const char* name;  // the key of the JSON line (bench/peers/half_gemm_peer.py uses the same)
  int64_t m, n, k;
  bool ta, tb;
};

int run(int argc, char** argv) {
  int threads = 2;
  double min_seconds = 0.5;
  bool cpu_time = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) min_seconds = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--cpu-time")) cpu_time = true;
    else {
      std::fprintf(stderr, "usage: bench_half_gemm [--threads N] [--seconds S] [--cpu-time]\n");
      return 2;
    }
  }
  set_num_threads(threads);
  const Case cases[] = {
      {"fwd1 x W1^T 100x784x1000", 100, 1000, 784, false, true},
      {"fwd2 h W2^T 100x1000x1000", 100, 1000, 1000, false, true},
      {"fwd3 h W3^T 100x1000x10", 100, 10, 1000, false, true},
      {"gW1 gy^T x 1000x100x784", 1000, 784, 100, true, false},
      {"gW2 gy^T h 1000x100x1000", 1000, 1000, 100, true, false},
      {"gW3 gy^T h 10x100x1000", 10, 1000, 100, true, false},
      {"gx2 gy W2 100x1000x1000", 100, 1000, 1000, false, false},
      {"gx3 gy W3 100x10x1000", 100, 1000, 10, false, false},
      {"square 512", 512, 512, 512, false, false},
      {"square 1024", 1024, 1024, 1024, false, false},
  };
  const DType dtypes[] = {DType::Float32, DType::BFloat16, DType::Float16};
  std::printf("cpu kernels %s; gemm backend %s (%s), %d threads\n", cpu::isa_description().c_str(), cpu::gemm_backend(),
              cpu::gemm_blocking().c_str(), threads);
  std::printf("  %-28s %10s %10s %10s   GFLOP/s (m x k x n)\n", "", "float32", "bfloat16", "float16");
  std::string json = std::string("{\"cpu_kernels\": \"") + cpu::isa_description() + "\", \"threads\": " +
                     std::to_string(threads) + ", \"gflops\": {";
  for (size_t i = 0; i < std::size(cases); ++i) {
    const Case& c = cases[i];
    std::printf("  %-28s", c.name);
    json += std::string(i ? ", " : "") + "\"" + c.name + "\": {";
    for (size_t d = 0; d < std::size(dtypes); ++d) {
      const Tensor a = random::normal(c.ta ? Shape{c.k, c.m} : Shape{c.m, c.k}).astype(dtypes[d]);
      const Tensor b = random::normal(c.tb ? Shape{c.n, c.k} : Shape{c.k, c.n}).astype(dtypes[d]);
      Tensor out = Tensor::empty({c.m, c.n}, dtypes[d]);
      const double s =
          bench::seconds_per_call([&] { ops::gemm(a, c.ta, b, c.tb, 1.0, 0.0, out); }, min_seconds, threads, cpu_time);
      const double gflops = 2.0 * double(c.m) * double(c.n) * double(c.k) / s / 1e9;
      std::printf(" %10.1f", gflops);
      char entry[64];
      std::snprintf(entry, sizeof entry, "%s\"%s\": %.1f", d ? ", " : "", dtype_name(dtypes[d]), gflops);
      json += entry;
    }
    std::printf("\n");
    json += "}";
  }
  std::printf("%s}}\n", json.c_str());
  return 0;
}
}  // namespace

int main(int argc, char** argv) { return bench::report_errors([&] { return run(argc, argv); }); }
