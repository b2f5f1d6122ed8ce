/// @file
/// GradientReducer: averages a link's gradients over every rank of a communicator while
/// backward is still running, the way PyTorch's DistributedDataParallel does.
///
/// attach(link) plans BUCKETS over the link's initialized parameters taken in REVERSE
/// namedparams() order (roughly the order backward finishes them): a small first bucket
/// (first_bucket_bytes, ~1 MB) so communication starts early, then buckets of about bucket_bytes
/// (~25 MB). A parameter larger than a bucket gets one of its own.
/// Every parameter gets a VariableNode grad hook; when backward makes a gradient final the hook
/// counts it, and as soon as EVERY parameter of the next bucket in plan order is final that bucket
/// is packed into one buffer (multiplied by 1/size on the way, while the gradients are still warm
/// in cache) and handed to the transport, which starts its sum over the ranks and returns a
/// handle to wait on (distributed/reducer/bucket_transport.h). Buckets are always started in plan order,
/// the same on every rank: a bucket that becomes ready before an earlier one waits for it
/// (counted in stats().waited_for_earlier). Each hook also tests the sums in flight so MPI makes
/// progress during the rest of backward. A bucket never mixes dtypes or devices.
///
/// finalize() completes the step: it starts, in order, every bucket not started yet (parameters
/// that got no gradient in this backward count as zeros, so no rank ever waits for a bucket that
/// another rank cannot start) and waits for all of them. Each gradient then becomes
/// a view of its slice of the bucket buffer, so the means are never copied again; the buffer is
/// reused by the next step unless somebody still holds such a view (then a fresh one is made).
/// With zero_fill a parameter without a gradient then gets the mean of the others' gradients;
/// without it, such a parameter is left without a gradient (every rank should then agree on which
/// are missing, as ChainerMN requires). If no hook fired at all (gradients set by hand, or the
/// user's backward happened before attach), finalize simply reduces everything then.
///
/// Rules, as for DDP: every rank runs the same sequence of backward passes between two
/// finalize() calls, and gradients are not edited by hand between backward and finalize()
/// (a bucket may already have been packed).
///
/// Gradient accumulation: several backward passes before one finalize() add up in the
/// parameters' gradients (autograd sums into them), and finalize() averages that SUM over the
/// ranks, as DDP and Horovod do; divide each pass's loss by their number for the mean. Tell the
/// reducer which pass is the last, so that nothing is started before it: while
/// set_backward_sync(false) is in force (the optimizer's no_sync() guard, as DDP's no_sync), a
/// hook only counts its gradient (stats().deferred_grads); and with
/// Options::backward_passes_per_step = k (Horovod's), a parameter's gradient is final at its
/// k-th pass since the last finalize(), counting the passes under no_sync too. The buckets
/// then start during the last pass as during a single one, or at finalize() for any parameter
/// that missed it. A pass nobody announced is still correct but costs: it is detected when a
/// parameter whose bucket was already started gets a new gradient, and the started buckets are
/// then completed and thrown away, and finalize() reduces everything again from the
/// accumulated gradients (stats().restarts, stats().buckets_discarded).
///
/// Hooks that fire while ANOTHER optimizer's update(lossfun) backpropagates
/// (chainer::Optimizer::backpropagating_target() is not the attached link) are ignored: that
/// backward's gradients belong to another loss (a GAN's discriminator loss reaching the
/// generator's parameters), and the attached link's own update(lossfun) clears them before its
/// backward. Otherwise their buckets would be summed, then thrown away as a restart. Gradients
/// that remain are still reduced, at the next hook or at finalize().
///
/// The transport: on one host (every rank of the communicator on this machine, as with
/// `mpiexec -n 2` here) and with every parameter in host memory, a shared-memory segment
/// (distributed/reducer/shared_memory_transport.h): each gradient is packed into this rank's region from
/// its own hook, and finalize() sums each rank's share of every parameter over all ranks' regions;
/// a still-held view of the last step's means makes that step use MPI (stats().held_fallbacks).
/// Options::shared_memory or CHAINERMN_SHARED_MEMORY=0 turns it off. Otherwise the
/// communicator's own algorithm (Communicator::start_sum: MPI_Iallreduce for naive and flat, the
/// composed algorithm for hierarchical, two_dimensional and single_node, NCCL for pure_nccl),
/// each bucket in a private buffer; device buffers are summed in stream order where the
/// communicator's library allows it. There the buckets travel in the communicator's
/// allreduce_grad_dtype when it has one (packed as the mean's share, 1/size, before the cast, as
/// multi_node_mean_grad does), and the gradients come back as converted copies.
///
/// Double buffering (finalize_lagged, for the multi-node optimizer's double_buffering): each
/// step's sums are left in flight behind the next step's forward and backward, and the gradients
/// receive the means of the step before. Where the transport sums with non-blocking messages
/// (MPI_Iallreduce for naive and flat, NCCL's stream for pure_nccl and single_node on a GPU),
/// those sums really run meanwhile (on the host, MPI progresses them while the next backward's
/// hooks test them); the composed algorithms on the host and the shared-memory transport sum at
/// once, so there the means are only copied aside and applied one step later: the same lagged
/// result, and nothing gained.
///
/// The reducer's own traffic (the shared-memory step) runs on its own duplicate of the
/// communicator's MPI communicator, and start_sum on another, so it never mixes with other
/// collectives.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "distributed/communicators/communicator.h"
#include "nn/link.h"

namespace chainermn {

/// The bucket plan and transport of a GradientReducer.
struct GradientReducerOptions {
  size_t first_bucket_bytes = size_t(1) << 20;  ///< The first bucket (the last parameters of the model).
  size_t bucket_bytes = size_t(25) << 20;       ///< Every later bucket.
  /// A parameter without a gradient counts as zeros and receives the mean (see above).
  bool zero_fill = true;
  bool shared_memory = true;  ///< On one host, average through a shared segment (see above).
  /// Horovod's: a parameter's gradient is final at this many backward passes since the last
  /// finalize() (gradient accumulation, see above); at least 1.
  int backward_passes_per_step = 1;
};

/// Averages a link's gradients over the ranks in buckets, while backward runs (as PyTorch's DDP).
class GradientReducer {
 public:
  /// What the reducer has done so far, for tests and benchmarks.
  struct Stats {
    int64_t steps = 0;                  ///< finalize() calls that reduced something.
    int64_t buckets_from_hooks = 0;     ///< Buckets started during backward, from a grad hook.
    int64_t buckets_at_finalize = 0;    ///< Buckets started by finalize().
    int64_t waited_for_earlier = 0;     ///< Times a ready bucket had to wait for an earlier one.
    int64_t restarts = 0;               ///< Steps whose early buckets were thrown away (see above).
    int64_t buckets_discarded = 0;      ///< Buckets started and thrown away by those restarts.
    /// Gradients a hook only counted: passes under no_sync, or before backward_passes_per_step.
    int64_t deferred_grads = 0;
    int64_t shared_memory_steps = 0;    ///< Steps averaged through the shared segment.
    int64_t held_fallbacks = 0;         ///< Steps that used MPI because a view of the means was held.
  };

  /// Collective over COMM (duplicates its MPI communicator).
  GradientReducer(std::shared_ptr<Communicator> comm, GradientReducerOptions options = {});
  /// Completes anything still in flight and removes its hooks.
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  /// Plans the buckets over LINK's initialized parameters and hooks them. An earlier plan is
  /// dropped first, as by detach(). Collective: every rank must attach the same structure.
  void attach(const chainer::Link& link);
  /// Completes (collectively, consistently) any bucket in flight, discards the partial
  /// reduction, and removes the hooks.
  void detach();
  /// Whether the current plan covers exactly LINK's initialized parameters (same variables, same
  /// order and shapes).
  bool matches(const chainer::Link& link) const;
  bool attached() const;  ///< Whether a plan is in place (attach ran, and detach has not since).
  /// Whether the current plan averages through a shared-memory segment.
  bool uses_shared_memory() const;

  /// Completes the reduction (see above): afterwards every planned parameter holds the mean of
  /// its gradient over all ranks. A no-op on a one-process communicator apart from zero filling.
  /// BARRIER false (for the multi-node optimizer's shared update, which ends with a barrier of
  /// its own): on the shared-memory path each rank then returns as soon as it has summed its share
  /// (share_of) of every parameter, so its gradients hold the means in that share at once and
  /// everywhere else only once every rank has passed the caller's next barrier.
  void finalize(bool barrier = true);
  /// False: the backward passes from now on only accumulate locally and start nothing, until it
  /// is set back to true (what the multi-node optimizer's no_sync() guard does; see above). A
  /// finalize() meanwhile still reduces everything. Not collective; kept across attach().
  void set_backward_sync(bool sync);
  bool backward_sync() const;  ///< The setting of set_backward_sync (true at construction).

  /// Double buffering (see above): starts every bucket of this step not started yet and leaves
  /// this step's sums in flight (or, where nothing can run behind the next step, completes them
  /// and keeps a copy of the means); then waits for the step left in flight by the previous call
  /// and makes every planned parameter's gradient its mean, as finalize() would have made it
  /// then (zero_fill alike). Returns false, leaving the gradients as they are, when there was no
  /// such step: the first call after attach() (or detach(), or a restart of the plan).
  bool finalize_lagged();
  /// Whether a step is left in flight by finalize_lagged (or installed by set_lagged_means).
  bool has_lagged() const;
  /// For snapshots: waits for the step left in flight by finalize_lagged and returns its means
  /// by planned parameter name, in plan order (an undefined tensor: a parameter left without a
  /// gradient, zero_fill off); they are still applied by the next finalize_lagged. Empty when no
  /// step is in flight. Local: each rank waits for its own part of sums every rank started.
  std::vector<std::pair<std::string, chainer::Tensor>> lagged_means();
  /// Installs MEANS (as lagged_means gives them) as the step in flight, replacing any, so that
  /// the next finalize_lagged applies them: how a restored run resumes a double-buffered one.
  /// A planned parameter missing from MEANS gets zeros with zero_fill, else no gradient; a mean
  /// whose shape or dtype differs from its parameter's throws chainer::Error naming both.
  void set_lagged_means(const std::vector<std::pair<std::string, chainer::Tensor>>& means);

  const Stats& stats() const;  ///< The counters since construction.
  /// The plan: the parameter names of each bucket, in launch order.
  std::vector<std::vector<std::string>> bucket_names() const;
  const GradientReducerOptions& options() const;  ///< The options it was made with.

  /// The reducer's state (defined in gradient_reducer.cpp).
  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace chainermn
