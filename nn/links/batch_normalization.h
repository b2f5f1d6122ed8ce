/// @file
/// BatchNormalization link, as chainer.links.BatchNormalization: normalizes x (N, C) or
/// (N, C, ...) per channel (axis 1; per element of a tuple size, or over Chainer's axis option:
/// see functions::batch_normalization) and scales by gamma, shifts by beta. In training
/// (chainer::config::train()) it uses the batch's statistics (functions::batch_normalization)
/// and updates the running averages avg_mean and avg_var; otherwise it uses the averages
/// (functions::fixed_batch_normalization). Parameters gamma (initial_gamma) and beta
/// (initial_beta); persistents avg_mean (zeros), avg_var (ones) and N, the count of fine-tuning
/// steps, all saved by serialize under Chainer's names. chainermn's MultiNodeBatchNormalization
/// is this link with the batch statistics summed over the processes (the protected constructor).
#pragma once
#include "core/tensor/dtype.h"
#include "nn/functions/batch_normalization.h"
#include "nn/link.h"

namespace chainer::links {

/// Chainer's keyword arguments of L.BatchNormalization.
struct BatchNormalizationLinkOptions {
  double decay = 0.9;            ///< Of the running averages.
  double eps = 2e-5;             ///< Added to the variance before the square root.
  DType dtype = DType::Float32;  ///< Of the parameters and persistents, and the input.
  bool use_gamma = true;         ///< False: gamma is 1 and not a parameter.
  bool use_beta = true;          ///< False: beta is 0 and not a parameter.
  double initial_gamma = 1.0;    ///< The initial value of every element of gamma.
  double initial_beta = 0.0;     ///< The initial value of every element of beta.
  /// The axes to normalize over (Chainer's axis); None: axis 0 and the axes after the channels.
  /// The parameters' shape (the size) must be x's extents on the other axes.
  functions::Axes axis = {};
};

/// Batch normalization with learned scale and shift and running statistics (Chainer's `L.BatchNormalization`).
class BatchNormalization : public Link {
 public:
  /// A link for SIZE channels, with the keyword arguments in OPTIONS.
  explicit BatchNormalization(int64_t size, BatchNormalizationLinkOptions options = {});
  /// A link whose parameters and averages have shape SIZE (Chainer's tuple size: (C, H, W)
  /// normalizes each element of the (N, C, H, W) input over the batch).
  explicit BatchNormalization(const Shape& size, BatchNormalizationLinkOptions options = {});

  /// Normalizes X without fine-tuning: forward(x, false).
  Variable forward(const Variable& x) override { return forward(x, false); }
  /// FINETUNE (in training only): the running averages become the plain average of the batch
  /// statistics since start_finetuning() (`decay = 1 - 1/N`), as Chainer's finetune=True.
  Variable forward(const Variable& x, bool finetune);
  /// Restarts the count N of fine-tuning steps.
  void start_finetuning() { N_ = 0; }

  /// The parameters and avg_mean, avg_var, then N.
  void serialize(Serializer& s) override;

  /// The number of channels: the elements of gamma.
  int64_t size() const { return shape_numel(shape_); }
  /// The shape of the parameters and averages (Chainer's size).
  const Shape& shape() const { return shape_; }
  /// The options it was constructed with.
  const BatchNormalizationLinkOptions& options() const { return options_; }
  /// The scale parameter, of shape(); null when use_gamma is false.
  Variable* gamma() { return options_.use_gamma ? &param("gamma") : nullptr; }
  /// The shift parameter, of shape(); null when use_beta is false.
  Variable* beta() { return options_.use_beta ? &param("beta") : nullptr; }
  /// The running average of the batch means (persistent "avg_mean").
  Tensor& avg_mean() { return persistent("avg_mean"); }
  /// The running average of the unbiased batch variances (persistent "avg_var").
  Tensor& avg_var() { return persistent("avg_var"); }
  /// The number of fine-tuning steps since start_finetuning().
  int64_t N() const { return N_; }
  /// From now on, the batch statistics and the input gradient's sums go through
  /// SUM_OVER_PROCESSES (null: this process's batch alone), as the protected constructor's:
  /// how chainermn::links::create_mnbn_model turns a model's links into multi-node ones in place.
  void set_sum_over_processes(functions::SumOverProcesses sum_over_processes) {
    sum_over_processes_ = std::move(sum_over_processes);
  }
  /// Whether the statistics are summed over processes (a MultiNodeBatchNormalization, or a link
  /// create_mnbn_model converted).
  bool sums_over_processes() const { return bool(sum_over_processes_); }

 protected:
  /// For links whose batch is spread over processes: the batch statistics and the input
  /// gradient's sums go through SUM_OVER_PROCESSES (see functions::SumOverProcesses).
  BatchNormalization(const Shape& size, BatchNormalizationLinkOptions options,
                     functions::SumOverProcesses sum_over_processes);

 private:
  Shape shape_;
  BatchNormalizationLinkOptions options_;
  functions::SumOverProcesses sum_over_processes_;
  int64_t N_ = 0;
};

}  // namespace chainer::links
