/// @file
/// Batch normalization, as chainer.functions.batch_normalization and fixed_batch_normalization:
/// `y = gamma (x - mean) / sqrt(var + eps) + beta`, per channel. AXIS, Chainer's, names the axes
/// the statistics are taken over; the other axes are the channels, and gamma, beta (and the
/// fixed mean, var) have their extents, in x's dtype. AXIS None (the default) is axis 0 and every
/// axis after gamma's: for a (C,) gamma, (N, C) is normalized over the batch and (N, C, H, W)
/// over the batch and both spatial axes; a (C, H, W) gamma normalizes (N, C, H, W) over axis 0.
///
/// batch_normalization uses the statistics of the batch (the biased variance) and, given running
/// statistics, updates them in place by Chainer's rule. Its backward is analytic: one node. Both
/// directions are two passes over x through the per-channel kernels (ops::channel_sums and
/// ops::channel_affine), which see x as (outer, channels, inner); channels that are not one
/// block of consecutive axes cost a transposed copy of x (and of the gradients) first.
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
#include "nn/functions/reduction.h"

namespace chainer::functions {

/// The elementwise sum of a small tensor over every process sharing the batch (the same shape
/// and dtype on each; the result may be on any device). With C the number of channels (the
/// elements of gamma), forward calls it once, on a float64 (2C + 1,) tensor [sum of x per
/// channel, sum of `x^2` per channel, number of values per channel]; backward calls it once,
/// when x needs a gradient, on a float64 (2C,) tensor [sum of gy, sum of `gy * x_hat`]. Every
/// process must therefore run the same forward and backward calls.
/// The count travels with the sums, so processes may hold batches of different sizes (even none).
using SumOverProcesses = std::function<Tensor(const Tensor&)>;

/// The options of batch_normalization, as Chainer's keyword arguments.
struct BatchNormalizationOptions {
  double eps = 2e-5;  ///< Added to the variance before the square root.
  /// Chainer's running_mean and running_var: when defined, contiguous float tensors of gamma's
  /// shape on x's
  /// device, updated in place as `r = decay r + (1 - decay) s`, where s is the batch mean, or the
  /// unbiased batch variance (the biased one times `m / (m - 1)`, m values per channel over the
  /// whole batch, every process included).
  Tensor running_mean = {};
  Tensor running_var = {};  ///< The running variance, updated as running_mean is.
  double decay = 0.9;       ///< The decay rate of the running statistics.
  /// Unset: the batch is this process's alone.
  SumOverProcesses sum_over_processes = {};
  /// The axes to normalize over (Chainer's axis): None for the default (see the file comment).
  Axes axis = {};
};

/// Normalizes with the batch's statistics; at least 2 values per channel over the whole batch
/// (a variance needs them; Chainer warns that its output would be all zeros).
Variable batch_normalization(const Variable& x, const Variable& gamma, const Variable& beta,
                             const BatchNormalizationOptions& options = {});

/// Normalizes with the given MEAN and VAR (gamma's shape, such as the running statistics at test
/// time) over AXIS (None: the default); differentiable in all five inputs.
Variable fixed_batch_normalization(const Variable& x, const Variable& gamma, const Variable& beta,
                                   const Variable& mean, const Variable& var, double eps = 2e-5,
                                   const Axes& axis = {});

}  // namespace chainer::functions
