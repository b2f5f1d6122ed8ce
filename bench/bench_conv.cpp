// Convolution rates (ms and GFLOP/s) of ops::convolution_2d and its two gradients on the layer
// shapes of the Fashion-MNIST CNN and of ResNet-50 (NCHW), plus one depthwise layer, and the
// convolution time of one Fashion-MNIST training epoch they imply; float32, or a half type.
//   build/bench/bench_conv [--threads N] [--seconds S] [--cpu-time] [--only NAME]
//                          [--dtype float32|float16|bfloat16]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "report_errors.h"
#include "call_timing.h"
#include "core/cpu/family.h"  // gemm_backend()
#include "core/cpu/isa.h"
#include "core/ops/ops.h"
#include "core/util/parallel.h"
#include "core/util/random.h"

using namespace chainer;

namespace {
bool g_cpu_time = false;  // --cpu-time (call_timing.h)

DType parse_dtype(const std::string& text) {
  for (DType d : {DType::Float32, DType::Float16, DType::BFloat16})
    if (text == dtype_name(d)) return d;
  throw Error(str("bench_conv: --dtype ", text, " is not float32, float16 or bfloat16"));
}

struct Layer {
  const char* name;
  int64_t n, c, c_out, hw, k, stride, pad, groups;
  double per_epoch;  // calls per Fashion-MNIST training epoch (600 iterations of batch 100)
};
}  // namespace

namespace {
int run(int argc, char** argv) {
  int threads = 2;
  double min_seconds = 0.5;
  std::string only;
  DType dtype = DType::Float32;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) min_seconds = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--cpu-time")) g_cpu_time = true;
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    else if (!std::strcmp(argv[i], "--dtype") && i + 1 < argc) dtype = parse_dtype(argv[++i]);
    else {
      std::fprintf(stderr,
                   "usage: bench_conv [--threads N] [--seconds S] [--cpu-time] [--only NAME] "
                   "[--dtype float32|float16|bfloat16]\n");
      return 2;
    }
  }
  set_num_threads(threads);
  auto time_call = [&](auto&& fn) { return bench::seconds_per_call(fn, min_seconds, threads, g_cpu_time); };
  const Layer layers[] = {
      {"fashion-1", 100, 1, 32, 28, 3, 1, 1, 1, 600},   {"fashion-2", 100, 32, 32, 28, 3, 1, 1, 1, 600},
      {"fashion-3", 100, 32, 64, 14, 3, 1, 1, 1, 600},  {"fashion-4", 100, 64, 64, 14, 3, 1, 1, 1, 600},
      {"resnet-3x3", 8, 64, 64, 56, 3, 1, 1, 1, 0},     {"resnet-1x1a", 8, 256, 64, 56, 1, 1, 0, 1, 0},
      {"resnet-1x1b", 8, 64, 256, 56, 1, 1, 0, 1, 0},   {"resnet-3x3s2", 8, 128, 128, 56, 3, 2, 1, 1, 0},
      {"depthwise-3x3", 8, 64, 64, 56, 3, 1, 1, 64, 0},
  };
  std::printf("cpu kernels %s; gemm backend %s, %d threads, %s; ms per call and GFLOP/s (2 * N * C_out * out_h * out_w * "
              "C / groups * k * k per pass)\n",
              cpu::isa_description().c_str(), cpu::gemm_backend(), threads, dtype_name(dtype));
  std::printf("  %-14s %22s %22s %22s\n", "layer", "forward", "backward data", "backward filter");
  double epoch_seconds = 0;
  for (const Layer& l : layers) {
    if (!only.empty() && only != l.name) continue;
    const ops::Conv2dParams p{.sy = l.stride, .sx = l.stride, .ph = l.pad, .pw = l.pad, .groups = l.groups};
    const Tensor x = random::normal({l.n, l.c, l.hw, l.hw}).astype(dtype);
    const Tensor W = random::normal({l.c_out, l.c / l.groups, l.k, l.k}).astype(dtype);
    const Tensor y = ops::convolution_2d(x, W, Tensor(), p);
    const Tensor gy = random::normal(y.shape()).astype(dtype);
    const double flop = 2.0 * double(y.numel()) * double(l.c / l.groups * l.k * l.k);
    const double fwd = time_call([&] { ops::convolution_2d(x, W, Tensor(), p); });
    const double bwd_data = time_call([&] { ops::convolution_2d_grad_data(gy, W, l.hw, l.hw, p); });
    const double bwd_filter = time_call([&] { ops::convolution_2d_grad_filter(x, gy, l.k, l.k, p); });
    auto cell = [&](double s) { return std::to_string(s * 1e3).substr(0, 7) + " ms " + std::to_string(int(flop / s / 1e9)) + " GF/s"; };
    std::printf("  %-14s %22s %22s %22s\n", l.name, cell(fwd).c_str(), cell(bwd_data).c_str(), cell(bwd_filter).c_str());
    // The first layer's input is data: no data gradient.
    epoch_seconds += l.per_epoch * (fwd + bwd_filter + (l.c == 1 ? 0 : bwd_data));
  }
  if (only.empty())
    std::printf("convolution time of one Fashion-MNIST CNN training epoch (600 iterations of batch 100): %.2f s\n",
                epoch_seconds);
  return 0;
}
}  // namespace

int main(int argc, char** argv) { return bench::report_errors([&] { return run(argc, argv); }); }
