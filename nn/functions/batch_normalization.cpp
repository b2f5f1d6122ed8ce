#include "nn/functions/batch_normalization.h"

#include "autograd/function_node.h"
#include "core/ops.h"

namespace chainer::functions {

namespace {
constexpr DType kF64 = DType::Float64;

// Every axis but the channel axis 1: the axes the statistics are taken over.
std::vector<int64_t> statistic_axes(int64_t ndim) {
  std::vector<int64_t> axes{0};
  for (int64_t d = 2; d < ndim; ++d) axes.push_back(d);
  return axes;
}

// A (C,) tensor as (C, 1, ..., 1), which broadcasts against x (N, C, ...) along axis 1.
Tensor per_channel(const Tensor& t, int64_t x_ndim) {
  Shape shape(size_t(x_ndim - 1), 1);
  shape[0] = t.numel();
  return t.reshape(shape);
}

Tensor as_dtype(const Tensor& t, DType dtype) { return t.dtype() == dtype ? t : t.astype(dtype); }

// Per-channel sums of T, in float64. The variance is E[x^2] - E[x]^2 from such sums, whose
// rounding costs ~1e-16 (mean / std)^2 of it: float32 input keeps its precision where float32
// sums would not (tests/test_batch_normalization.cpp), and sums from several processes add up
// to what one process gets, within float32's precision.
Tensor channel_sums(const Tensor& t, const std::vector<int64_t>& axes) { return ops::sum(as_dtype(t, kF64), axes); }

Tensor inverse_std(const Tensor& var, double eps) {
  return ops::div(Tensor::full({}, 1.0, var.dtype(), var.device()), ops::sqrt(ops::add_scalar(var, eps)));
}

// The elementwise sum of LOCAL over the processes, checked: the same shape and dtype, on
// LOCAL's device.
Tensor sum_over(const SumOverProcesses& sum_over_processes, const Tensor& local, const char* op) {
  Tensor total = sum_over_processes(local);
  if (!total.defined() || total.shape() != local.shape() || total.dtype() != local.dtype()) {
    const std::string got =
        total.defined() ? str(dtype_name(total.dtype()), " ", shape_str(total.shape())) : "an undefined tensor";
    throw Error(str(op, ": sum_over_processes returned ", got, " for the ", dtype_name(local.dtype()), " ",
                    shape_str(local.shape()), " it was given; expected their elementwise sum (same shape and dtype)"));
  }
  return total;
}

void check_x(const char* op, const Variable& x) {
  if (!x.defined()) throw Error(str(op, ": x must be defined"));
  const Tensor& xd = x.data();
  if (xd.dtype() != DType::Float32 && xd.dtype() != kF64)
    throw Error(str(op, ": x has dtype ", dtype_name(xd.dtype()), "; expected float32 or float64"));
  if (xd.ndim() < 2)
    throw Error(str(op, ": x has shape ", shape_str(xd.shape()),
                    "; expected (N, C) or (N, C, ...), a batch axis and the channels on axis 1"));
}

// One value per channel: (C,), C = x's axis 1.
void check_channel_shape(const char* op, const char* name, const Tensor& t, const Tensor& x) {
  if (t.shape() != Shape{x.size(1)})
    throw Error(str(op, ": ", name, " has shape ", shape_str(t.shape()), " but x of shape ", shape_str(x.shape()),
                    " has ", x.size(1), " channels (axis 1); expected ", shape_str({x.size(1)})));
}

// An input such as gamma: (C,) of x's dtype.
void check_per_channel(const char* op, const char* name, const Variable& v, const Tensor& x) {
  if (!v.defined()) throw Error(str(op, ": ", name, " must be defined"));
  const Tensor& t = v.data();
  check_channel_shape(op, name, t, x);
  if (t.dtype() != x.dtype())
    throw Error(str(op, ": ", name, " has dtype ", dtype_name(t.dtype()), " but x has dtype ", dtype_name(x.dtype())));
}

// A running statistic, updated in place: (C,), float, contiguous, on x's device.
void check_running(const char* op, const char* name, const Tensor& t, const Tensor& x) {
  if (!t.defined()) return;
  check_channel_shape(op, name, t, x);
  if (t.dtype() != DType::Float32 && t.dtype() != kF64)
    throw Error(str(op, ": ", name, " has dtype ", dtype_name(t.dtype()), "; expected float32 or float64"));
  if (!t.is_contiguous()) throw Error(str(op, ": ", name, " is updated in place and must be contiguous"));
  if (!(t.device() == x.device()))
    throw Error(str(op, ": ", name, " is on ", t.device().str(), " but x is on ", x.device().str()));
}

// running = decay running + (1 - decay) weight batch, in place.
void update_running(Tensor running, const Tensor& batch, double weight, double decay) {
  ops::scale_(running, decay);
  ops::axpy_(running, (1 - decay) * weight, as_dtype(batch, running.dtype()));
}

class BatchNormalizationNode : public FunctionNode {
 public:
  // COUNT is the number of values per channel over the whole batch (every process).
  BatchNormalizationNode(Tensor x_hat, Tensor gamma, Tensor inv_std, double count, SumOverProcesses sum_over_processes)
      : x_hat_(std::move(x_hat)), gamma_(std::move(gamma)), inv_std_(std::move(inv_std)), count_(count),
        sum_over_processes_(std::move(sum_over_processes)) {}
  std::string name() const override { return "BatchNormalization"; }

  std::vector<Tensor> backward(const std::vector<Tensor>& grads) override {
    const Tensor& gy = grads[0];
    const int64_t nd = x_hat_.ndim(), C = gamma_.numel();
    const DType dtype = x_hat_.dtype();
    const std::vector<int64_t> axes = statistic_axes(nd);
    // [sum gy, sum gy x_hat] per channel over this process's batch.
    const Tensor gy64 = as_dtype(gy, kF64);
    const Tensor sums =
        ops::concat({channel_sums(gy64, axes), channel_sums(ops::mul(gy64, as_dtype(x_hat_, kF64)), axes)}, 0);
    std::vector<Tensor> g(3);
    if (input_requires_grad(0)) {
      const Tensor total = sum_over_processes_
                               ? sum_over(sum_over_processes_, sums, "batch_normalization (backward)").to(gy.device())
                               : sums;
      const Tensor mean_gy = as_dtype(ops::mul_scalar(total.narrow(0, 0, C), 1 / count_), dtype);
      const Tensor mean_gy_x_hat = as_dtype(ops::mul_scalar(total.narrow(0, C, C), 1 / count_), dtype);
      // gx = gamma inv_std (gy - mean(gy) - x_hat mean(gy x_hat)), the means over the whole batch:
      // x reaches the loss through y and through the batch mean and variance.
      const Tensor centered =
          ops::sub(ops::sub(gy, per_channel(mean_gy, nd)), ops::mul(x_hat_, per_channel(mean_gy_x_hat, nd)));
      g[0] = ops::mul(centered, per_channel(ops::mul(gamma_, inv_std_), nd));
    }
    // This process's own sums (see the header); astype copies, so the two never share storage.
    if (input_requires_grad(1)) g[1] = sums.narrow(0, C, C).astype(dtype);
    if (input_requires_grad(2)) g[2] = sums.narrow(0, 0, C).astype(dtype);
    return g;
  }

 protected:
  void release_saved() override {
    x_hat_ = gamma_ = inv_std_ = Tensor();
    sum_over_processes_ = nullptr;  // may hold a communicator
  }

 private:
  Tensor x_hat_, gamma_, inv_std_;
  double count_;
  SumOverProcesses sum_over_processes_;
};

class FixedBatchNormalizationNode : public FunctionNode {
 public:
  FixedBatchNormalizationNode(Tensor x_hat, Tensor gamma, Tensor inv_std)
      : x_hat_(std::move(x_hat)), gamma_(std::move(gamma)), inv_std_(std::move(inv_std)) {}
  std::string name() const override { return "FixedBatchNormalization"; }

  // Inputs x, gamma, beta, mean, var.
  std::vector<Tensor> backward(const std::vector<Tensor>& grads) override {
    const Tensor& gy = grads[0];
    const int64_t nd = x_hat_.ndim();
    const DType dtype = x_hat_.dtype();
    const std::vector<int64_t> axes = statistic_axes(nd);
    const Tensor scale = ops::mul(gamma_, inv_std_);  // dy/dx, per channel
    Tensor sum_gy, sum_gy_x_hat;
    if (input_requires_grad(2) || input_requires_grad(3)) sum_gy = as_dtype(channel_sums(gy, axes), dtype);
    if (input_requires_grad(1) || input_requires_grad(4))
      sum_gy_x_hat = as_dtype(channel_sums(ops::mul(as_dtype(gy, kF64), as_dtype(x_hat_, kF64)), axes), dtype);
    std::vector<Tensor> g(5);
    if (input_requires_grad(0)) g[0] = ops::mul(gy, per_channel(scale, nd));
    if (input_requires_grad(1)) g[1] = sum_gy_x_hat;
    if (input_requires_grad(2)) g[2] = sum_gy;
    if (input_requires_grad(3)) g[3] = ops::neg(ops::mul(scale, sum_gy));
    // dy/dvar = -gamma (x - mean) (var + eps)^(-3/2) / 2 = -gamma inv_std^2 x_hat / 2.
    if (input_requires_grad(4))
      g[4] = ops::mul_scalar(ops::mul(ops::mul(gamma_, ops::square(inv_std_)), sum_gy_x_hat), -0.5);
    return g;
  }

 protected:
  void release_saved() override { x_hat_ = gamma_ = inv_std_ = Tensor(); }

 private:
  Tensor x_hat_, gamma_, inv_std_;
};
}  // namespace

Variable batch_normalization(const Variable& x, const Variable& gamma, const Variable& beta,
                             const BatchNormalizationOptions& options) {
  const char* op = "batch_normalization";
  check_x(op, x);
  const Tensor& xd = x.data();
  check_per_channel(op, "gamma", gamma, xd);
  check_per_channel(op, "beta", beta, xd);
  check_running(op, "running_mean", options.running_mean, xd);
  check_running(op, "running_var", options.running_var, xd);
  const int64_t nd = xd.ndim(), C = xd.size(1);
  const DType dtype = xd.dtype();
  const Device device = xd.device();
  const std::vector<int64_t> axes = statistic_axes(nd);

  // [sum x, sum x^2, count] per channel: one message to the other processes.
  double count = C ? double(xd.numel() / C) : 0.0;
  const Tensor x64 = as_dtype(xd, kF64);
  Tensor stats = ops::concat(
      {channel_sums(x64, axes), channel_sums(ops::square(x64), axes), Tensor::full({1}, count, kF64, device)}, 0);
  if (options.sum_over_processes) {
    const Tensor total = sum_over(options.sum_over_processes, stats, op);
    count = total.narrow(0, 2 * C, 1).item_double();  // a host read, free where the sum arrives on the host
    stats = total.to(device);
  }
  if (!(count > 1))
    throw Error(str(op, ": the batch has ", count, " value", count == 1 ? "" : "s", " per channel (x has shape ",
                    shape_str(xd.shape()), options.sum_over_processes ? ", counted over all processes" : "",
                    "); training needs more than 1 to estimate a variance (Chainer's output would be all zeros)"));
  const Tensor mean64 = ops::mul_scalar(stats.narrow(0, 0, C), 1 / count);
  // The biased variance E[x^2] - E[x]^2, kept from going below 0 by rounding.
  const Tensor var64 = ops::relu(ops::sub(ops::mul_scalar(stats.narrow(0, C, C), 1 / count), ops::square(mean64)));
  const Tensor inv_std = as_dtype(inverse_std(var64, options.eps), dtype);
  Tensor x_hat = ops::mul(ops::sub(xd, per_channel(as_dtype(mean64, dtype), nd)), per_channel(inv_std, nd));
  Tensor y = ops::add(ops::mul(x_hat, per_channel(gamma.data(), nd)), per_channel(beta.data(), nd));

  if (options.running_mean.defined()) update_running(options.running_mean, mean64, 1.0, options.decay);
  // Chainer's unbiased estimate: m / (m - 1) times the biased variance.
  if (options.running_var.defined()) update_running(options.running_var, var64, count / (count - 1), options.decay);

  if (!needs_recording({x, gamma, beta})) return Variable(std::move(y));
  auto node = std::make_shared<BatchNormalizationNode>(std::move(x_hat), gamma.data(), inv_std, count,
                                                       options.sum_over_processes);
  return record(node, {x, gamma, beta}, {y})[0];
}

Variable fixed_batch_normalization(const Variable& x, const Variable& gamma, const Variable& beta,
                                   const Variable& mean, const Variable& var, double eps) {
  const char* op = "fixed_batch_normalization";
  check_x(op, x);
  const Tensor& xd = x.data();
  check_per_channel(op, "gamma", gamma, xd);
  check_per_channel(op, "beta", beta, xd);
  check_per_channel(op, "mean", mean, xd);
  check_per_channel(op, "var", var, xd);
  const int64_t nd = xd.ndim();
  const Tensor inv_std = as_dtype(inverse_std(as_dtype(var.data(), kF64), eps), xd.dtype());
  Tensor x_hat = ops::mul(ops::sub(xd, per_channel(mean.data(), nd)), per_channel(inv_std, nd));
  Tensor y = ops::add(ops::mul(x_hat, per_channel(gamma.data(), nd)), per_channel(beta.data(), nd));
  const std::vector<Variable> inputs{x, gamma, beta, mean, var};
  if (!needs_recording(inputs)) return Variable(std::move(y));
  auto node = std::make_shared<FixedBatchNormalizationNode>(std::move(x_hat), gamma.data(), inv_std);
  return record(node, inputs, {y})[0];
}

}  // namespace chainer::functions
