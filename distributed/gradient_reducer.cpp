#include "distributed/gradient_reducer.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "distributed/mpi_check.h"
#include "distributed/mpi_runtime.h"

namespace chainermn {

using chainer::DType;
using chainer::Error;
using chainer::Shape;
using chainer::Tensor;
using chainer::VariableNode;

namespace {

// The largest element count handed to one MPI call (counts are ints).
constexpr int64_t kMaxChunk = int64_t(1) << 30;

MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::Float32: return MPI_FLOAT;
    case DType::Float64: return MPI_DOUBLE;
    default: break;
  }
  throw chainer::InternalError("GradientReducer: no MPI type for this dtype");
}

template <class T>
void scale_into(T* dst, const T* src, int64_t n, double factor) {
  const T f = T(factor);
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i] * f;
}

}  // namespace

struct GradientReducer::Impl {
  struct Slot {
    std::weak_ptr<VariableNode> node;
    std::string name;
    Shape shape;
    DType dtype = DType::Float32;
    int64_t numel = 0;
    size_t bucket = 0;
    int64_t offset = 0;     // in elements, inside the bucket buffer
    bool fired = false;     // its gradient was final in this step
    bool had_grad = false;  // it had a gradient when its bucket was packed
  };
  struct Bucket {
    std::vector<size_t> slots;
    DType dtype = DType::Float32;
    int64_t numel = 0;
    size_t ready = 0;  // slots whose gradient is final
    bool launched = false;
    Tensor buffer;
    std::vector<MPI_Request> requests;
  };

  std::shared_ptr<Communicator> comm;
  GradientReducerOptions options;
  MPI_Comm mpi = MPI_COMM_NULL;
  int size = 1;
  bool attached = false;
  std::vector<Slot> slots;
  std::vector<Bucket> buckets;
  std::unordered_map<const VariableNode*, size_t> slot_of;
  size_t next = 0;       // the next bucket to start
  bool stale = false;    // a started bucket got a new gradient: redo everything at finalize
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
    auto it = slot_of.find(&node);
    if (it == slot_of.end()) return;
    Slot& slot = slots[it->second];
    Bucket& bucket = buckets[slot.bucket];
    if (bucket.launched) {
      stale = true;  // packed before this gradient changed: a second backward
    } else if (!slot.fired) {
      slot.fired = true;
      ++bucket.ready;
      if (bucket.ready == bucket.slots.size() && slot.bucket > next && !stale) ++stats.waited_for_earlier;
    }
    test_in_flight();
    if (!stale) launch_ready();
  }

  void launch_ready() {
    while (next < buckets.size() && buckets[next].ready == buckets[next].slots.size()) {
      launch(buckets[next]);
      ++next;
      ++stats.buckets_from_hooks;
    }
  }

  void test_in_flight() {
    for (size_t b = 0; b < next; ++b) {
      for (MPI_Request& r : buckets[b].requests) {
        if (r == MPI_REQUEST_NULL) continue;
        int done = 0;
        CHAINERMN_MPI_CHECK(MPI_Test(&r, &done, MPI_STATUS_IGNORE));
      }
    }
  }

  // Copies the bucket's gradients into its buffer, already multiplied by 1/size (while they are
  // still warm in cache from backward), so the sum over ranks is the mean and finalize() need
  // not touch the values again.
  void pack(Bucket& bucket) {
    // The previous step's gradients are views of the buffer (see unpack); if somebody still holds
    // one, this step gets a fresh buffer instead of overwriting theirs.
    if (!bucket.buffer.defined() || bucket.buffer.numel() != bucket.numel || bucket.buffer.storage().use_count() > 1)
      bucket.buffer = Tensor::empty({bucket.numel}, bucket.dtype);
    char* base = static_cast<char*>(bucket.buffer.raw_data());
    const size_t item = chainer::dtype_size(bucket.dtype);
    const double factor = 1.0 / double(size);
    for (size_t s : bucket.slots) {
      Slot& slot = slots[s];
      char* dst = base + size_t(slot.offset) * item;
      const size_t bytes = size_t(slot.numel) * item;
      std::shared_ptr<VariableNode> node = slot.node.lock();
      Tensor g = node ? node->grad : Tensor();
      slot.had_grad = g.defined();
      if (g.defined() && g.numel() == slot.numel) {
        if (g.dtype() != bucket.dtype) g = g.astype(bucket.dtype);
        g = g.contiguous();
        if (slot.dtype == DType::Float32)
          scale_into(reinterpret_cast<float*>(dst), g.data<float>(), slot.numel, factor);
        else
          scale_into(reinterpret_cast<double*>(dst), g.data<double>(), slot.numel, factor);
      } else {
        // No gradient in this step (or a shape the plan does not know, only possible while a
        // plan is being thrown away): zeros keep the collective the same on every rank.
        slot.had_grad = slot.had_grad && g.numel() == slot.numel;
        if (bytes) std::memset(dst, 0, bytes);
      }
    }
  }

  void launch(Bucket& bucket) {
    bucket.launched = true;
    bucket.requests.clear();
    if (size == 1) return;  // the mean of one rank is its own gradient: nothing to move
    pack(bucket);
    char* base = static_cast<char*>(bucket.buffer.raw_data());
    const size_t item = chainer::dtype_size(bucket.dtype);
    for (int64_t start = 0; start < bucket.numel; start += kMaxChunk) {
      const int count = int(std::min(kMaxChunk, bucket.numel - start));
      MPI_Request r = MPI_REQUEST_NULL;
      CHAINERMN_MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, base + size_t(start) * item, count, mpi_type(bucket.dtype),
                                         MPI_SUM, mpi, &r));
      bucket.requests.push_back(r);
    }
  }

  void wait_all() {
    std::vector<MPI_Request> all;
    for (Bucket& b : buckets) {
      all.insert(all.end(), b.requests.begin(), b.requests.end());
      b.requests.clear();
    }
    if (!all.empty()) CHAINERMN_MPI_CHECK(MPI_Waitall(int(all.size()), all.data(), MPI_STATUSES_IGNORE));
  }

  void reset_step() {
    for (Slot& s : slots) s.fired = s.had_grad = false;
    for (Bucket& b : buckets) {
      b.ready = 0;
      b.launched = false;
      b.requests.clear();
    }
    next = 0;
    stale = false;
  }

  // Starts every bucket not started yet, in order, and waits for all.
  void complete_all(bool count_stats) {
    for (; next < buckets.size(); ++next) {
      launch(buckets[next]);
      if (count_stats) ++stats.buckets_at_finalize;
    }
    wait_all();
  }

  void unpack() {
    if (size == 1) {
      if (!options.zero_fill) return;
      for (Slot& slot : slots)
        if (auto node = slot.node.lock(); node && !node->grad.defined())
          node->grad = Tensor::zeros(slot.shape, slot.dtype);
      return;
    }
    // The buffers hold the means (pack scaled by 1/size): each gradient becomes a view of its
    // bucket's buffer, so no value is copied again.
    for (Bucket& bucket : buckets) {
      for (size_t s : bucket.slots) {
        Slot& slot = slots[s];
        std::shared_ptr<VariableNode> node = slot.node.lock();
        if (!node) continue;
        if (!slot.had_grad && !options.zero_fill) continue;
        node->grad = bucket.buffer.narrow(0, slot.offset, slot.numel).reshape(slot.shape);
      }
    }
  }

  void finalize() {
    if (!attached) throw Error("GradientReducer.finalize: no link is attached; call attach(link) first");
    if (stale) {
      // Complete what was started (every rank started the same buckets), throw it away, and
      // reduce the accumulated gradients from scratch.
      wait_all();
      ++stats.restarts;
      for (Bucket& b : buckets) b.launched = false;
      next = 0;
      stale = false;
    }
    complete_all(true);
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
    wait_all();
    remove_hooks();
    slots.clear();
    buckets.clear();
    slot_of.clear();
    attached = false;
    reset_step();
  }
};

GradientReducer::GradientReducer(std::shared_ptr<Communicator> comm, GradientReducerOptions options)
    : impl_(std::make_shared<Impl>()) {
  if (!comm) throw Error("GradientReducer: the communicator is null");
  if (options.first_bucket_bytes == 0 || options.bucket_bytes == 0)
    throw Error("GradientReducer: bucket sizes must be positive");
  impl_->comm = std::move(comm);
  impl_->options = options;
  impl_->size = impl_->comm->size();
  CHAINERMN_MPI_CHECK(MPI_Comm_dup(impl_->comm->mpi_comm(), &impl_->mpi));
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
  const auto params = link.namedparams();
  // Reverse namedparams order: the order backward tends to finish the gradients.
  for (auto it = params.rbegin(); it != params.rend(); ++it) {
    const auto& [name, p] = *it;
    if (!p.data().defined()) continue;  // not initialized yet: not part of this plan
    if (m.slot_of.count(p.node())) continue;  // the same variable registered twice
    if (p.dtype() != DType::Float32 && p.dtype() != DType::Float64)
      throw Error(chainer::str("GradientReducer: parameter ", name, " has dtype ", chainer::dtype_name(p.dtype()),
                               "; only float32 and float64 parameters can be reduced"));
    Impl::Slot slot;
    slot.node = p.node_ptr();
    slot.name = name;
    slot.shape = p.shape();
    slot.dtype = p.dtype();
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
      fresh = last.dtype != slot.dtype || (bytes > 0 && bytes + size_t(slot.numel) * item > limit);
    }
    if (fresh) {
      m.buckets.emplace_back();
      m.buckets.back().dtype = slot.dtype;
    }
    Impl::Bucket& bucket = m.buckets.back();
    slot.bucket = m.buckets.size() - 1;
    slot.offset = bucket.numel;
    bucket.numel += slot.numel;
    bucket.slots.push_back(s);
  }
  for (const Impl::Slot& slot : m.slots)
    if (auto node = slot.node.lock()) node->grad_hooks.push_back(Impl::Hook{impl_});
  m.attached = true;
  m.reset_step();
}

void GradientReducer::detach() { impl_->detach(); }

bool GradientReducer::attached() const { return impl_->attached; }

bool GradientReducer::matches(const chainer::Link& link) const {
  const Impl& m = *impl_;
  if (!m.attached) return false;
  const auto params = link.namedparams();
  size_t s = 0;
  std::unordered_map<const VariableNode*, bool> seen;
  for (auto it = params.rbegin(); it != params.rend(); ++it) {
    const auto& p = it->second;
    if (!p.data().defined()) continue;
    if (!seen.emplace(p.node(), true).second) continue;
    if (s >= m.slots.size()) return false;
    const Impl::Slot& slot = m.slots[s++];
    if (slot.node.lock().get() != p.node() || slot.shape != p.shape() || slot.dtype != p.dtype()) return false;
  }
  return s == m.slots.size();
}

void GradientReducer::finalize() { impl_->finalize(); }

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
