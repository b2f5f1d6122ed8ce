#include "distributed/optimizers/multi_node_optimizer.h"

#include "core/util/config.h"
#include "distributed/runtime/mpi_check.h"

namespace chainermn {

using chainer::Error;

const char* reduction_name(Reduction reduction) {
  switch (reduction) {
    case Reduction::Bucketed: return "bucketed";
    case Reduction::Communicator: return "communicator";
  }
  throw chainer::InternalError("reduction_name: invalid Reduction");
}

Reduction parse_reduction(const std::string& name, const std::string& what) {
  for (Reduction r : {Reduction::Bucketed, Reduction::Communicator})
    if (name == reduction_name(r)) return r;
  throw Error(chainer::str(what, " must be bucketed or communicator, got '", name, "'"));
}

MultiNodeOptimizer::MultiNodeOptimizer(std::shared_ptr<chainer::Optimizer> actual, std::shared_ptr<Communicator> comm,
                                       MultiNodeOptimizerOptions options)
    : actual_(std::move(actual)), comm_(std::move(comm)), options_(std::move(options)) {
  if (!actual_) throw Error("create_multi_node_optimizer: the actual optimizer is null");
  if (!comm_) throw Error("create_multi_node_optimizer: the communicator is null");
  if (options_.backward_passes_per_step < 1)
    throw Error(chainer::str("create_multi_node_optimizer: backward_passes_per_step must be at least 1, got ",
                             options_.backward_passes_per_step));
  if (options_.reducer.backward_passes_per_step != 1 &&
      options_.reducer.backward_passes_per_step != options_.backward_passes_per_step)
    throw Error(chainer::str("create_multi_node_optimizer: reducer.backward_passes_per_step is ",
                             options_.reducer.backward_passes_per_step, " but backward_passes_per_step is ",
                             options_.backward_passes_per_step, "; set backward_passes_per_step only"));
  options_.reducer.backward_passes_per_step = options_.backward_passes_per_step;
  if (options_.double_buffering && !comm_->averages_gradients())
    throw Error(chainer::str("create_multi_node_optimizer: double buffering averages each step's gradients behind the "
                             "next step, but the '", comm_->name(), "' communicator averages nothing"));
  if (options_.double_buffering && options_.reduction != Reduction::Bucketed)
    throw Error(chainer::str("create_multi_node_optimizer: double buffering needs the bucketed reduction, got '",
                             reduction_name(options_.reduction), "'"));
  // The dummy communicator averages nothing: its multi_node_mean_grad is the whole reduction.
  if (options_.reduction == Reduction::Bucketed && comm_->averages_gradients())
    reducer_ = std::make_unique<GradientReducer>(comm_, options_.reducer);
  if (actual_->target_ptr()) chainer::Optimizer::setup(actual_->target_ptr());
  check_loss_scaling();
  if (comm_->averages_gradients()) {
    // Every rank skips when any rank saw an inf or a NaN (see the header).
    actual_->set_overflow_agreement([comm = comm_](bool overflow) {
      int local = overflow ? 1 : 0, any = 0;
      CHAINERMN_MPI_CHECK(MPI_Allreduce(&local, &any, 1, MPI_INT, MPI_MAX, comm->mpi_comm()));
      return any != 0;
    });
  }
}

void MultiNodeOptimizer::check_loss_scaling() const {
  if (options_.double_buffering && actual_->loss_scaler() && actual_->loss_scaler()->is_dynamic())
    throw Error("multi-node optimizer: dynamic loss scaling does not work with double buffering, whose step applies "
                "the previous update's gradients, scaled by the previous scale; use a static scale "
                "(loss_scaling(interval, scale)) or turn double buffering off");
}

void MultiNodeOptimizer::loss_scaling(int64_t interval, std::optional<double> scale) {
  actual_->loss_scaling(interval, scale);
  check_loss_scaling();
}

void MultiNodeOptimizer::loss_scaling(const chainer::LossScalingOptions& options) {
  actual_->loss_scaling(options);
  check_loss_scaling();
}

namespace {
// Whether every initialized parameter of LINK is in host memory (the shared update's segment is).
bool on_host(const chainer::Link& link) {
  for (const auto& [name, p] : link.namedparams())
    if (p.data().defined() && !p.data().device().is_cpu()) return false;
  return true;
}
}  // namespace

MultiNodeOptimizer::~MultiNodeOptimizer() {
  unshare_update();
  actual_->set_overflow_agreement(nullptr);
}

void MultiNodeOptimizer::unshare_update() {
  if (shared_) actual_->set_update_partition(nullptr);  // copies what it held into private memory
  shared_.reset();
  share_planned_ = false;
}

void MultiNodeOptimizer::share_update(chainer::Link& link) {
  unshare_update();
  share_planned_ = true;
  if (!options_.shard_update || !chainer::config::env_flag("CHAINERMN_SHARD_UPDATE", true) || comm_->size() == 1 ||
      comm_->intra_size() != comm_->size() || !actual_->elementwise() || !on_host(link) || !comm_->averages_gradients())
    return;
  shared_ = SharedUpdate::create(comm_->mpi_comm(), link, actual_->state_names());
  if (!shared_) return;
  actual_->set_update_partition(shared_);
  // Now rather than at each parameter's first step, so that the steps are in place from the first
  // on, as one process's, also for a graph recorded before that step (see bind_parameters).
  shared_->bind_parameters(link);
}

void MultiNodeOptimizer::setup(std::shared_ptr<chainer::Link> target) {
  unshare_update();
  actual_->setup(target);
  chainer::Optimizer::setup(std::move(target));
  if (reducer_) reducer_->detach();
  signature_.clear();
  needs_broadcast_ = true;
}

MultiNodeOptimizer::Signature MultiNodeOptimizer::signature_of(const chainer::Link& link) {
  Signature sig;
  for (const auto& [name, p] : link.namedparams())
    sig.emplace_back(name, p.data().defined() ? p.shape() : chainer::Shape{-1});  // {-1}: not initialized yet
  return sig;
}

void MultiNodeOptimizer::update() {
  require_target("update");
  check_loss_scaling();  // the actual optimizer may have been configured directly
  chainer::Link& link = target();
  Signature sig = signature_of(link);
  if (restored_) {
    restored_ = false;
    signature_ = sig;
    needs_broadcast_ = false;
  }
  if (needs_broadcast_ || sig != signature_) {
    // ChainerMN: `if self.is_changed(target): self.communicator.bcast_data(target)` and no step.
    signature_ = std::move(sig);
    needs_broadcast_ = false;
    restored_lagged_.clear();
    if (reducer_) reducer_->detach();  // with double buffering, the step in flight is dropped, as ChainerMN's  // completes whatever this backward started, consistently
    unshare_update();  // rank 0's values go into private copies, then into a new plan
    comm_->bcast_data(link);
    ++broadcasts_;
    if (reducer_) reducer_->attach(link);
    share_update(link);
    return;
  }
  // A restored optimizer (or a twin of the model) has no plan yet; a plan from before the same
  // change is replaced. Collective, like everything in this branch.
  if (!share_planned_ || (shared_ && !shared_->matches(link))) share_update(link);
  if (reducer_) {
    // Same names and shapes but other variables (a child link replaced by a twin): re-plan;
    // the gradients are then all reduced now.
    if (!reducer_->matches(link)) reducer_->attach(link);
    if (!restored_lagged_.empty()) {
      reducer_->set_lagged_means(restored_lagged_);
      restored_lagged_.clear();
    }
    // Debug mode, as multi_node_mean_grad's: the buckets already started hold gradients of the
    // planned shapes (the plan is the same everywhere, bcast_data checked the models), so
    // comparing what each rank has before they complete is safe and names the culprit.
    if (comm_->debug()) comm_->check_grads_consistent(link, options_.reducer.zero_fill, "multi-node optimizer");
    // With a shared update and nothing reading other ranks' shares of the gradients before the
    // steps (hooks, the debug check, loss scaling's unscaling and check), each rank steps its
    // share as soon as it has summed it, and the update's closing barrier is the step's only one.
    if (options_.double_buffering) {
      // ChainerMN: the update after a broadcast only starts averaging its gradients.
      if (!reducer_->finalize_lagged()) return;
      // The means waited for are the last update's: unlike this update's, they did not wait for
      // every rank's backward, which reads the shared parameters the steps write. (Averaging in
      // shared memory ended with a barrier after every rank had packed.)
      if (shared_ && !reducer_->uses_shared_memory()) shared_->barrier();
    } else {
      reducer_->finalize(!(shared_ && !actual_->has_hooks() && !comm_->debug() && !actual_->loss_scaler()));
    }
    if (comm_->debug()) Communicator::check_grads_finite(link, "multi-node optimizer");
  } else {
    comm_->multi_node_mean_grad(link, options_.reducer.zero_fill);
  }
  actual_->update();
  if (shared_) shared_->finish_step();
}

void MultiNodeOptimizer::serialize(chainer::Serializer& s) {
  actual_->serialize(s);
  if (!options_.double_buffering || !reducer_) {
    if (s.is_reader() && actual_->t() > 0) restored_ = true;
    return;
  }
  chainer::Serializer lagged = s["double_buffering"];
  if (!s.is_reader()) {
    // Loaded and not installed yet (no update since), or in flight.
    auto means = restored_lagged_.empty() ? reducer_->lagged_means() : restored_lagged_;
    for (auto& [name, mean] : means)
      if (mean.defined()) lagged.tensor(name.substr(1), mean);
    return;
  }
  restored_lagged_.clear();
  for (const auto& [name, p] : target().unique_namedparams())
    if (lagged.contains(name.substr(1))) {
      chainer::Tensor mean;
      lagged.tensor(name.substr(1), mean);
      restored_lagged_.emplace_back(name, std::move(mean));
    }
  if (actual_->t() > 0 || !restored_lagged_.empty()) restored_ = true;
}

void MultiNodeOptimizer::plan_shared_update() {
  require_target("plan_shared_update");
  if (restored_) share_update(target());
}

void MultiNodeOptimizer::update_one(chainer::Variable&, chainer::TensorMap&) {
  throw chainer::InternalError("MultiNodeOptimizer::update_one: the actual optimizer does the steps");
}

std::shared_ptr<chainer::Optimizer> create_multi_node_optimizer(std::shared_ptr<chainer::Optimizer> actual,
                                                                 std::shared_ptr<Communicator> comm,
                                                                 bool double_buffering, bool zero_fill) {
  MultiNodeOptimizerOptions options;
  options.double_buffering = double_buffering;
  options.reducer.zero_fill = zero_fill;
  return create_multi_node_optimizer(std::move(actual), std::move(comm), options);
}

std::shared_ptr<chainer::Optimizer> create_multi_node_optimizer(std::shared_ptr<chainer::Optimizer> actual,
                                                                 std::shared_ptr<Communicator> comm,
                                                                 const MultiNodeOptimizerOptions& options) {
  return std::make_shared<MultiNodeOptimizer>(std::move(actual), std::move(comm), options);
}

}  // namespace chainermn
