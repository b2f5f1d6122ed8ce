#include "distributed/gradient_reducer.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <unordered_map>

#include "core/config.h"
#include "core/parallel.h"
#include "distributed/mpi_check.h"
#include "distributed/mpi_runtime.h"
#include "distributed/communicators/packing.h"
#include "distributed/shared_segment.h"

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

// For i in [lo, hi): the sum over ranks j of region j at i, written back into every region.
// Regions lie STRIDE bytes apart from BASE. Blocks small enough to stay in L1 between the sum and
// the copies; ranks are added in order, so every share is computed the same way.
template <class T>
void sum_into_regions(char* base, size_t stride, int regions, int64_t lo, int64_t hi) {
  constexpr int64_t kBlock = 2048;
  auto at = [&](int j) { return reinterpret_cast<T*>(base + size_t(j) * stride); };
  chainer::parallel_for(hi - lo, 4 * kBlock, [&](int64_t begin, int64_t end) {
    T* first = at(0);
    for (int64_t b0 = lo + begin; b0 < lo + end; b0 += kBlock) {
      const int64_t b1 = std::min(lo + end, b0 + kBlock);
      for (int j = 1; j < regions; ++j) {
        const T* in = at(j);
        for (int64_t i = b0; i < b1; ++i) first[i] += in[i];
      }
      for (int j = 1; j < regions; ++j) std::memcpy(at(j) + b0, first + b0, size_t(b1 - b0) * sizeof(T));
    }
  });
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
    bool packed = false;    // shared memory: copied into the segment from its hook this step
  };
  struct Bucket {
    std::vector<size_t> slots;
    DType dtype = DType::Float32;
    int64_t numel = 0;
    size_t ready = 0;  // slots whose gradient is final
    bool launched = false;
    Tensor buffer;  // the means after finalize; gradients are views of it
    std::vector<MPI_Request> requests;
    // With a shared segment: rank j packs into the region at shm_offset + j * shm_stride bytes,
    // which then receives the means; shm_mine wraps this rank's region. held: this step packed
    // into a private buffer because a view of shm_mine was still held.
    size_t shm_offset = 0, shm_stride = 0;
    Tensor shm_mine;
    bool held = false;
    Tensor pack_target;  // where this step packs: this rank's region, or buffer (undefined: not chosen)
  };

  std::shared_ptr<Communicator> comm;
  GradientReducerOptions options;
  MPI_Comm mpi = MPI_COMM_NULL;
  int size = 1;
  int rank = 0;
  std::shared_ptr<SharedSegment> segment;  // set when every rank runs on this host
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
    } else {
      if (!slot.fired) {
        slot.fired = true;
        ++bucket.ready;
        if (bucket.ready == bucket.slots.size() && slot.bucket > next && !stale) ++stats.waited_for_earlier;
      }
      // With shared memory there is no message to batch: copy the gradient into the segment
      // now, while backward has just written it and it is still in cache (again if a second
      // backward changed it).
      if (segment && !stale) {
        start_packing(bucket);
        pack_slot(bucket, slot);
      }
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

  // Chooses where BUCKET is packed this step (once per step).
  void start_packing(Bucket& bucket) {
    if (bucket.pack_target.defined()) return;
    if (segment && !(bucket.held = shared_region_held(bucket))) {
      bucket.buffer = Tensor();
      bucket.pack_target = bucket.shm_mine;
      return;
    }
    // The previous step's gradients are views of the buffer (see unpack); if somebody still
    // holds one, this step gets a fresh buffer instead of overwriting theirs.
    if (!bucket.buffer.defined() || bucket.buffer.numel() != bucket.numel || bucket.buffer.storage().use_count() > 1)
      bucket.buffer = Tensor::empty({bucket.numel}, bucket.dtype);
    bucket.pack_target = bucket.buffer;
  }

  // Copies SLOT's gradient into its place in the bucket, already multiplied by 1/size (while it
  // is still warm in cache from backward), so the sum over ranks is the mean and finalize()
  // need not touch the values again.
  void pack_slot(Bucket& bucket, Slot& slot) {
    std::shared_ptr<VariableNode> node = slot.node.lock();
    const Tensor g = node ? node->grad : Tensor();
    slot.had_grad = g.defined() && g.numel() == slot.numel;
    slot.packed = true;
    if (slot.had_grad) {
      packing::pack_one(g, bucket.pack_target, slot.offset, 1.0 / double(size));
    } else {
      // No gradient in this step (or a shape the plan does not know, only possible while a
      // plan is being thrown away): zeros keep the collective the same on every rank.
      packing::zero(bucket.pack_target, slot.offset, slot.numel);
    }
  }

  // Packs what the hooks have not packed yet.
  void pack(Bucket& bucket) {
    start_packing(bucket);
    for (size_t s : bucket.slots)
      if (!slots[s].packed) pack_slot(bucket, slots[s]);
  }

  char* region(const Bucket& bucket, int j) const {
    return segment->data() + bucket.shm_offset + size_t(j) * bucket.shm_stride;
  }

  // Whether somebody other than this reducer and the bucket's own gradients (about to be
  // packed, and replaced by new views at unpack) still holds a view of this rank's region: its
  // values must then not be overwritten.
  bool shared_region_held(Bucket& bucket) {
    if (bucket.buffer.defined() && bucket.buffer.storage() == bucket.shm_mine.storage()) bucket.buffer = Tensor();
    long ours = 1;  // shm_mine
    for (size_t s : bucket.slots)
      if (auto node = slots[s].node.lock(); node && node->grad.defined() &&
                                            node->grad.storage() == bucket.shm_mine.storage())
        ++ours;
    return bucket.shm_mine.storage().use_count() > ours;
  }

  void launch(Bucket& bucket) {
    bucket.launched = true;
    bucket.requests.clear();
    if (size == 1) return;  // the mean of one rank is its own gradient: nothing to move
    pack(bucket);
    if (segment) return;  // summed at finalize (shared_memory_reduce)
    allreduce_buffer(bucket);
  }

  // Starts the all-reduce (sum, in place) of BUCKET's private buffer.
  void allreduce_buffer(Bucket& bucket) {
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

  // Nothing of this step is packed or started any more (a restart, or the next step).
  void forget_packing() {
    for (Slot& s : slots) s.packed = false;
    for (Bucket& b : buckets) {
      b.launched = false;
      b.pack_target = Tensor();
    }
  }

  void reset_step() {
    forget_packing();
    for (Slot& s : slots) s.fired = s.had_grad = false;
    for (Bucket& b : buckets) {
      b.ready = 0;
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

  // The shared-memory step, once every bucket is packed into this rank's region: each rank
  // sums its share of every bucket over all ranks' regions and writes the sums back into every
  // region, so each rank's gradients become views of its own region (and what the optimizer or
  // its hooks do to them in place stays on that rank).
  //   - The all-reduce of the "held" flags (see pack) is also what tells each rank that all have
  //     packed. If any rank packed privately, every rank takes the MPI path for this step.
  //   - The barrier after summing keeps anybody from reading means not written yet (unless the
  //     caller defers it, see finalize). Nobody writes a region again before the next step's
  //     all-reduce, which no rank reaches before it is done with this step's gradients.
  void shared_memory_reduce(bool barrier) {
    int held = 0, any_held = 0;
    for (const Bucket& bucket : buckets) held |= bucket.held;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    CHAINERMN_MPI_CHECK(MPI_Allreduce(&held, &any_held, 1, MPI_INT, MPI_MAX, mpi));
    std::atomic_thread_fence(std::memory_order_seq_cst);
    for (Bucket& bucket : buckets) {
      const size_t item = chainer::dtype_size(bucket.dtype);
      if (any_held) {
        if (!bucket.held) {
          bucket.buffer = Tensor::empty({bucket.numel}, bucket.dtype);
          std::memcpy(bucket.buffer.raw_data(), region(bucket, rank), size_t(bucket.numel) * item);
        }
        allreduce_buffer(bucket);
        continue;
      }
      // Each rank sums the share of every parameter that it steps with a shared update
      // (share_of), so it can step right after, before the others are done.
      for (size_t si : bucket.slots) {
        const Slot& slot = slots[si];
        const auto [lo, hi] = share_of(slot.numel, item, rank, size);
        if (bucket.dtype == DType::Float32)
          sum_into_regions<float>(region(bucket, 0), bucket.shm_stride, size, slot.offset + lo, slot.offset + hi);
        else
          sum_into_regions<double>(region(bucket, 0), bucket.shm_stride, size, slot.offset + lo, slot.offset + hi);
      }
      bucket.buffer = bucket.shm_mine;
    }
    if (any_held) {
      wait_all();
      ++stats.held_fallbacks;
    } else {
      if (barrier) {
        std::atomic_thread_fence(std::memory_order_seq_cst);
        CHAINERMN_MPI_CHECK(MPI_Barrier(mpi));
        std::atomic_thread_fence(std::memory_order_seq_cst);
      }
      ++stats.shared_memory_steps;
    }
  }

  // With several ranks on this host only, a segment holding every bucket's regions and means.
  void create_segment() {
    segment.reset();
    if (size == 1 || !options.shared_memory || !chainer::config::env_flag("CHAINERMN_SHARED_MEMORY", true) || comm->intra_size() != size) return;
    size_t bytes = 0;
    for (Bucket& bucket : buckets) {
      const size_t item = chainer::dtype_size(bucket.dtype);
      bucket.shm_offset = bytes;
      bucket.shm_stride = (size_t(bucket.numel) * item + 63) / 64 * 64;
      bytes += bucket.shm_stride * size_t(size);
    }
    segment = SharedSegment::create(mpi, bytes);
    if (!segment) return;  // no room: every rank uses MPI
    for (Bucket& bucket : buckets) {
      auto storage = std::make_shared<chainer::Storage>(region(bucket, rank), bucket.shm_stride, chainer::Device{},
                                                        segment);
      bucket.shm_mine = Tensor::from_storage(std::move(storage), {bucket.numel}, bucket.dtype);
    }
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

  void finalize(bool barrier) {
    if (!attached) throw Error("GradientReducer.finalize: no link is attached; call attach(link) first");
    if (stale) {
      // Complete what was started (every rank started the same buckets), throw it away, and
      // reduce the accumulated gradients from scratch.
      wait_all();
      ++stats.restarts;
      forget_packing();
      next = 0;
      stale = false;
    }
    complete_all(true);
    if (segment) shared_memory_reduce(barrier);
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
    segment.reset();  // gradients still viewing it keep the mapping alive
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
  impl_->rank = impl_->comm->rank();
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
  m.create_segment();
  for (const Impl::Slot& slot : m.slots)
    if (auto node = slot.node.lock()) node->grad_hooks.push_back(Impl::Hook{impl_});
  m.attached = true;
  m.reset_step();
}

void GradientReducer::detach() { impl_->detach(); }

bool GradientReducer::attached() const { return impl_->attached; }

bool GradientReducer::uses_shared_memory() const { return impl_->segment != nullptr; }

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

void GradientReducer::finalize(bool barrier) { impl_->finalize(barrier); }

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
