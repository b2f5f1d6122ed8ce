// The memory a forward pass keeps for backward, and the time of a training step's forward and
// backward, per config::dtype: the tutorial MLP (784-1000-1000-10, batch 100) and the
// Fashion-MNIST CNN of apps/fashion_mnist_cnn (four 3x3 convolutions with batch normalization,
// two max poolings, dropout, a linear layer; batch 100). The memory is what the host allocator
// holds in large blocks (64 KiB and more: every activation of these models) after the forward
// and the loss, less what it held before: the activations the graph saved, in their dtype, and
// the half copies of the weights that the half list made (autocast caches them the same way).
//   build/bench/bench_activation_memory [--steps 20] [--threads 2]
#include <chainer.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace F = chainer::functions;
namespace L = chainer::links;
using chainer::Variable;
using chainer::config::Dtype;

namespace {

class MLP : public chainer::Chain {
 public:
  MLP() {
    l1 = add_link("l1", std::make_shared<L::Linear>(784, 1000));
    l2 = add_link("l2", std::make_shared<L::Linear>(1000, 1000));
    l3 = add_link("l3", std::make_shared<L::Linear>(1000, 10));
  }
  Variable forward(const Variable& x) override { return (*l3)(F::relu((*l2)(F::relu((*l1)(x))))); }

 private:
  std::shared_ptr<L::Linear> l1, l2, l3;
};

class CNN : public chainer::Chain {
 public:
  CNN() {
    const int64_t channels[][2] = {{1, 32}, {32, 32}, {32, 64}, {64, 64}};
    for (int i = 0; i < 4; ++i) {
      conv[i] = add_link("conv" + std::to_string(i), std::make_shared<L::Convolution2D>(
                                                         channels[i][0], channels[i][1], 3, 1, 1, /*nobias=*/true));
      bn[i] = add_link("bn" + std::to_string(i), std::make_shared<L::BatchNormalization>(channels[i][1]));
    }
    fc = add_link("fc", std::make_shared<L::Linear>(64 * 7 * 7, 10));
  }
  Variable forward(const Variable& x) override {
    Variable h = x;
    for (int i = 0; i < 4; ++i) {
      h = F::relu((*bn[i])((*conv[i])(h)));
      if (i % 2 == 1) h = F::max_pooling_2d(h, 2);
    }
    return (*fc)(F::dropout(h, 0.5));
  }

 private:
  std::shared_ptr<L::Convolution2D> conv[4];
  std::shared_ptr<L::BatchNormalization> bn[4];
  std::shared_ptr<L::Linear> fc;
};

struct Result {
  double saved_mib, step_ms;
};

// One model made under DTYPE: the bytes its forward keeps, and the mean time of STEPS forward +
// backward passes (after two warm-up steps).
template <class Model>
Result measure(Dtype dtype, const chainer::Shape& input, int steps) {
  chainer::config::DtypeScope scope(dtype);
  auto model = std::make_shared<Model>();
  chainer::Generator gen(1);
  const Variable x(chainer::random::uniform(input, 0.0, 1.0, chainer::DType::Float32, &gen));
  std::vector<int32_t> labels(static_cast<size_t>(input[0]));
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = int32_t(i % 10);
  const Variable t(chainer::Tensor::from_vector(labels));
  auto step = [&] {
    model->cleargrads();
    F::softmax_cross_entropy((*model)(x), t).backward();
  };
  step();
  step();
  const size_t before = chainer::host_allocator_stats().in_use_bytes;
  double saved;
  {
    const Variable loss = F::softmax_cross_entropy((*model)(x), t);
    saved = double(chainer::host_allocator_stats().in_use_bytes - before) / (1 << 20);
  }
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) step();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return {saved, ms / steps};
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 20, threads = 2;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--steps") && i + 1 < argc) steps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: bench_activation_memory [--steps N] [--threads N]\n");
      return 2;
    }
  }
  chainer::set_num_threads(threads);
  std::printf("# CPU kernels: %s; %d threads, %d steps\n", chainer::cpu::isa_description().c_str(), threads, steps);
  std::printf("%-5s %-11s %12s %12s\n", "model", "dtype", "saved MiB", "fwd+bwd ms");
  for (Dtype d : {Dtype::Float32, Dtype::Mixed16, Dtype::MixedBf16, Dtype::Float16, Dtype::BFloat16}) {
    const Result mlp = measure<MLP>(d, {100, 784}, steps);
    std::printf("%-5s %-11s %12.2f %12.2f\n", "mlp", chainer::config::dtype_name(d), mlp.saved_mib, mlp.step_ms);
  }
  for (Dtype d : {Dtype::Float32, Dtype::Mixed16, Dtype::MixedBf16, Dtype::Float16, Dtype::BFloat16}) {
    const Result cnn = measure<CNN>(d, {100, 1, 28, 28}, std::max(1, steps / 4));
    std::printf("%-5s %-11s %12.2f %12.2f\n", "cnn", chainer::config::dtype_name(d), cnn.saved_mib, cnn.step_ms);
  }
  return 0;
}
