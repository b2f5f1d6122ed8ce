/// @file
/// Updaters run one training iteration. StandardUpdater, as Chainer's: takes the next batch
/// from the "main" iterator, converts it to arrays, moves them to the device, and lets the "main"
/// optimizer update its target with the loss that target.forward_args(arrays) returns. On a GPU
/// the whole step is captured into a CUDA graph and replayed (training/cuda_graph_step.h).
/// With a converter (Chainer's `converter=`), the step takes the iterator's examples (next()),
/// the converter turns them into a dataset::ConvertedBatch on the device (lists of tensors of
/// any shapes for ragged data), and the loss function reads that; such steps run eagerly.
///
/// Gradient accumulation (UpdaterOptions::micro_batches = k): each batch the iterator gives is
/// split into k consecutive micro-batches (sizes as numpy.array_split's, empty ones skipped),
/// and forward and backward run on one micro-batch at a time; the gradients add up and the
/// optimizer steps once. Each micro-batch's loss is scaled by its share of the batch (n_i / n,
/// 1/k for equal ones) before backward, so with a loss that is a mean over its examples (as
/// Chainer's losses are) the update is that of the whole batch at once, to float rounding;
/// what the model reports (the loss, the accuracy) is reported once, as the same weighted mean
/// of the micro-batches' values. Splitting the batch rather than taking k batches keeps the
/// iterator's batch_size the batch of one update, and one iteration one batch: epochs, triggers,
/// learning-rate schedules and snapshots count as without accumulation, and only the memory
/// that forward and backward hold shrinks (the batch's arrays are converted and moved whole;
/// with a converter, each micro-batch's examples are converted separately). Layers that look
/// at the whole batch (BatchNormalization's statistics) see micro-batches, as in any
/// accumulation. With a multi-node optimizer every backward but the last runs inside its
/// no_sync(), so the gradients are averaged over the processes once per update, while the last
/// backward runs. With k = 1 (the default) the step is the plain one, unchanged.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "datasets/converter.h"
#include "datasets/iterators/iterator.h"
#include "nn/optimizer.h"
#include "training/cuda_graph_step.h"

namespace chainer::training {

/// Runs one training iteration per update(), as `chainer.training.Updater`.
class Updater {
 public:
  virtual ~Updater() = default;
  virtual void update() = 0;  ///< Runs one iteration and advances iteration().
  virtual int64_t iteration() const = 0;  ///< Iterations run so far.
  virtual int64_t epoch() const = 0;  ///< The main iterator's epoch count.
  virtual double epoch_detail() const = 0;  ///< The main iterator's epoch_detail (epochs as a fraction).
  virtual bool is_new_epoch() const = 0;  ///< Whether the last iteration ended an epoch of the main iterator.
  /// The optimizer registered under NAME ("main" for the only one); throws chainer::Error when there is none.
  virtual Optimizer& get_optimizer(const std::string& name) = 0;
  virtual std::map<std::string, Optimizer*> get_all_optimizers() = 0;  ///< Every optimizer, by name.
  /// The iterator registered under NAME ("main" for the only one); throws chainer::Error when there is none.
  virtual iterators::Iterator& get_iterator(const std::string& name) = 0;
  /// Saves or restores the iteration count and the iterators', optimizers' and models' states.
  virtual void serialize(Serializer& s) = 0;
  virtual void finalize() {}  ///< Called once when training ends, to release resources such as iterator threads.
};

/// StandardUpdater's options: the device batches go to, and whether steps use CUDA graphs.
struct UpdaterOptions {
  /// Where each batch goes (Chainer's device=); unset: the device of the main optimizer's target.
  std::optional<Device> device;
  /// On a CUDA device, capture the whole step into a CUDA graph and replay it (the default:
  /// docs/performance.md has the figures); false runs every step eagerly.
  bool cuda_graph = true;
  /// Gradient accumulation: each batch is split into this many micro-batches, which run forward
  /// and backward one after another before a single update (see above); at least 1. A captured
  /// CUDA graph holds the whole accumulated step.
  int micro_batches = 1;
};

/// Chainer's StandardUpdater: one batch of the "main" iterator, one update of the "main" optimizer.
class StandardUpdater : public Updater {
 public:
  /// Computes the loss from the batch's arrays; unset, the main optimizer's target's forward_args does.
  using LossFunction = std::function<Variable(const std::vector<Variable>& arrays)>;
  /// Computes the loss from a converter's output (the converter path).
  using ConvertedLossFunction = std::function<Variable(const dataset::ConvertedBatch& batch)>;
  /// An updater with a single iterator and optimizer, both registered as "main".
  StandardUpdater(std::shared_ptr<iterators::Iterator> iterator, std::shared_ptr<Optimizer> optimizer,
                  LossFunction loss_func = {}, UpdaterOptions options = {});
  /// An updater whose steps convert the main iterator's examples with CONVERTER (called with the
  /// examples and device()) and take the loss LOSS_FUNC returns from its result; a null LOSS_FUNC
  /// calls the main optimizer's target's forward_args with the result's fields, which must then
  /// all be tensors. The steps run eagerly (a converter's shapes may change every step).
  StandardUpdater(std::shared_ptr<iterators::Iterator> iterator, std::shared_ptr<Optimizer> optimizer,
                  dataset::Converter converter, ConvertedLossFunction loss_func, UpdaterOptions options = {});
  /// An updater over named iterators and optimizers. The iterators need a "main" entry (it
  /// counts the epochs); the optimizers need one only for the default update_core and device():
  /// an updater that overrides update_core may name them as it likes ("gen", "dis").
  StandardUpdater(std::map<std::string, std::shared_ptr<iterators::Iterator>> iterators,
                  std::map<std::string, std::shared_ptr<Optimizer>> optimizers, LossFunction loss_func = {},
                  UpdaterOptions options = {});
  /// The same over named iterators and optimizers, on the converter path.
  StandardUpdater(std::map<std::string, std::shared_ptr<iterators::Iterator>> iterators,
                  std::map<std::string, std::shared_ptr<Optimizer>> optimizers, dataset::Converter converter,
                  ConvertedLossFunction loss_func, UpdaterOptions options = {});

  void update() override;
  int64_t iteration() const override { return iteration_; }
  int64_t epoch() const override;
  double epoch_detail() const override;
  bool is_new_epoch() const override;
  Optimizer& get_optimizer(const std::string& name) override;
  std::map<std::string, Optimizer*> get_all_optimizers() override;
  iterators::Iterator& get_iterator(const std::string& name) override;
  void serialize(Serializer& s) override;
  void finalize() override;
  /// The device batches go to this iteration: the options' device, else the "main" optimizer's
  /// target's (an error naming the registered optimizers when there is none).
  Device device() const;
  /// The CUDA graph runner of the steps, with its capture and replay counts.
  const CudaGraphStep& cuda_graph_step() const { return graph_step_; }
  /// The converter given at construction; null on the default path (stacked arrays).
  const dataset::Converter& converter() const { return converter_; }

 protected:
  /// One iteration's work, which update() runs before counting it: override to change the step.
  virtual void update_core();

 private:
  // The "main" optimizer; throws naming WHAT needs it and the optimizers registered.
  Optimizer& main_optimizer(const char* what) const;
  // One update of OPT over the micro-batches of a batch of N examples: LOSS_OF(i, start, count)
  // computes the loss of micro-batch i, examples [start, start + count).
  void accumulate(Optimizer& opt, int64_t n,
                  const std::function<Variable(size_t i, int64_t start, int64_t count)>& loss_of) const;
  std::map<std::string, std::shared_ptr<iterators::Iterator>> iterators_;
  std::map<std::string, std::shared_ptr<Optimizer>> optimizers_;
  LossFunction loss_func_;
  dataset::Converter converter_;
  ConvertedLossFunction converted_loss_func_;
  UpdaterOptions options_;
  CudaGraphStep graph_step_;
  int64_t iteration_ = 0;
};

}  // namespace chainer::training
