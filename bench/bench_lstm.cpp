// The LSTM stack's training step on the CPU (or one CUDA device with --gpu): NStepLSTM (or NStepBiLSTM) forward over a batch of
// variable-length sequences, a loss on every output, backward, and an SGD step, repeated; prints
// the configuration, the CPU's kernel family and the median seconds per step as one JSON line,
// for bench/compare_lstm.sh to set beside PyTorch's nn.LSTM on the same sizes
// (bench/peers/lstm_peer.py).
//   bench_lstm [--layers 2] [--units 256] [--in 256] [--batch 64] [--min-len 10] [--max-len 30]
//              [--steps 20] [--warmup 3] [--threads 2] [--bi] [--seed 0] [--gpu [ID]]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <chainer.h>
#include "core/cpu/isa.h"

using namespace chainer;
namespace F = chainer::functions;
namespace L = chainer::links;

int main(int argc, char** argv) {
  int64_t layers = 2, units = 256, in = 256, batch = 64, min_len = 10, max_len = 30, steps = 20, warmup = 3;
  int threads = 2;
  uint64_t seed = 0;
  bool bi = false;
  int gpu = -1;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto next = [&]() -> int64_t {
        if (i + 1 >= argc) throw Error("bench_lstm: " + a + " needs a value");
        return parse_integer(argv[++i], a.c_str(), 0, int64_t(1) << 40);
      };
      if (a == "--layers") layers = next();
      else if (a == "--units") units = next();
      else if (a == "--in") in = next();
      else if (a == "--batch") batch = next();
      else if (a == "--min-len") min_len = next();
      else if (a == "--max-len") max_len = next();
      else if (a == "--steps") steps = next();
      else if (a == "--warmup") warmup = next();
      else if (a == "--threads") threads = int(next());
      else if (a == "--seed") seed = uint64_t(next());
      else if (a == "--bi") bi = true;
      else if (a == "--gpu") gpu = i + 1 < argc && argv[i + 1][0] != '-' ? int(next()) : 0;
      else throw Error("bench_lstm: unknown argument " + a);
    }
    if (min_len < 1 || max_len < min_len || steps < 1) throw Error("bench_lstm: need 1 <= min-len <= max-len, steps >= 1");
    set_num_threads(threads);
    Device device = Device::cpu();
    if (gpu >= 0) {
      cuda::get_device(gpu).use();
      device = cuda::get_device(gpu).device();
    }
    // Every step ends with its work done on the device: the time is the step's, not its launches'.
    auto wait = [&] { if (gpu >= 0) cuda::synchronize(); };
    Generator gen(seed);
    std::shared_ptr<L::NStepLSTMBase> lstm;
    if (bi) lstm = std::make_shared<L::NStepBiLSTM>(layers, in, units, 0.0);
    else lstm = std::make_shared<L::NStepLSTM>(layers, in, units, 0.0);
    lstm->to_device(device);
    std::vector<Variable> xs;
    int64_t tokens = 0;
    for (int64_t i = 0; i < batch; ++i) {
      const int64_t len = min_len + int64_t(gen.below(uint64_t(max_len - min_len + 1)));
      tokens += len;
      xs.emplace_back(random::normal({len, in}, 0, 1, DType::Float32, &gen).to(device));
    }
    std::vector<double> times;
    wait();
    for (int64_t s = 0; s < warmup + steps; ++s) {
      const auto start = std::chrono::steady_clock::now();
      lstm->cleargrads();
      auto [hy, cy, ys] = lstm->forward(Variable(), Variable(), xs);
      Variable loss = F::sum(F::concat(ys, 0) * F::concat(ys, 0)) * (1.0 / double(tokens));
      loss.backward();
      for (Variable p : lstm->params()) ops::axpy_(p.data(), -0.01, p.grad());
      wait();
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (s >= warmup) times.push_back(t);
    }
    std::sort(times.begin(), times.end());
    std::printf("{\"engine\": \"chainermn-cpp\", \"device\": \"%s\", \"cpu_kernels\": \"%s\", \"threads\": %d, \"layers\": %lld, "
                "\"units\": %lld, \"in\": %lld, \"batch\": %lld, \"tokens\": %lld, \"bidirectional\": %s, "
                "\"step_s_median\": %.5f, \"step_s_min\": %.5f}\n",
                device.str().c_str(), cpu::isa_description().c_str(), threads, (long long)layers, (long long)units, (long long)in,
                (long long)batch, (long long)tokens, bi ? "true" : "false", times[times.size() / 2], times.front());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
