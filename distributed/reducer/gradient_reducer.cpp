#include "distributed/reducer/gradient_reducer.h"

#include <algorithm>
#include <unordered_map>

#include "core/util/config.h"
#include "distributed/runtime/mpi_check.h"
#include "distributed/runtime/mpi_wait.h"
#include "distributed/runtime/mpi_runtime.h"
#include "distributed/reducer/bucket_transport.h"
#include "distributed/communicators/packing.h"
#include "distributed/reducer/shared_memory_transport.h"
#include "nn/optimizer.h"

namespace chainermn {

using chainer::DType;
using chainer::Error;
using chainer::Shape;
using chainer::Tensor;
using chainer::VariableNode;

struct GradientReducer::Impl {
  struct Slot {
    std::weak_ptr<VariableNode> node;
    std::string name;
    Shape shape;
    DType dtype = DType::Float32;
    chainer::Device device;
    int64_t numel = 0;
    size_t bucket = 0;
    int64_t offset = 0;     // in elements, inside the bucket buffer
    bool fired = false;     // its gradient was final in this step
    bool had_grad = false;  // it had a gradient when its bucket was packed
    bool packed = false;    // packed into this step's buffer (early, from its hook, or at launch)
    int passes = 0;         // backward passes that gave it a gradient in this step
  };
  struct Bucket {
    std::vector<size_t> slots;
    DType dtype = DType::Float32;
    chainer::Device device;
    int64_t numel = 0;
    size_t ready = 0;  // slots whose gradient is final
    bool launched = false;
    std::unique_ptr<PendingSum> sum;  // in flight from launch until wait_all
  };
  // A step left in flight by finalize_lagged, applied by the next call: its sums and the buffers
  // they run in (one per bucket), or, at one rank, from shared memory or from a snapshot, its
  // means per slot (complete).
  struct Lagged {
    std::vector<std::unique_ptr<PendingSum>> sums;
    std::vector<Tensor> means;      // per bucket
    std::vector<Tensor> slot_means;  // per slot; undefined: no gradient (left without one)
    std::vector<char> had_grad;     // per slot, with `means`
    bool per_slot = false;
  };

  std::shared_ptr<Communicator> comm;
  GradientReducerOptions options;
  MPI_Comm mpi = MPI_COMM_NULL;
  int size = 1;
  int rank = 0;
  std::unique_ptr<BucketTransport> transport;
  bool shared_memory = false;  // transport is the shared-memory one
  bool attached = false;
  const chainer::Link* link = nullptr;  // the attached link
  std::vector<Slot> slots;
  std::vector<Bucket> buckets;
  std::unordered_map<const VariableNode*, size_t> slot_of;
  size_t next = 0;       // the next bucket to start
  bool stale = false;    // a started bucket got a new gradient: redo everything at finalize
  bool backward_sync = true;  // false inside the optimizer's no_sync(): passes only accumulate
  std::unique_ptr<Lagged> lagged;  // double buffering: the step whose means the next call applies
  Stats stats;

  // The hook stored in the parameters' grad_hooks; recognizable (std::function::target) so that
  // detach can remove exactly the hooks of this reducer.
  struct Hook {
    std::weak_ptr<Impl> owner;
    void operator()(VariableNode& node) const {
      if (auto impl = owner.lock()) impl->on_grad(node);
    }
  };

  void on_grad(VariableNode& node) {
    if (!attached) return;
    // Another optimizer's update(lossfun) is backpropagating its own loss through these
    // parameters too (a GAN's discriminator loss reaching the generator): not this link's step.
    if (const chainer::Link* running = chainer::Optimizer::backpropagating_target(); running && running != link)
      return;
    auto it = slot_of.find(&node);
    if (it == slot_of.end()) return;
    Slot& slot = slots[it->second];
    Bucket& bucket = buckets[slot.bucket];
    ++slot.passes;
    if (bucket.launched) {
      stale = true;  // packed before this gradient changed: a backward pass nobody announced
    } else if (!backward_sync || slot.passes < options.backward_passes_per_step) {
      // Gradient accumulation: this pass only adds to the local gradient. Nothing is packed or
      // started; a value packed early by an earlier pass is out of date and is packed again.
      slot.packed = false;
      ++stats.deferred_grads;
    } else {
      if (!slot.fired) {
        slot.fired = true;
        ++bucket.ready;
        if (bucket.ready == bucket.slots.size() && slot.bucket > next && !stale) ++stats.waited_for_earlier;
      }
      // Packed again if a second backward changed it.
      if (transport && transport->packs_early() && !stale) pack_slot(slot);
    }
    test_in_flight();
    if (!stale) launch_ready();
  }

  void launch_ready() {
    while (next < buckets.size() && buckets[next].ready == buckets[next].slots.size()) {
      launch(next);
      ++next;
      ++stats.buckets_from_hooks;
    }
  }

  void test_in_flight() {
    if (lagged)
      for (auto& sum : lagged->sums)
        if (sum) sum->test();
    for (size_t b = 0; b < next; ++b)
      if (buckets[b].sum) buckets[b].sum->test();
  }

  // Copies SLOT's gradient into its place in the bucket's buffer, already multiplied by 1/size
  // (while it is still warm in cache from backward), so the sum over ranks is the mean and
  // finalize() need not touch the values again.
  void pack_slot(Slot& slot) {
    Tensor target = transport->buffer(slot.bucket);
    std::shared_ptr<VariableNode> node = slot.node.lock();
    const Tensor g = node ? node->grad : Tensor();
    slot.had_grad = g.defined() && g.numel() == slot.numel;
    slot.packed = true;
    if (slot.had_grad) {
      packing::pack_one(g, target, slot.offset, 1.0 / double(size));
    } else {
      // No gradient in this step (or a shape the plan does not know, only possible while a
      // plan is being thrown away): zeros keep the collective the same on every rank.
      packing::zero(target, slot.offset, slot.numel);
    }
  }

  void launch(size_t b) {
    Bucket& bucket = buckets[b];
    bucket.launched = true;
    if (size == 1) return;  // the mean of one rank is its own gradient: nothing to move
    for (size_t s : bucket.slots)
      if (!slots[s].packed) pack_slot(slots[s]);
    bucket.sum = transport->start(b);
  }

  void wait_all() {
    for (Bucket& b : buckets) {
      if (b.sum) b.sum->wait();
      b.sum.reset();
    }
  }

  // Nothing of this step is packed or started any more (a restart, or the next step).
  void forget_packing() {
    for (Slot& s : slots) s.packed = false;
    for (Bucket& b : buckets) b.launched = false;
    if (transport) transport->end_step();
  }

  void reset_step() {
    forget_packing();
    for (Slot& s : slots) {
      s.fired = s.had_grad = false;
      s.passes = 0;
    }
    for (Bucket& b : buckets) {
      b.ready = 0;
      b.sum.reset();
    }
    next = 0;
    stale = false;
  }

  // Starts every bucket not started yet, in order, and waits for all.
  void complete_all(bool count_stats) {
    for (; next < buckets.size(); ++next) {
      launch(next);
      if (count_stats) ++stats.buckets_at_finalize;
    }
    wait_all();
  }

  // Chooses the transport for the current plan: shared memory with several ranks on this host
  // only and every parameter in host memory, else the communicator's own sums.
  void choose_transport() {
    transport.reset();
    shared_memory = false;
    if (size == 1) return;
    std::vector<BucketLayout> layout;
    bool on_host = true;
    for (const Bucket& b : buckets) {
      BucketLayout l{b.dtype, b.device, b.numel, {}};
      for (size_t s : b.slots) l.parts.emplace_back(slots[s].offset, slots[s].numel);
      on_host = on_host && b.device.is_cpu();
      layout.push_back(std::move(l));
    }
    // Shared memory has no wire: it sums in the gradients' own dtype whatever
    // allreduce_grad_dtype says. Messages carry the buckets in that dtype.
    if (on_host && options.shared_memory && chainer::config::env_flag("CHAINERMN_SHARED_MEMORY", true) &&
        comm->intra_size() == size) {
      transport = shared_memory_transport(mpi, layout, [this](size_t b, const std::shared_ptr<chainer::Storage>& st) {
        long n = 0;
        for (size_t s : buckets[b].slots)
          if (auto node = slots[s].node.lock(); node && node->grad.defined() && node->grad.storage() == st) ++n;
        return n;
      });
      shared_memory = transport != nullptr;  // null on every rank when there is no room: messages then
    }
    if (!transport) {
      if (const auto wire = comm->options().allreduce_grad_dtype)
        for (BucketLayout& l : layout) l.dtype = *wire;
      transport = communicator_transport(comm, std::move(layout));
    }
  }

  void unpack() {
    if (size == 1) {
      if (!options.zero_fill) return;
      for (Slot& slot : slots)
        if (auto node = slot.node.lock(); node && !node->grad.defined())
          node->grad = Tensor::zeros(slot.shape, slot.dtype, slot.device);
      return;
    }
    std::vector<Tensor> means;
    std::vector<char> had_grad;
    for (size_t b = 0; b < buckets.size(); ++b) means.push_back(transport->means(b));
    for (const Slot& slot : slots) had_grad.push_back(slot.had_grad);
    unpack(means, had_grad);
  }

  // The buffers hold the means (pack scaled by 1/size): each gradient becomes a view of its
  // bucket's buffer, so no value is copied again.
  void unpack(const std::vector<Tensor>& means, const std::vector<char>& had_grad) {
    for (size_t b = 0; b < buckets.size(); ++b) {
      for (size_t s : buckets[b].slots) {
        Slot& slot = slots[s];
        std::shared_ptr<VariableNode> node = slot.node.lock();
        if (!node) continue;
        if (!had_grad[s] && !options.zero_fill) continue;
        node->grad = slot_mean(means[b], slot);
      }
    }
  }

  // SLOT's mean in its bucket's MEANS. Buckets that travelled in another dtype
  // (allreduce_grad_dtype) come back converted.
  static Tensor slot_mean(const Tensor& means, const Slot& slot) {
    const Tensor mean = means.narrow(0, slot.offset, slot.numel).reshape(slot.shape);
    return mean.dtype() == slot.dtype ? mean : mean.astype(slot.dtype);
  }

  // Double buffering: this step's reduction, as finalize's but left in flight (Lagged).
  std::unique_ptr<Lagged> start_lagged() {
    auto now = std::make_unique<Lagged>();
    if (size == 1 || transport->sums_at_finish()) {
      // Nothing that runs behind the next step: complete it now and keep a copy of the means
      // (the gradients at one rank, the shared segment otherwise, are overwritten next step).
      complete_all(true);
      if (transport) {
        const BucketTransport::Finished f = transport->finish_step(true);
        stats.shared_memory_steps += f.shared_memory;
        stats.held_fallbacks += f.held_fallback;
      }
      now->per_slot = true;
      for (const Slot& slot : slots) {
        std::shared_ptr<VariableNode> node = slot.node.lock();
        Tensor mean;
        if (size == 1) {
          if (node && node->grad.defined()) mean = node->grad.clone();
          else if (options.zero_fill) mean = Tensor::zeros(slot.shape, slot.dtype, slot.device);
        } else if (slot.had_grad || options.zero_fill) {
          mean = slot_mean(transport->means(slot.bucket), slot).clone();
        }
        now->slot_means.push_back(std::move(mean));
      }
      return now;
    }
    for (; next < buckets.size(); ++next) {
      launch(next);
      ++stats.buckets_at_finalize;
    }
    for (size_t b = 0; b < buckets.size(); ++b) {
      now->sums.push_back(std::move(buckets[b].sum));
      now->means.push_back(transport->means(b));
    }
    for (const Slot& slot : slots) now->had_grad.push_back(slot.had_grad);
    return now;
  }

  // Waits for LAG's sums (in the order they were started) and makes the gradients its means.
  void apply(Lagged& lag) {
    for (auto& sum : lag.sums)
      if (sum) sum->wait();
    lag.sums.clear();
    if (!lag.per_slot) {
      unpack(lag.means, lag.had_grad);
      return;
    }
    for (size_t s = 0; s < slots.size(); ++s) {
      std::shared_ptr<VariableNode> node = slots[s].node.lock();
      if (!node) continue;
      const Tensor& mean = lag.slot_means[s];
      node->grad = mean.defined() || !options.zero_fill ? mean
                                                        : Tensor::zeros(slots[s].shape, slots[s].dtype, slots[s].device);
    }
  }

  // What both finalizes do first: refuse without a link; after a replan (stale), complete what
  // was started (every rank started the same buckets), throw it away, and reduce the
  // accumulated gradients from scratch.
  void start_finalize(const char* what) {
    if (!attached) throw Error(chainer::str("GradientReducer.", what, ": no link is attached; call attach(link) first"));
    if (stale) {
      wait_all();
      ++stats.restarts;
      stats.buckets_discarded += int64_t(next);
      forget_packing();
      next = 0;
      stale = false;
    }
  }

  bool finalize_lagged() {
    start_finalize("finalize_lagged");
    std::unique_ptr<Lagged> previous = std::move(lagged);
    lagged = start_lagged();
    if (previous) apply(*previous);
    ++stats.steps;
    reset_step();
    return previous != nullptr;
  }

  // The lagged step's means per slot, complete (snapshots).
  void complete_lagged() {
    if (!lagged || lagged->per_slot) return;
    for (auto& sum : lagged->sums)
      if (sum) sum->wait();
    lagged->sums.clear();
    for (size_t s = 0; s < slots.size(); ++s) {
      const Slot& slot = slots[s];
      lagged->slot_means.push_back(lagged->had_grad[s] || options.zero_fill ? slot_mean(lagged->means[slot.bucket], slot)
                                                                            : Tensor());
    }
    lagged->means.clear();
    lagged->per_slot = true;
  }

  void finalize(bool barrier) {
    start_finalize("finalize");
    complete_all(true);
    if (transport) {
      const BucketTransport::Finished f = transport->finish_step(barrier);
      stats.shared_memory_steps += f.shared_memory;
      stats.held_fallbacks += f.held_fallback;
    }
    unpack();
    ++stats.steps;
    reset_step();
  }

  void remove_hooks() {
    for (Slot& slot : slots) {
      std::shared_ptr<VariableNode> node = slot.node.lock();
      if (!node) continue;
      auto& hooks = node->grad_hooks;
      hooks.erase(std::remove_if(hooks.begin(), hooks.end(),
                                 [this](const std::function<void(VariableNode&)>& h) {
                                   const Hook* mine = h.target<Hook>();
                                   return mine && mine->owner.lock().get() == this;
                                 }),
                  hooks.end());
    }
  }

  void detach() {
    if (!attached) return;
    // Buckets already started must complete on every rank; nothing else is started.
    if (lagged)
      for (auto& sum : lagged->sums)
        if (sum) sum->wait();
    lagged.reset();
    wait_all();
    remove_hooks();
    link = nullptr;
    slots.clear();
    buckets.clear();
    slot_of.clear();
    transport.reset();  // gradients still viewing a shared segment keep its mapping alive
    shared_memory = false;
    attached = false;
    reset_step();
  }
};

GradientReducer::GradientReducer(std::shared_ptr<Communicator> comm, GradientReducerOptions options)
    : impl_(std::make_shared<Impl>()) {
  if (!comm) throw Error("GradientReducer: the communicator is null");
  if (options.first_bucket_bytes == 0 || options.bucket_bytes == 0)
    throw Error("GradientReducer: bucket sizes must be positive");
  if (options.backward_passes_per_step < 1)
    throw Error(chainer::str("GradientReducer: backward_passes_per_step must be at least 1, got ",
                             options.backward_passes_per_step));
  impl_->comm = std::move(comm);
  impl_->options = options;
  impl_->size = impl_->comm->size();
  impl_->rank = impl_->comm->rank();
  CHAINERMN_MPI_CHECK(mpi::comm_dup(impl_->comm->mpi_comm(), &impl_->mpi));
  CHAINERMN_MPI_CHECK(MPI_Comm_set_errhandler(impl_->mpi, MPI_ERRORS_RETURN));
}

GradientReducer::~GradientReducer() {
  if (!impl_) return;
  if (mpi_is_running()) {
    try {
      impl_->detach();
    } catch (...) {
      // A destructor must not throw; a failed wait has already been reported by MPI.
    }
    if (impl_->mpi != MPI_COMM_NULL) MPI_Comm_free(&impl_->mpi);
  } else {
    impl_->remove_hooks();
  }
}

void GradientReducer::attach(const chainer::Link& link) {
  Impl& m = *impl_;
  m.detach();
  // A tied parameter once, under its first name, as the optimizer steps it.
  const auto params = link.unique_namedparams();
  // Reverse namedparams order: the order backward tends to finish the gradients.
  for (auto it = params.rbegin(); it != params.rend(); ++it) {
    const auto& [name, p] = *it;
    if (!p.data().defined()) continue;  // not initialized yet: not part of this plan
    if (!chainer::is_floating(p.dtype()))
      throw Error(chainer::str("GradientReducer: parameter ", name, " has dtype ", chainer::dtype_name(p.dtype()),
                               "; only float16, bfloat16, float32 and float64 parameters can be reduced"));
    Impl::Slot slot;
    slot.node = p.node_ptr();
    slot.name = name;
    slot.shape = p.shape();
    slot.dtype = p.dtype();
    slot.device = p.data().device();
    slot.numel = p.numel();
    m.slot_of[p.node()] = m.slots.size();
    m.slots.push_back(std::move(slot));
  }
  // Buckets: fill up to the limit (the first one smaller), never mixing dtypes.
  for (size_t s = 0; s < m.slots.size(); ++s) {
    Impl::Slot& slot = m.slots[s];
    const size_t item = chainer::dtype_size(slot.dtype);
    bool fresh = m.buckets.empty();
    if (!fresh) {
      const Impl::Bucket& last = m.buckets.back();
      const size_t limit = m.buckets.size() == 1 ? m.options.first_bucket_bytes : m.options.bucket_bytes;
      const size_t bytes = size_t(last.numel) * item;
      fresh = last.dtype != slot.dtype || last.device != slot.device || (bytes > 0 && bytes + size_t(slot.numel) * item > limit);
    }
    if (fresh) {
      m.buckets.emplace_back();
      m.buckets.back().dtype = slot.dtype;
      m.buckets.back().device = slot.device;
    }
    Impl::Bucket& bucket = m.buckets.back();
    slot.bucket = m.buckets.size() - 1;
    slot.offset = bucket.numel;
    bucket.numel += slot.numel;
    bucket.slots.push_back(s);
  }
  m.choose_transport();
  for (const Impl::Slot& slot : m.slots)
    if (auto node = slot.node.lock()) node->grad_hooks.push_back(Impl::Hook{impl_});
  m.attached = true;
  m.link = &link;
  m.reset_step();
}

void GradientReducer::detach() { impl_->detach(); }

bool GradientReducer::attached() const { return impl_->attached; }

bool GradientReducer::uses_shared_memory() const { return impl_->shared_memory; }

bool GradientReducer::matches(const chainer::Link& link) const {
  const Impl& m = *impl_;
  if (!m.attached) return false;
  const auto params = link.unique_namedparams();
  size_t s = 0;
  for (auto it = params.rbegin(); it != params.rend(); ++it) {
    const auto& p = it->second;
    if (!p.data().defined()) continue;
    if (s >= m.slots.size()) return false;
    const Impl::Slot& slot = m.slots[s++];
    if (slot.node.lock().get() != p.node() || slot.shape != p.shape() || slot.dtype != p.dtype()) return false;
  }
  return s == m.slots.size();
}

void GradientReducer::finalize(bool barrier) { impl_->finalize(barrier); }

void GradientReducer::set_backward_sync(bool sync) { impl_->backward_sync = sync; }

bool GradientReducer::backward_sync() const { return impl_->backward_sync; }

bool GradientReducer::finalize_lagged() { return impl_->finalize_lagged(); }

bool GradientReducer::has_lagged() const { return impl_->lagged != nullptr; }

std::vector<std::pair<std::string, Tensor>> GradientReducer::lagged_means() {
  Impl& m = *impl_;
  std::vector<std::pair<std::string, Tensor>> out;
  if (!m.lagged) return out;
  m.complete_lagged();
  for (size_t s = 0; s < m.slots.size(); ++s) out.emplace_back(m.slots[s].name, m.lagged->slot_means[s]);
  return out;
}

void GradientReducer::set_lagged_means(const std::vector<std::pair<std::string, Tensor>>& means) {
  Impl& m = *impl_;
  if (!m.attached) throw Error("GradientReducer.set_lagged_means: no link is attached; call attach(link) first");
  std::unordered_map<std::string, Tensor> by_name(means.begin(), means.end());
  auto lag = std::make_unique<Impl::Lagged>();
  lag->per_slot = true;
  for (const Impl::Slot& slot : m.slots) {
    auto it = by_name.find(slot.name);
    Tensor t = it == by_name.end() ? Tensor() : it->second;
    if (t.defined() && (t.shape() != slot.shape || t.dtype() != slot.dtype))
      throw Error(chainer::str("GradientReducer.set_lagged_means: the mean of ", slot.name, " has shape ",
                               chainer::shape_str(t.shape()), " and dtype ", chainer::dtype_name(t.dtype()),
                               "; its parameter has shape ", chainer::shape_str(slot.shape), " and dtype ",
                               chainer::dtype_name(slot.dtype)));
    if (t.defined() && t.device() != slot.device) t = t.to(slot.device);
    lag->slot_means.push_back(std::move(t));
  }
  if (m.lagged)
    for (auto& sum : m.lagged->sums)
      if (sum) sum->wait();
  m.lagged = std::move(lag);
}

const GradientReducer::Stats& GradientReducer::stats() const { return impl_->stats; }

const GradientReducerOptions& GradientReducer::options() const { return impl_->options; }

std::vector<std::vector<std::string>> GradientReducer::bucket_names() const {
  std::vector<std::vector<std::string>> out;
  for (const Impl::Bucket& b : impl_->buckets) {
    out.emplace_back();
    for (size_t s : b.slots) out.back().push_back(impl_->slots[s].name);
  }
  return out;
}

}  // namespace chainermn
