/// @file
/// The multi-node optimizer, as chainermn.create_multi_node_optimizer: wraps an ordinary
/// optimizer (the "actual" one) and behaves exactly like it (setup, both update forms, t(),
/// epoch(), new_epoch(), hooks, serialize, target()), except that the gradients are averaged
/// over every rank of the communicator before the actual optimizer steps.
///
/// As ChainerMN's _MultiNodeOptimizer.update: at the first update, and whenever the set of the
/// target's parameters changes (names, or shapes, which covers a lazily initialized Linear and a
/// link added later), that update only broadcasts the parameters from rank 0
/// (Communicator::bcast_data) and does NOT step: t() stays where it was (0 after the first
/// update). Otherwise it averages the gradients and lets the actual optimizer step; its hooks
/// (WeightDecay, GradientClipping) therefore see the averaged gradients.
///
/// Gradients are averaged in one of two ways (MultiNodeOptimizerOptions::reduction):
/// - Reduction::Bucketed (the default): a GradientReducer (distributed/reducer/gradient_reducer.h)
///   hooked on the parameters starts the sums of buckets of gradients while backward is still
///   running, as PyTorch's DDP does (through shared memory on one host, else by the
///   communicator's own algorithm); update() waits for them. This works with update(lossfun)
///   and with update() after the caller ran backward; gradients set by hand are reduced at
///   update time. MultiNodeOptimizerOptions::reducer sets its buckets and transport.
/// - Reduction::Communicator: Communicator::multi_node_mean_grad at update time, i.e. the
///   communicator's own scheme ("naive": one all-reduce per parameter, "flat": one packed
///   buffer), as ChainerMN.
/// With the "dummy" communicator (Communicator::averages_gradients() false) it is always its
/// multi_node_mean_grad, which averages nothing: every rank steps with its own gradients and,
/// after the first update's broadcast, keeps parameters of its own (never a shared update).
///
/// Gradient accumulation: backward passes before one update() add up in the gradients, and the
/// update averages that SUM over the ranks and steps once (as PyTorch's DDP and Horovod: summed
/// over the micro-batches on each rank, averaged over the ranks). With a loss that is a mean
/// over its micro-batch, dividing each of k losses by k makes the update that of one batch of
/// k times the examples (StandardUpdater's UpdaterOptions::micro_batches does exactly that).
/// To keep the bucketed reduction from starting buckets that a later pass would make stale,
/// say which pass is the last, in either of two ways:
/// - no_sync() (chainer::Optimizer::NoSync, as DDP's): passes run while the guard lives only
///   accumulate; the first pass after it starts the buckets during backward;
/// - MultiNodeOptimizerOptions::backward_passes_per_step = k (Horovod's): the buckets start
///   during the k-th pass after an update.
/// Then every update reduces once and nothing is thrown away (GradientReducer::Stats). Passes
/// nobody announced still give the same result, by reducing again at update() (Stats::restarts).
/// update() always reduces what the gradients hold, also inside no_sync() or before the k-th
/// pass. The communicator reduction and the dummy communicator reduce at update() anyway.
///
/// In debug mode (Communicator::debug()) both reductions run multi_node_mean_grad's checks: the
/// ranks compare their gradients before averaging and a non-finite mean throws afterwards.
/// Every rank must call update the same number of times with the same model structure.
///
/// When every rank runs on this host, the parameters are in host memory and the actual
/// optimizer's step is elementwise (Optimizer::elementwise(): SGD, MomentumSGD, Adam, AdaGrad,
/// RMSprop, AdaDelta, NesterovAG, RMSpropGraves, SMORMS3), the ranks keep one copy of the parameters and of the optimizer state in
/// shared memory and each steps a share of every parameter (distributed/optimizers/shared_update.h), instead
/// of every rank repeating the whole step; the results are the same bit for bit.
/// MultiNodeOptimizerOptions::shard_update or CHAINERMN_SHARD_UPDATE=0 turns this off. The
/// parameters go back to private memory when the optimizer is destroyed or set up again.
///
/// Double buffering (MultiNodeOptimizerOptions::double_buffering), as ChainerMN's
/// _DoubleBufferingOptimizer: each update starts averaging its own gradients and steps with the
/// means of the PREVIOUS update's gradients, so the averaging of step k runs behind the forward
/// and backward of step k+1. Exactly as ChainerMN: the first update (and the one after any
/// change of the parameters) only broadcasts them; the next only starts averaging its gradients
/// and does not step; from then on, update k steps with the mean of update k-1's gradients
/// (t() is two behind the number of updates; the broadcast update's gradients are never used).
/// The gradients the step (and its hooks) sees are those lagged means. It needs the bucketed
/// reduction (GradientReducer::finalize_lagged); it overlaps the averaging with computation
/// where the reducer's transport can (MPI_Iallreduce for naive and flat across hosts or with
/// CHAINERMN_SHARED_MEMORY=0, NCCL for pure_nccl), and elsewhere (shared memory on one host,
/// the composed communicators on the host) gives the same lagged result and gains nothing.
/// Its snapshots also hold the means still to be applied, under "double_buffering/<parameter
/// path>" (waiting for them first), so a resumed run steps with them at its first update and
/// continues exactly as an uninterrupted one. A snapshot without them (written without double
/// buffering) resumes with an update that only starts averaging.
///
/// Mixed precision (loss_scaling, use_fp32_update) is the actual optimizer's, configured through
/// either. The gradients are averaged while still scaled, then unscaled and checked by the actual
/// optimizer. With dynamic loss scaling, whether a step is skipped is agreed by one all-reduce of
/// a flag per update (MPI_MAX over the communicator's MPI communicator): the averaged gradients
/// are the same on every rank in value, but MPI does not promise bitwise identical sums on every
/// rank, and an inf must not let one replica step while another skips. Every rank therefore
/// skips the same steps and backs off alike, and the replicas never diverge. With a shared update
/// and loss scaling, every rank waits for the whole means before the steps (as with hooks),
/// since unscaling and checking read every share. Double buffering steps with the previous
/// update's means, which were scaled by the previous scale, so it takes a static scale only;
/// dynamic scaling with it throws chainer::Error.
///
/// serialize() delegates to the actual optimizer, so snapshots have the single-process layout
/// (with a shared update, every rank sees the whole state, so any rank's snapshot is complete).
/// state(name) is the actual optimizer's.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "distributed/communicators/communicator.h"
#include "distributed/reducer/gradient_reducer.h"
#include "distributed/optimizers/shared_update.h"
#include "nn/optimizer.h"

namespace chainermn {

/// How the multi-node optimizer averages the gradients (see above).
enum class Reduction {
  Bucketed,      ///< A GradientReducer: buckets summed while backward runs (the default).
  Communicator,  ///< Communicator::multi_node_mean_grad at update time, as ChainerMN.
};
/// "bucketed" or "communicator".
const char* reduction_name(Reduction reduction);
/// The reverse of reduction_name; any other NAME throws chainer::Error
/// `"<what> must be bucketed or communicator, got 'NAME'"` (WHAT: an app passes its flag).
Reduction parse_reduction(const std::string& name, const std::string& what = "reduction");

/// Options of the multi-node optimizer, as create_multi_node_optimizer's keyword arguments and more.
struct MultiNodeOptimizerOptions {
  /// Steps with the previous update's averaged gradients while this update's are averaged
  /// (see above). Throws chainer::Error with the communicator reduction or the dummy
  /// communicator (which averages nothing).
  bool double_buffering = false;
  Reduction reduction = Reduction::Bucketed;  ///< How the gradients are averaged.
  /// The bucketed reduction's plan and transport (bucket sizes, shared memory on one host).
  /// `reducer.zero_fill` also governs the communicator reduction: a parameter without a gradient
  /// counts as zeros (and receives the mean); without it such parameters are skipped, and every
  /// rank must agree on which are missing.
  GradientReducerOptions reducer;
  bool shard_update = true;  ///< On one host, one copy of parameters and state, each rank steps a share.
  /// Horovod's backward_passes_per_step: the bucketed reduction starts during the k-th backward
  /// pass after an update (gradient accumulation, see above); at least 1. It is the reducer's
  /// (`reducer.backward_passes_per_step` is set from it).
  int backward_passes_per_step = 1;
};

/// An optimizer that averages the gradients over every rank before its actual optimizer steps.
class MultiNodeOptimizer : public chainer::Optimizer {
 public:
  /// Collective over COMM with the bucketed reduction (the reducer duplicates the MPI
  /// communicator). If ACTUAL already has a target, this optimizer adopts it.
  MultiNodeOptimizer(std::shared_ptr<chainer::Optimizer> actual, std::shared_ptr<Communicator> comm,
                     MultiNodeOptimizerOptions options = {});
  /// Gives the parameters and the actual optimizer's state back to private memory.
  ~MultiNodeOptimizer() override;

  /// Sets up the actual optimizer and this one on TARGET; the next update broadcasts the parameters.
  void setup(std::shared_ptr<chainer::Link> target) override;
  using chainer::Optimizer::update;  // update(lossfun): forward, cleargrads, backward, update()
  /// Averages the gradients and lets the actual optimizer step, or, at the first update and
  /// after a change of the parameters, only broadcasts them from rank 0 (see above).
  void update() override;

  int64_t t() const override { return actual_->t(); }  ///< The actual optimizer's.
  int64_t epoch() const override { return actual_->epoch(); }  ///< The actual optimizer's.
  void new_epoch() override { actual_->new_epoch(); }  ///< Advances the actual optimizer's epoch.
  /// Adds HOOK to the actual optimizer, so it sees the averaged gradients.
  void add_hook(std::shared_ptr<chainer::OptimizerHook> hook) override { actual_->add_hook(std::move(hook)); }
  bool has_hooks() const override { return actual_->has_hooks(); }  ///< Whether the actual optimizer has hooks.
  /// The actual optimizer's hyperparameter names.
  std::vector<std::string> hyperparam_names() const override { return actual_->hyperparam_names(); }
  /// The actual optimizer's hyperparameter NAME (observe_lr's "lr").
  double hyperparam(const std::string& name) const override { return actual_->hyperparam(name); }
  /// Sets the actual optimizer's hyperparameter NAME (what ExponentialShift and LinearShift do).
  void set_hyperparam(const std::string& name, double value) override { actual_->set_hyperparam(name, value); }
  /// The actual optimizer's state of parameter NAME.
  const chainer::TensorMap& state(const std::string& name) const override { return actual_->state(name); }
  /// Configures the actual optimizer's loss scaling (see above).
  void loss_scaling(int64_t interval = 1000, std::optional<double> scale = std::nullopt) override;
  /// Configures the actual optimizer's dynamic loss scaling (see above).
  void loss_scaling(const chainer::LossScalingOptions& options) override;
  /// The actual optimizer's loss scaling.
  const std::optional<chainer::LossScaler>& loss_scaler() const override { return actual_->loss_scaler(); }
  bool last_update_skipped() const override { return actual_->last_update_skipped(); }  ///< The actual optimizer's.
  int64_t skipped_updates() const override { return actual_->skipped_updates(); }  ///< The actual optimizer's.
  void use_fp32_update(bool flag = true) override { actual_->use_fp32_update(flag); }  ///< The actual optimizer's.
  bool fp32_update() const override { return actual_->fp32_update(); }  ///< The actual optimizer's.
  /// The actual optimizer's float32 master copy of NAME.
  chainer::Tensor fp32_param(const std::string& name) const override { return actual_->fp32_param(name); }
  /// Delegates, so snapshots look like the single-process ones (with double buffering, plus the
  /// means still to be applied). Restoring one marks the
  /// parameters as consistent across ranks (every rank loads its snapshot of the same
  /// iteration), so the next update steps instead of spending itself on a broadcast and a
  /// resumed run continues exactly as an uninterrupted one.
  void serialize(chainer::Serializer& s) override;
  /// Collective: after a snapshot was loaded (serialize), plans the shared update over the
  /// restored parameters now instead of at the next update, so that they are bound into it before
  /// the next forward: a graph recorded then (a GAN's discriminator, backpropagated again after
  /// its step) sees the stepped values, as one process's and an uninterrupted run's do. Nothing
  /// when no snapshot was loaded since the last update (the next update broadcasts and plans then).
  /// apps::resume calls it after loading the snapshot.
  void plan_shared_update();
  /// False: its all-reduce runs on the host, between backward and the step, so a step cannot be captured.
  bool capturable() const override { return false; }

  chainer::Optimizer& actual_optimizer() const { return *actual_; }  ///< The wrapped optimizer.
  /// The wrapped optimizer, shared.
  const std::shared_ptr<chainer::Optimizer>& actual_optimizer_ptr() const { return actual_; }
  Communicator& communicator() const { return *comm_; }  ///< The communicator the gradients are averaged over.
  const MultiNodeOptimizerOptions& options() const { return options_; }  ///< The options it was made with.
  /// The bucketed reducer; null for the communicator reduction.
  const GradientReducer* reducer() const { return reducer_.get(); }
  /// How many updates only broadcast the parameters (the first one, and one per change).
  int64_t broadcast_count() const { return broadcasts_; }
  /// Whether the ranks share one copy of the parameters and state and each step a share of it.
  bool shares_update() const { return shared_ != nullptr; }

 protected:
  /// Tells the reducer whether backward passes start its buckets (no_sync()).
  void grad_sync_changed(bool sync) override {
    if (reducer_) reducer_->set_backward_sync(sync);
  }
  /// Never called: the actual optimizer does the steps (throws chainer::InternalError).
  void update_one(chainer::Variable& param, chainer::TensorMap& state) override;
  /// None: the state is the actual optimizer's.
  std::vector<std::string> state_names() const override { return {}; }

 private:
  using Signature = std::vector<std::pair<std::string, chainer::Shape>>;
  static Signature signature_of(const chainer::Link& link);
  // Plans the shared update over LINK when it applies (collective), after dropping the old plan.
  void share_update(chainer::Link& link);
  void unshare_update();
  // Throws when the actual optimizer's loss scaling cannot work with these options.
  void check_loss_scaling() const;

  std::shared_ptr<chainer::Optimizer> actual_;
  std::shared_ptr<Communicator> comm_;
  MultiNodeOptimizerOptions options_;
  std::unique_ptr<GradientReducer> reducer_;
  std::shared_ptr<SharedUpdate> shared_;
  bool share_planned_ = false;  // share_update ran for the current plan (shared_ may still be null)
  Signature signature_;
  bool needs_broadcast_ = true;
  bool restored_ = false;  // a snapshot was loaded since the last update
  // Double buffering: the means a loaded snapshot left to apply, installed at the next update.
  std::vector<std::pair<std::string, chainer::Tensor>> restored_lagged_;
  int64_t broadcasts_ = 0;
};

/// As chainermn.create_multi_node_optimizer(actual_optimizer, communicator, double_buffering,
/// zero_fill), with the bucketed reduction; ZERO_FILL is `MultiNodeOptimizerOptions::reducer.zero_fill`.
std::shared_ptr<chainer::Optimizer> create_multi_node_optimizer(std::shared_ptr<chainer::Optimizer> actual,
                                                                 std::shared_ptr<Communicator> comm,
                                                                 bool double_buffering = false, bool zero_fill = true);
/// The same with every option (the reduction, the bucket sizes).
std::shared_ptr<chainer::Optimizer> create_multi_node_optimizer(std::shared_ptr<chainer::Optimizer> actual,
                                                                 std::shared_ptr<Communicator> comm,
                                                                 const MultiNodeOptimizerOptions& options);

}  // namespace chainermn
