/// @file
/// Optimizer, as chainer.Optimizer: setup(link) binds the parameters; update() applies one step
/// to the current gradients (parameters without a gradient get zeros, as Chainer does), after
/// running the hooks (WeightDecay, GradientClipping). Per-parameter state ("m", "v", ...) and
/// step count ("t") are created lazily at a parameter's first update and saved in snapshots under
/// its name, as Chainer's update rules. A parameter tied under several names (nn/link.h) is
/// stepped once per update and keeps its state under its first name (Link::unique_namedparams).
///
/// Mixed precision, as Chainer's GradientMethod: with loss_scaling() on, update(lossfun)
/// backpropagates loss * loss_scale(), and update() first divides every gradient by the scale
/// (out of place: the parameters' gradients become new tensors), so the hooks and the step see
/// the true gradients, in the order PyTorch's GradScaler.unscale_ documents for clipping (Chainer
/// unscales in each update rule, after the hooks: its WeightDecay multiplies its rate by the
/// scale, its GradientClipping clips the scaled norm). With a dynamic scale, an update whose
/// gradients hold an inf or a NaN is skipped: no hook runs and neither the parameters, their
/// state nor their own step counts change; t() still counts it, as Chainer's (its update()
/// increments t before asking is_safe_to_update()). With use_fp32_update(), a float16 or bfloat16
/// parameter is stepped as a float32 master copy (made from it at its first update, kept in
/// snapshots as "<parameter>/fp32_param"), the gradient widened to float32, and the master is then
/// written back rounded; hooks see the master and the widened gradient, as Chainer's update-rule
/// hooks see its fp32_param.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/ops/op_types.h"
#include "nn/link.h"
#include "nn/loss_scaler.h"

namespace chainer {

class Optimizer;

/// Where parameters and optimizer state live, and which part of each parameter this process
/// steps. The multi-node optimizer installs one when every rank runs on one host
/// (distributed/optimizers/shared_update.h): the ranks then keep one copy of the parameters and the state
/// in shared memory and each steps a share of every parameter, instead of each repeating the
/// whole step. Only for optimizers whose step is elementwise (Optimizer::elementwise()).
class UpdatePartition {
 public:
  virtual ~UpdatePartition() = default;
  /// Before the steps of one update, after the hooks (HOOKS_RAN: the optimizer has hooks, which
  /// may have read any parameter).
  virtual void before_steps(bool hooks_ran) = 0;
  /// Before parameter NAME's step: moves PARAM's data and every state tensor named in KEYS where
  /// the partition keeps them (a missing state tensor starts as zeros of PARAM's shape; the
  /// optimizer creates those that start otherwise, Optimizer::initial_state_value) and returns
  /// the flat element range `[first, second)` that this process steps.
  virtual std::pair<int64_t, int64_t> prepare(const std::string& name, Variable& param, TensorMap& state,
                                              const std::vector<std::string>& keys) = 0;
  /// Whether T lives in memory this partition manages.
  virtual bool holds(const Tensor& t) const = 0;
};

/// Runs before every update, on the gradients (Chainer's 'pre' timing).
class OptimizerHook {
 public:
  virtual ~OptimizerHook() = default;
  /// The hook's name, unique among an optimizer's hooks ("WeightDecay").
  virtual std::string name() const = 0;
  /// Edits the gradients of OPTIMIZER's target before its step.
  virtual void operator()(Optimizer& optimizer) = 0;
};

/// Base of the optimizers (Chainer's `chainer.Optimizer`): steps a link's parameters.
class Optimizer {
 public:
  virtual ~Optimizer() = default;

  /// Binds the parameters of TARGET, starting afresh (no state, t() and epoch() 0).
  virtual void setup(std::shared_ptr<Link> target);
  /// The link set up by setup(); throws when there is none.
  Link& target() const;
  /// The link set up by setup(), or null.
  const std::shared_ptr<Link>& target_ptr() const { return target_; }

  /// One step on the gradients currently held by the parameters.
  virtual void update();
  /// Runs LOSSFUN, clears the target's grads, backpropagates the loss LOSSFUN returned, then steps
  /// (Chainer's update(lossfun), in its order). RETAIN_GRAPH true (the default, as Chainer, whose
  /// graphs are never freed by backward) keeps the graph's saved tensors, so that variables the
  /// caller still holds can be backpropagated again: a GAN's generator loss goes back through
  /// the discriminator's graph over the same fake images after the discriminator's update(lossfun).
  /// That second backward sees the parameters as the first update left them (they are stepped in
  /// place, as Chainer's). False frees each function's saved tensors as soon as backward has
  /// passed it, which lowers the peak memory of backward; StandardUpdater passes false.
  void update(const std::function<Variable()>& lossfun, bool retain_graph = true);
  /// The target of the optimizer whose update(lossfun) is backpropagating on this thread, else
  /// null. A gradient reducer hooked on another link's parameters (the multi-node optimizer's)
  /// lets that backward's gradients be: they are another loss's (a GAN's discriminator loss
  /// reaching the generator), which the generator's own update(lossfun) clears.
  static const Link* backpropagating_target();

  /// The number of updates so far.
  virtual int64_t t() const { return t_; }
  /// The number of epochs so far, as counted by new_epoch().
  virtual int64_t epoch() const { return epoch_; }
  /// Counts one more epoch (the updater calls it when its iterator starts a new one).
  virtual void new_epoch() { ++epoch_; }
  /// Adds HOOK, run before every update; hook names must be unique.
  virtual void add_hook(std::shared_ptr<OptimizerHook> hook);
  /// Whether any hook was added.
  virtual bool has_hooks() const { return !hooks_.empty(); }
  /// The hooks, in the order they run.
  const std::vector<std::shared_ptr<OptimizerHook>>& hooks() const { return hooks_; }
  /// Saves/loads t, epoch and every parameter's state and step count under its name.
  virtual void serialize(Serializer& s);

  // ---- Mixed precision (Chainer's loss_scaling and use_fp32_update; see the file comment) ----
  /// Chainer's loss_scaling(interval=1000, scale=None): with SCALE, static scaling by it (checked:
  /// positive and finite); without, Chainer's dynamic scaling (LossScaler::chainer_dynamic: from 1,
  /// doubling after every step until the first skip, then doubling over INTERVAL good steps,
  /// halving at a skip, within [1, 65504]). Replaces any earlier setting.
  virtual void loss_scaling(int64_t interval = 1000, std::optional<double> scale = std::nullopt);
  /// Dynamic loss scaling with PyTorch GradScaler's knobs (init_scale 2^16, growth_factor 2,
  /// backoff_factor 0.5, growth_interval 2000). Replaces any earlier setting.
  virtual void loss_scaling(const LossScalingOptions& options);
  /// Chainer's set_loss_scale: static scaling by SCALE.
  void set_loss_scale(double scale) { loss_scaling(1000, scale); }
  /// The loss scaling in force, or none (nullopt: update(lossfun) backpropagates the loss as it is).
  virtual const std::optional<LossScaler>& loss_scaler() const { return scaler_; }
  /// The current loss scale: what update(lossfun) multiplies the loss by (1 without loss scaling).
  double loss_scale() const { return loss_scaler() ? loss_scaler()->scale() : 1.0; }
  /// Whether the last update() was skipped for an inf or NaN gradient (dynamic scaling only).
  virtual bool last_update_skipped() const { return last_skipped_; }
  /// How many updates were skipped since setup() (not saved in snapshots).
  virtual int64_t skipped_updates() const { return skipped_; }
  /// Chainer's use_fp32_update(flag=True): float16 and bfloat16 parameters are stepped as float32
  /// master copies (see the file comment). Without it such a parameter makes update() throw. FLAG
  /// false drops the master copies.
  virtual void use_fp32_update(bool flag = true);
  /// Whether use_fp32_update() is on.
  virtual bool fp32_update() const { return fp32_update_; }
  /// The float32 master copy of parameter NAME ("/l1/W"); undefined before its first update, or
  /// when it is not a half parameter stepped with use_fp32_update().
  virtual Tensor fp32_param(const std::string& name) const;
  /// Installs AGREE, which update() calls with whether THIS process found a gradient that is not
  /// finite and which returns whether ANY process did (null: this process decides alone). The
  /// multi-node optimizer installs an all-reduce on its actual optimizer, so that every rank skips
  /// the same steps and backs off alike.
  void set_overflow_agreement(std::function<bool(bool)> agree) { agree_ = std::move(agree); }

  // ---- Gradient accumulation (PyTorch DDP's no_sync) ----
  /// Backward passes always add their gradients to those the parameters hold, until cleargrads;
  /// an update after several passes steps with their sum. While a NoSync guard from no_sync()
  /// lives, an optimizer that averages gradients over processes while backward runs (the
  /// multi-node optimizer's bucketed reduction) starts no communication for those passes: the
  /// first backward pass after the guard ends reduces the accumulated sum, and so does update()
  /// whenever it comes. For any other optimizer the guard changes nothing. Guards nest.
  class NoSync {
   public:
    /// Takes over OTHER's scope (OTHER then ends nothing).
    NoSync(NoSync&& other) noexcept : optimizer_(std::exchange(other.optimizer_, nullptr)) {}
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;
    NoSync& operator=(NoSync&&) = delete;
    ~NoSync();  ///< Ends the scope: the last guard to end turns the synchronization back on.

   private:
    friend class Optimizer;
    explicit NoSync(Optimizer* optimizer);
    Optimizer* optimizer_;
  };
  /// Backward passes accumulate locally until the returned guard ends (see NoSync).
  [[nodiscard]] NoSync no_sync() { return NoSync(this); }
  /// False while a no_sync() guard lives.
  bool grad_sync() const { return no_sync_depth_ == 0; }

  // ---- Steps replayed from a CUDA graph (training/cuda_graph_step.h) ----
  /// Whether update() only queues device work, so that a whole step can be captured; false for
  /// an optimizer that synchronizes with other processes on the host (the multi-node optimizer),
  /// and with loss scaling or float32 master copies (the scale changes and a dynamic one is
  /// decided on the host).
  virtual bool capturable() const { return !loss_scaler() && !fp32_update(); }
  /// The host-side part of an update() whose device work a graph replayed: t() and every
  /// initialized parameter's step count advance.
  virtual void count_replayed_step();
  /// The step counts: t() and each parameter's own, to restore after a failed capture.
  struct StepCounts {
    int64_t t = 0;                            ///< The optimizer's t().
    std::map<std::string, int64_t> params;  ///< Each parameter's own step count, by name.
  };
  /// The current step counts.
  StepCounts step_counts() const { return {t_, param_steps_}; }
  /// Sets the step counts back to COUNTS, taken by step_counts().
  void restore_step_counts(const StepCounts& counts) { t_ = counts.t, param_steps_ = counts.params; }

  // ---- Hyperparameters by name (Chainer's `optimizer.hyperparam`, getattr/setattr) ----
  /// The names hyperparam() and set_hyperparam() take ("lr", "momentum"), in declaration order.
  virtual std::vector<std::string> hyperparam_names() const;
  /// The value of hyperparameter NAME (what observe_lr reads as "lr"); an unknown NAME throws,
  /// listing hyperparam_names().
  virtual double hyperparam(const std::string& name) const;
  /// Sets hyperparameter NAME to VALUE, as ExponentialShift and LinearShift do; the next step uses
  /// it (a step replayed from a CUDA graph too). An unknown NAME throws, listing
  /// hyperparam_names(); a derived one (Adam's "lr") throws, naming what to set instead.
  virtual void set_hyperparam(const std::string& name, double value);

  /// The state of parameter NAME ("/l1/W"); empty until its first update.
  virtual const TensorMap& state(const std::string& name) const;

  /// Whether a step is elementwise: each element of a parameter is updated from the same element
  /// of its gradient and state only, with state tensors of the parameter's shape that start at
  /// one value each (those with an update_rule(): SGD, MomentumSGD, Adam, AdaGrad, RMSprop, ...).
  /// Only such optimizers accept an UpdatePartition.
  bool elementwise() const { return update_rule().has_value(); }
  /// Names of the per-parameter state tensors ("m", "v"), for deserialization and partitions, in
  /// the order of the rule's states (ParamTensors::state0, state1, state2).
  virtual std::vector<std::string> state_names() const = 0;
  /// The value that every element of state tensor KEY starts at, at a parameter's first step:
  /// 0 unless the rule says otherwise (SMORMS3's "mem" starts at 1, as Chainer's init_state).
  virtual double initial_state_value(const std::string& /*key*/) const { return 0.0; }
  /// Installs PARTITION (null: none). What the previous partition held (parameters of the target
  /// and state) is first copied into private memory, so nothing stays shared with other processes
  /// that this optimizer no longer coordinates with.
  virtual void set_update_partition(std::shared_ptr<UpdatePartition> partition);
  /// The installed partition, or null.
  const std::shared_ptr<UpdatePartition>& update_partition() const { return partition_; }

 protected:
  /// One hyperparameter, as hyperparams() lists it: a field, or a value derived from others.
  struct Hyperparam {
    std::string name;                      ///< Its name ("lr").
    double* field = nullptr;               ///< The field holding it; null for a derived one.
    std::function<double()> derived = {};  ///< For a derived one: computes it.
    std::string set_instead = {};          ///< For a derived one: what to set instead ("alpha").
  };
  /// The optimizer's hyperparameters, pointing into this object (asked for at each access, so a
  /// copied optimizer points into itself). The base has none.
  virtual std::vector<Hyperparam> hyperparams() { return {}; }
  /// An elementwise optimizer names its rule (core/ops/update_ops.h) and the scalars of a step of a
  /// parameter that has taken PARAM_T steps, this one included (Chainer's UpdateRule.t: a
  /// parameter initialized or added after the first update starts from 1, so for example Adam's bias
  /// correction treats its first step as a first step). update() then steps every parameter in
  /// one call (one launch on a GPU), with state tensors named by state_names() created on the
  /// parameter's device. The scalars are asked for when the step runs, and again for every
  /// replay of a step captured into a CUDA graph, so they must come from the optimizer's state.
  virtual std::optional<UpdateRule> update_rule() const { return std::nullopt; }
  /// The scalars of update_rule()'s step of a parameter that has taken PARAM_T steps.
  virtual UpdateScalars update_scalars(int64_t /*param_t*/) const { return {}; }
  /// Called when grad_sync() changes (a first no_sync() guard, or the last one ending); the
  /// multi-node optimizer tells its reducer. The base does nothing.
  virtual void grad_sync_changed(bool /*sync*/) {}
  /// Any other optimizer steps one parameter at a time; STATE belongs to this parameter and starts
  /// empty. t() already counts this step; param_t() counts this parameter's own steps.
  virtual void update_one(Variable& param, TensorMap& state);
  /// The step count of the parameter being updated, this step included.
  int64_t param_t() const { return param_t_; }
  /// Throws, naming WHAT, unless setup() has bound a target.
  void require_target(const char* what) const;
  /// Throws unless every state entry of the snapshot level SUB (one parameter's) is named in
  /// state_names() (or is the step count "t").
  void require_known_state(const Serializer& sub) const;
  /// Throws, naming OPTIMIZER, when EPS is not 0 but rounds to 0 in the dtype of a parameter of
  /// the target (float32 for eps below about 1e-45), as Chainer's Adam and RMSprop check.
  void require_eps_representable(const char* optimizer, double eps) const;

 private:
  std::shared_ptr<Link> target_;
  int64_t t_ = 0;
  int64_t epoch_ = 0;
  std::vector<std::shared_ptr<OptimizerHook>> hooks_;
  std::map<std::string, TensorMap> states_;
  std::map<std::string, int64_t> param_steps_;  // steps per parameter, saved as "<name>/t"
  int64_t param_t_ = 0;                          // param_steps_ of the parameter being updated
  std::shared_ptr<UpdatePartition> partition_;
  int no_sync_depth_ = 0;  // live NoSync guards
  std::optional<LossScaler> scaler_;
  bool last_skipped_ = false;
  int64_t skipped_ = 0;
  std::function<bool(bool)> agree_;  // see set_overflow_agreement
  bool fp32_update_ = false;
  std::map<std::string, Tensor> masters_;  // float32 master copies of half parameters, by name
};

}  // namespace chainer
