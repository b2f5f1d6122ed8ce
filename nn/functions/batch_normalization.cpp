#include "nn/functions/batch_normalization.h"

#include <numeric>

#include "autograd/function_hook.h"
#include "autograd/function_node.h"
#include "core/ops/ops.h"
#include "nn/autocast.h"
#include "nn/functions/cast.h"

namespace chainer::functions {

namespace {
constexpr DType kF64 = DType::Float64;

Tensor as_dtype(const Tensor& t, DType dtype) { return t.dtype() == dtype ? t : t.astype(dtype); }

// The dtype of the per-channel values (gamma, beta, the statistics) for x of DTYPE: x's own, or
// float32 for half x, whose statistics half precision would not hold (a mean far from 0 rounded
// to bfloat16 would move every centred value by 2^-9 of it).
DType coefficient_dtype(DType dtype) { return is_half(dtype) ? DType::Float32 : dtype; }

// How x is seen by the per-channel kernels: (outer, channels, inner) over its own layout when the
// channel axes are consecutive, else over a copy transposed to (reduced axes..., channel axes...).
struct ChannelLayout {
  ChannelView view;
  std::vector<int64_t> perm;  // x's axes in the order of the copy; empty: no copy
  Shape key_shape;            // the channel axes' extents: gamma's shape
  std::string axes;           // the reduced axes, as Python writes them, for messages
};

ChannelLayout channel_layout(const char* op, const Shape& x_shape, int64_t gamma_ndim, const Axes& axis) {
  const int64_t nd = int64_t(x_shape.size());
  std::vector<int64_t> reduced;
  if (axis.all()) {  // Chainer's default: axis 0 and every axis after gamma's
    reduced.push_back(0);
    for (int64_t d = gamma_ndim + 1; d < nd; ++d) reduced.push_back(d);
  } else {
    reduced = axis.resolve(nd, op);
  }
  std::vector<bool> is_reduced(size_t(nd), false);
  for (int64_t d : reduced) is_reduced[size_t(d)] = true;
  ChannelLayout l;
  std::vector<int64_t> key;
  for (int64_t d = 0; d < nd; ++d)
    if (!is_reduced[size_t(d)]) key.push_back(d), l.key_shape.push_back(x_shape[size_t(d)]);
  l.axes = Axes(reduced).str();
  const auto extent = [&](int64_t from, int64_t to) {
    int64_t n = 1;
    for (int64_t d = from; d < to; ++d) n *= x_shape[size_t(d)];
    return n;
  };
  if (key.empty()) {
    l.view = {extent(0, nd), 1, 1};
  } else if (key.back() - key.front() + 1 == int64_t(key.size())) {
    l.view = {extent(0, key.front()), extent(key.front(), key.back() + 1), extent(key.back() + 1, nd)};
  } else {
    l.perm = reduced;
    l.perm.insert(l.perm.end(), key.begin(), key.end());
    l.view = {shape_numel(x_shape) / shape_numel(l.key_shape), shape_numel(l.key_shape), 1};
  }
  return l;
}

// T (x's shape) as the kernels see it: contiguous, transposed when the layout says so.
Tensor to_view(const Tensor& t, const ChannelLayout& l) {
  return l.perm.empty() ? t.contiguous() : t.transpose(l.perm).contiguous();
}
// A result over the view back to x's SHAPE and layout.
Tensor from_view(const Tensor& t, const ChannelLayout& l, const Shape& shape) {
  if (l.perm.empty()) return t.reshape(shape);
  Shape permuted;
  for (int64_t d : l.perm) permuted.push_back(shape[size_t(d)]);
  std::vector<int64_t> inverse(l.perm.size());
  for (size_t i = 0; i < l.perm.size(); ++i) inverse[size_t(l.perm[i])] = int64_t(i);
  return t.reshape(permuted).transpose(inverse).contiguous();
}

// (C,) in float64.
Tensor flat64(const Tensor& t) { return as_dtype(t.reshape({t.numel()}), kF64); }

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

void check_x(const char* op, const Variable& x, const Variable& gamma, const Axes& axis) {
  if (!x.defined()) throw Error(str(op, ": x must be defined"));
  const Tensor& xd = x.data();
  if (!is_floating(xd.dtype()))
    throw Error(str(op, ": x has dtype ", dtype_name(xd.dtype()), "; expected float32, float64, float16 or bfloat16"));
  if (!gamma.defined()) throw Error(str(op, ": gamma must be defined"));
  if (axis.all() && xd.ndim() < gamma.ndim() + 1)
    throw Error(str(op, ": x has shape ", shape_str(xd.shape()), "; expected (N, C) or (N, C, ...), a batch axis and ",
                    "the channels (gamma's shape ", shape_str(gamma.shape()), ") from axis 1"));
}

// One value per channel: the channel axes' extents.
void check_channel_shape(const char* op, const char* name, const Tensor& t, const Tensor& x, const ChannelLayout& l) {
  if (t.shape() != l.key_shape)
    throw Error(str(op, ": ", name, " has shape ", shape_str(t.shape()), " but x of shape ", shape_str(x.shape()),
                    " normalized over axis ", l.axes, " has channels of shape ", shape_str(l.key_shape), "; expected ",
                    shape_str(l.key_shape)));
}

// An input such as gamma: one value per channel, of x's dtype (float32 for half x).
void check_per_channel(const char* op, const char* name, const Variable& v, const Tensor& x, const ChannelLayout& l) {
  if (!v.defined()) throw Error(str(op, ": ", name, " must be defined"));
  const Tensor& t = v.data();
  check_channel_shape(op, name, t, x, l);
  if (t.dtype() != coefficient_dtype(x.dtype()))
    throw Error(str(op, ": ", name, " has dtype ", dtype_name(t.dtype()), " but x has dtype ", dtype_name(x.dtype()),
                    is_half(x.dtype()) ? " (expected float32 for half x)" : ""));
}

// A running statistic, updated in place: one value per channel, float, contiguous, on x's device.
void check_running(const char* op, const char* name, const Tensor& t, const Tensor& x, const ChannelLayout& l) {
  if (!t.defined()) return;
  check_channel_shape(op, name, t, x, l);
  if (t.dtype() != DType::Float32 && t.dtype() != kF64)
    throw Error(str(op, ": ", name, " has dtype ", dtype_name(t.dtype()), "; expected float32 or float64"));
  if (!t.is_contiguous()) throw Error(str(op, ": ", name, " is updated in place and must be contiguous"));
  if (!(t.device() == x.device()))
    throw Error(str(op, ": ", name, " is on ", t.device().str(), " but x is on ", x.device().str()));
}

// running = decay running + (1 - decay) weight batch, in place.
void update_running(Tensor running, const Tensor& batch, double weight, double decay) {
  ops::scale_(running, decay);
  ops::axpy_(running, (1 - decay) * weight, as_dtype(batch, running.dtype()).reshape(running.shape()));
}

class BatchNormalizationNode : public FunctionNode {
 public:
  // X: the input as the kernels see it; MEAN (coefficient_dtype), INV_STD (float64): (C,). COUNT is the
  // number of values per channel over the whole batch (every process).
  BatchNormalizationNode(Tensor x, ChannelLayout layout, Shape x_shape, Tensor gamma, Tensor mean, Tensor inv_std,
                         double count, SumOverProcesses sum_over_processes)
      : x_(std::move(x)), layout_(std::move(layout)), x_shape_(std::move(x_shape)), gamma_(std::move(gamma)),
        mean_(std::move(mean)), inv_std_(std::move(inv_std)), count_(count),
        sum_over_processes_(std::move(sum_over_processes)) {}
  std::string name() const override { return "BatchNormalization"; }

  std::vector<Tensor> backward(const std::vector<Tensor>& grads) override {
    const int64_t C = layout_.view.channels;
    const DType dtype = coefficient_dtype(x_.dtype());
    const Tensor gy = to_view(grads[0], layout_);
    // [sum gy, sum gy (x - mean)] per channel over this process's batch, then [sum gy, sum gy x_hat].
    const Tensor raw = ops::channel_sums(gy, x_, mean_, layout_.view);
    const Tensor sums = ops::concat({raw.narrow(0, 0, C), ops::mul(raw.narrow(0, C, C), inv_std_)}, 0);
    std::vector<Tensor> g(3);
    if (input_requires_grad(0)) {
      const Tensor total = sum_over_processes_
                               ? sum_over(sum_over_processes_, sums, "batch_normalization (backward)").to(gy.device())
                               : sums;
      const Tensor mean_gy = ops::mul_scalar(total.narrow(0, 0, C), 1 / count_);
      const Tensor mean_gy_x_hat = ops::mul_scalar(total.narrow(0, C, C), 1 / count_);
      // gx = gamma inv_std (gy - mean(gy) - x_hat mean(gy x_hat)), the means over the whole batch
      // (x reaches the loss through y and through the batch mean and variance), as one pass:
      // s gy + t (x - mean) + d.
      const Tensor scale = ops::mul(flat64(gamma_), inv_std_);
      ChannelAffine args{.u = gy,
                         .s = as_dtype(scale, dtype),
                         .v = x_,
                         .t = as_dtype(ops::neg(ops::mul(ops::mul(scale, inv_std_), mean_gy_x_hat)), dtype),
                         .m = mean_,
                         .d = as_dtype(ops::neg(ops::mul(scale, mean_gy)), dtype)};
      g[0] = from_view(ops::channel_affine(args, layout_.view), layout_, x_shape_);
    }
    // This process's own sums (see the header); astype copies, so the two never share storage.
    if (input_requires_grad(1)) g[1] = sums.narrow(0, C, C).astype(dtype).reshape(gamma_.shape());
    if (input_requires_grad(2)) g[2] = sums.narrow(0, 0, C).astype(dtype).reshape(gamma_.shape());
    return g;
  }

 protected:
  void release_saved() override {
    x_ = gamma_ = mean_ = inv_std_ = Tensor();
    sum_over_processes_ = nullptr;  // may hold a communicator
  }

 private:
  Tensor x_;
  ChannelLayout layout_;
  Shape x_shape_;
  Tensor gamma_, mean_, inv_std_;
  double count_;
  SumOverProcesses sum_over_processes_;
};

class FixedBatchNormalizationNode : public FunctionNode {
 public:
  // X: the input as the kernels see it; GAMMA and MEAN as given, INV_STD float64 (C,).
  FixedBatchNormalizationNode(Tensor x, ChannelLayout layout, Shape x_shape, Tensor gamma, Tensor mean, Tensor inv_std)
      : x_(std::move(x)), layout_(std::move(layout)), x_shape_(std::move(x_shape)), gamma_(std::move(gamma)),
        mean_(std::move(mean)), inv_std_(std::move(inv_std)) {}
  std::string name() const override { return "FixedBatchNormalization"; }

  // Inputs x, gamma, beta, mean, var.
  std::vector<Tensor> backward(const std::vector<Tensor>& grads) override {
    const int64_t C = layout_.view.channels;
    const DType dtype = x_.dtype();
    const Shape& shape = gamma_.shape();
    const Tensor gy = to_view(grads[0], layout_);
    const Tensor scale = ops::mul(flat64(gamma_), inv_std_);  // dy/dx, per channel
    std::vector<Tensor> g(5);
    if (input_requires_grad(0)) {
      const Tensor zero = Tensor::zeros({C}, dtype, gy.device());
      g[0] = from_view(ops::channel_affine({.u = gy, .s = as_dtype(scale, dtype), .d = zero}, layout_.view), layout_,
                       x_shape_);
    }
    if (input_requires_grad(1) || input_requires_grad(2) || input_requires_grad(3) || input_requires_grad(4)) {
      const Tensor raw = ops::channel_sums(gy, x_, mean_.reshape({C}), layout_.view);
      const Tensor sum_gy = raw.narrow(0, 0, C), sum_gy_x_hat = ops::mul(raw.narrow(0, C, C), inv_std_);
      const auto out = [&](const Tensor& t) { return as_dtype(t, dtype).reshape(shape); };
      if (input_requires_grad(1)) g[1] = out(sum_gy_x_hat);
      if (input_requires_grad(2)) g[2] = out(sum_gy);
      if (input_requires_grad(3)) g[3] = out(ops::neg(ops::mul(scale, sum_gy)));
      // dy/dvar = -gamma (x - mean) (var + eps)^(-3/2) / 2 = -gamma inv_std^2 x_hat / 2.
      if (input_requires_grad(4))
        g[4] = out(ops::mul_scalar(ops::mul(ops::mul(scale, inv_std_), sum_gy_x_hat), -0.5));
    }
    return g;
  }

 protected:
  void release_saved() override { x_ = gamma_ = mean_ = inv_std_ = Tensor(); }

 private:
  Tensor x_;
  ChannelLayout layout_;
  Shape x_shape_;
  Tensor gamma_, mean_, inv_std_;
};
}  // namespace

namespace {
// The normalizations compute in float32 or float64; the public functions below widen half.
Variable batch_normalization_full(const Variable& x, const Variable& gamma, const Variable& beta,
                                  const BatchNormalizationOptions& options) {
  ForwardHooks hooks("BatchNormalization", x, gamma, beta);
  const char* op = "batch_normalization";
  check_x(op, x, gamma, options.axis);
  const Tensor& xd = x.data();
  const ChannelLayout layout = channel_layout(op, xd.shape(), gamma.ndim(), options.axis);
  check_per_channel(op, "gamma", gamma, xd, layout);
  check_per_channel(op, "beta", beta, xd, layout);
  check_running(op, "running_mean", options.running_mean, xd, layout);
  check_running(op, "running_var", options.running_var, xd, layout);
  const int64_t C = layout.view.channels;
  const DType dtype = coefficient_dtype(xd.dtype());  // the statistics' and the coefficients'
  const Device device = xd.device();
  const Tensor xv = to_view(xd, layout);

  // [sum x, sum x^2] per channel (float64: the variance E[x^2] - E[x]^2 from such sums costs
  // ~1e-16 (mean / std)^2 of it, so float32 input keeps its precision, and sums from several
  // processes add up to what one process gets); with the count, one message to the others.
  double count = C ? double(xd.numel() / C) : 0.0;
  Tensor stats = ops::channel_sums(xv, Tensor(), Tensor(), layout.view);
  if (options.sum_over_processes) {
    const Tensor local = ops::concat({stats, Tensor::full({1}, count, kF64, device)}, 0);
    const Tensor total = sum_over(options.sum_over_processes, local, op);
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
  const Tensor inv_std = inverse_std(var64, options.eps);
  const Tensor mean = as_dtype(mean64, dtype);
  const Tensor y = from_view(
      ops::channel_affine({.v = xv,
                           .t = as_dtype(ops::mul(flat64(gamma.data()), inv_std), dtype),
                           .m = mean,
                           .d = beta.data().reshape({C}).contiguous()},
                          layout.view),
      layout, xd.shape());

  if (options.running_mean.defined()) update_running(options.running_mean, mean64, 1.0, options.decay);
  // Chainer's unbiased estimate: m / (m - 1) times the biased variance.
  if (options.running_var.defined()) update_running(options.running_var, var64, count / (count - 1), options.decay);

  if (!needs_recording({x, gamma, beta})) return Variable(y);
  auto node = std::make_shared<BatchNormalizationNode>(xv, layout, xd.shape(), gamma.data(), mean, inv_std, count,
                                                       options.sum_over_processes);
  return record(node, {x, gamma, beta}, {y})[0];
}

Variable fixed_batch_normalization_full(const Variable& x, const Variable& gamma, const Variable& beta,
                                        const Variable& mean, const Variable& var, double eps, const Axes& axis) {
  ForwardHooks hooks("FixedBatchNormalization", x, gamma, beta, mean, var);
  const char* op = "fixed_batch_normalization";
  check_x(op, x, gamma, axis);
  const Tensor& xd = x.data();
  const ChannelLayout layout = channel_layout(op, xd.shape(), gamma.ndim(), axis);
  check_per_channel(op, "gamma", gamma, xd, layout);
  check_per_channel(op, "beta", beta, xd, layout);
  check_per_channel(op, "mean", mean, xd, layout);
  check_per_channel(op, "var", var, xd, layout);
  const int64_t C = layout.view.channels;
  const DType dtype = xd.dtype();
  const Tensor xv = to_view(xd, layout);
  const Tensor inv_std = inverse_std(flat64(var.data()), eps);
  const Tensor m = mean.data().reshape({C}).contiguous();
  const Tensor y = from_view(ops::channel_affine({.v = xv,
                                                  .t = as_dtype(ops::mul(flat64(gamma.data()), inv_std), dtype),
                                                  .m = m,
                                                  .d = beta.data().reshape({C}).contiguous()},
                                                 layout.view),
                             layout, xd.shape());
  const std::vector<Variable> inputs{x, gamma, beta, mean, var};
  if (!needs_recording(inputs)) return Variable(y);
  auto node = std::make_shared<FixedBatchNormalizationNode>(xv, layout, xd.shape(), gamma.data(), m, inv_std);
  return record(node, inputs, {y})[0];
}

}  // namespace

// Mixed precision (nn/autocast.h): half x is normalized as it is, read and written in half, with
// the statistics, gamma and beta in float32 (half gamma and beta widened), so a mixed model's
// activations and what backward keeps of them stay in half; fixed_batch_normalization (no
// statistics to gather, nothing kept) widens x and casts the result back.
Variable batch_normalization(const Variable& x, const Variable& gamma, const Variable& beta,
                             const BatchNormalizationOptions& options) {
  return batch_normalization_full(x, autocast::for_float32(gamma), autocast::for_float32(beta), options);
}

Variable fixed_batch_normalization(const Variable& x, const Variable& gamma, const Variable& beta,
                                   const Variable& mean, const Variable& var, double eps, const Axes& axis) {
  using autocast::for_float32;
  const Variable y = fixed_batch_normalization_full(for_float32(x), for_float32(gamma), for_float32(beta),
                                                    for_float32(mean), for_float32(var), eps, axis);
  return x.defined() && is_half(x.dtype()) ? cast(y, x.dtype()) : y;
}

}  // namespace chainer::functions
