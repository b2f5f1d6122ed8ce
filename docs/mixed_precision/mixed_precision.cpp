// The program of the guide to mixed-precision training (docs/mixed_precision.md), its loss
// scaling and float32 master weights: a linear regression trained data parallel with dynamic loss
// scaling, one step made to overflow on one process only (every process skips it and backs the
// scale off), a float16 parameter whose small steps accumulate in its float32 master copy, and a
// classifier trained under mixed_bf16 and evaluated under an AutocastScope. It
// includes the installed headers only (the test install_consumer builds it so); it fails (exit 1,
// saying why) when a check does not hold.
//   mpiexec -n 2 build/docs/mixed_precision/mixed_precision
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <chainer.h>
#include <chainermn.h>

namespace F = chainer::functions;
namespace L = chainer::links;

namespace {

void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("mixed_precision: " + what);
}

// y = x . (1, -2, 0.5) on 16 examples per process, other ones on each.
std::pair<chainer::Tensor, chainer::Tensor> examples(int rank) {
  std::vector<float> x, y;
  for (int i = 0; i < 16; ++i) {
    const float a = float((i * 7 + rank * 3) % 11) / 11 - 0.5f, b = float((i * 5 + rank) % 13) / 13 - 0.5f,
                c = float((i * 3 + rank * 5) % 7) / 7 - 0.5f;
    x.insert(x.end(), {a, b, c});
    y.push_back(a - 2 * b + 0.5f * c);
  }
  return {chainer::Tensor::from_vector(x, {16, 3}), chainer::Tensor::from_vector(y, {16, 1})};
}

void data_parallel(const std::shared_ptr<chainermn::Communicator>& comm) {
  const auto [x, t] = examples(comm->rank());
  auto model = std::make_shared<L::Linear>(3, 1);
  // [loss-scaling]
  auto optimizer = chainermn::create_multi_node_optimizer(std::make_shared<chainer::optimizers::Adam>(0.05), comm);
  optimizer->setup(model);
  optimizer->loss_scaling({.init_scale = 1024, .growth_interval = 20});  // PyTorch GradScaler's knobs
  for (int i = 0; i < 200; ++i) {
    // Backpropagates loss * loss_scale(); the step sees the true gradients, or is skipped.
    optimizer->update([&] { return F::mean_squared_error((*model)(chainer::Variable(x)), chainer::Variable(t)); });
  }
  // [end]
  const double scale = optimizer->loss_scale();
  check(scale == 1024 * std::pow(2.0, std::floor(199 / 20)), "the scale grows after every 20 good steps");
  check(optimizer->skipped_updates() == 0, "no step overflowed");

  // A batch that overflows on the last process only (its loss and gradients are inf).
  const std::vector<float> before = model->W().data().to_vector<float>();
  const bool bad = comm->rank() == comm->size() - 1;
  optimizer->update([&] {
    return F::mean_squared_error((*model)(chainer::Variable(x) * (bad ? 1e30 : 1.0)), chainer::Variable(t));
  });
  check(optimizer->last_update_skipped(), "every process skips the step that overflowed on one");
  check(optimizer->loss_scale() == scale / 2, "and halves the scale");
  check(model->W().data().to_vector<float>() == before, "the parameters did not move");
  const double loss = F::mean_squared_error((*model)(chainer::Variable(x)), chainer::Variable(t)).item();
  check(loss < 1e-3, "the regression converged, loss " + std::to_string(loss));
  if (comm->rank() == 0)
    std::printf("data parallel on %d processes: loss %.2g, scale %g after the skipped step\n", comm->size(), loss,
                optimizer->loss_scale());
}

// One float16 parameter, 1.0.
struct Half : chainer::Link {
  Half() { add_param("w", chainer::Tensor::ones({1}).astype(chainer::DType::Float16)); }
};

void master_weights(bool print) {
  auto link = std::make_shared<Half>();
  // [fp32-update]
  auto optimizer = std::make_shared<chainer::optimizers::SGD>(1e-4);
  optimizer->setup(link);
  optimizer->use_fp32_update();  // float16 and bfloat16 parameters step float32 master copies
  optimizer->loss_scaling();     // Chainer's dynamic scaling: starts at 1, doubles until an overflow
  // [end]
  for (int i = 0; i < 100; ++i) {
    // What backward would give for the gradient 1, times the current scale.
    link->param("w").set_grad(chainer::Tensor::full({1}, optimizer->loss_scale(), chainer::DType::Float16));
    optimizer->update();
    if (optimizer->last_update_skipped()) throw std::runtime_error("mixed_precision: an unexpected skip");
  }
  const float master = optimizer->fp32_param("/w").to_vector<float>()[0];
  const float half = link->param("w").data().astype(chainer::DType::Float32).to_vector<float>()[0];
  // Each step (1e-4) is below half a float16 ulp of 1 (2^-11): float16 alone would stay at 1.
  check(std::abs(master - 0.99f) < 1e-5f, "the master accumulated 100 steps of 1e-4");
  check(half == float(chainer::float16(master)), "the float16 parameter is the master rounded");
  if (print) std::printf("float16 parameter %.6f, its float32 master %.6f\n", half, master);
}

// A two-layer classifier of 3 classes (points in 8 dimensions around 3 centres) trained under
// mixed_bf16 data parallel, then evaluated under a torch.autocast-style scope.
void mixed_model(const std::shared_ptr<chainermn::Communicator>& comm) {
  std::vector<float> xs;
  std::vector<int32_t> ts;
  for (int i = 0; i < 96; ++i) {
    const int label = (i + comm->rank()) % 3;
    for (int d = 0; d < 8; ++d) xs.push_back(float(d % 3 == label) + 0.2f * float((i * 7 + d * 5) % 11) / 11);
    ts.push_back(label);
  }
  const chainer::Variable x(chainer::Tensor::from_vector(xs, {96, 8})), t(chainer::Tensor::from_vector(ts));
  // [mixed16]
  chainer::config::DtypeScope mixed(chainer::config::Dtype::MixedBf16);  // chainer.using_config('dtype', ...)
  auto model = std::make_shared<chainer::Sequential>();
  model->append(std::make_shared<L::Linear>(8, 32));  // float32 parameters: the master weights
  model->append([](const chainer::Variable& h) { return F::relu(h); });
  model->append(std::make_shared<L::Linear>(32, 3));
  auto optimizer = chainermn::create_multi_node_optimizer(std::make_shared<chainer::optimizers::Adam>(0.01), comm);
  optimizer->setup(model);
  for (int i = 0; i < 100; ++i) {
    // The linear layers compute in bfloat16; the loss in float32; the gradients reach the
    // float32 parameters in float32, so the optimizer is the float32 one.
    optimizer->update([&] { return F::softmax_cross_entropy((*model)(x), t); });
  }
  // [end]
  check(model->params()[0].dtype() == chainer::DType::Float32, "mixed_bf16 keeps float32 parameters");
  check((*model)(x).dtype() == chainer::DType::BFloat16, "and computes in bfloat16");
  chainer::config::DtypeScope full(chainer::config::Dtype::Float32);
  // [autocast]
  {
    chainer::AutocastScope autocast(chainer::DType::BFloat16);  // torch.autocast("cpu", dtype=torch.bfloat16)
    const chainer::Variable y = (*model)(x);                     // bfloat16
    const double accuracy = F::accuracy(y, t).item();            // accuracy widens to float32
    check(accuracy > 0.95, "the mixed model learned, accuracy " + std::to_string(accuracy));
  }
  // [end]
  check((*model)(x).dtype() == chainer::DType::Float32, "outside the scope the model computes in float32");
  if (comm->rank() == 0) std::printf("mixed_bf16 on %d processes: a classifier learned its 3 classes\n", comm->size());
}

}  // namespace

int main() {
  try {
    auto comm = chainermn::create_communicator("naive");
    data_parallel(comm);
    master_weights(comm->rank() == 0);
    mixed_model(comm);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
