/// @file
/// Batch normalization, as chainer.functions.batch_normalization and fixed_batch_normalization:
/// `y = gamma (x - mean) / sqrt(var + eps) + beta`, per channel. x is (N, C) or (N, C, ...); the
/// channel is axis 1 and the statistics are taken over every other axis (Chainer's default
/// axis). gamma, beta (and the fixed mean, var) are (C,) of x's dtype.
///
/// batch_normalization uses the statistics of the batch (the biased variance) and, given running
/// statistics, updates them in place by Chainer's rule. Its backward is analytic: one node, whose
/// gradients for x, gamma and beta are built from core ops, so it runs wherever x lives.
///
/// Batches split over processes (chainermn's MultiNodeBatchNormalization) pass
/// sum_over_processes: the statistics become those of the whole batch, so every process's output
/// and input gradient equal what one process with the whole batch would compute. The gamma and
/// beta gradients stay this process's own sums: their sum over the processes is the whole
/// batch's gradient, so the multi-node optimizer's averaging yields the gradient of the mean of
/// the processes' losses, as for every other parameter.
#pragma once
#include <functional>

#include "autograd/variable.h"

namespace chainer::functions {

/// The elementwise sum of a small tensor over every process sharing the batch (the same shape
/// and dtype on each; the result may be on any device). Forward calls it once, on a float64
/// (2C + 1,) tensor [sum of x per channel, sum of `x^2` per channel, number of values per
/// channel]; backward calls it once, when x needs a gradient, on a float64 (2C,) tensor [sum of
/// gy, sum of `gy * x_hat`]. Every process must therefore run the same forward and backward calls.
/// The count travels with the sums, so processes may hold batches of different sizes (even none).
using SumOverProcesses = std::function<Tensor(const Tensor&)>;

/// The options of batch_normalization, as Chainer's keyword arguments.
struct BatchNormalizationOptions {
  double eps = 2e-5;  ///< Added to the variance before the square root.
  /// Chainer's running_mean and running_var: when defined, (C,) contiguous float tensors on x's
  /// device, updated in place as `r = decay r + (1 - decay) s`, where s is the batch mean, or the
  /// unbiased batch variance (the biased one times `m / (m - 1)`, m values per channel over the
  /// whole batch, every process included).
  Tensor running_mean = {};
  Tensor running_var = {};  ///< The running variance, updated as running_mean is.
  double decay = 0.9;       ///< The decay rate of the running statistics.
  /// Unset: the batch is this process's alone.
  SumOverProcesses sum_over_processes = {};
};

/// Normalizes with the batch's statistics; at least 2 values per channel over the whole batch
/// (a variance needs them; Chainer warns that its output would be all zeros).
Variable batch_normalization(const Variable& x, const Variable& gamma, const Variable& beta,
                             const BatchNormalizationOptions& options = {});

/// Normalizes with the given MEAN and VAR ((C,), such as the running statistics at test time);
/// differentiable in all five inputs.
Variable fixed_batch_normalization(const Variable& x, const Variable& gamma, const Variable& beta,
                                   const Variable& mean, const Variable& var, double eps = 2e-5);

}  // namespace chainer::functions
