#include "distributed/reducer/shared_memory_transport.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "core/tensor/float16.h"
#include "core/util/parallel.h"
#include "distributed/runtime/mpi_check.h"
#include "distributed/runtime/mpi_wait.h"
#include "distributed/runtime/shared_segment.h"

namespace chainermn {

using chainer::DType;
using chainer::Tensor;

namespace {

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

void fenced(const std::function<void()>& mpi_call) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  mpi_call();
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

// The same for float16 and bfloat16 (storage types, no arithmetic): each block is widened,
// summed in float32 over the ranks in order and rounded once.
template <class T>
void sum_16bit_into_regions(char* base, size_t stride, int regions, int64_t lo, int64_t hi) {
  constexpr int64_t kBlock = 512;
  auto at = [&](int j) { return reinterpret_cast<T*>(base + size_t(j) * stride); };
  chainer::parallel_for(hi - lo, 4 * kBlock, [&](int64_t begin, int64_t end) {
    float sum[kBlock], x[kBlock];
    for (int64_t b0 = lo + begin; b0 < lo + end; b0 += kBlock) {
      const int64_t m = std::min(lo + end, b0 + kBlock) - b0;
      chainer::widen(at(0) + b0, sum, m);
      for (int j = 1; j < regions; ++j) {
        chainer::widen(at(j) + b0, x, m);
        for (int64_t i = 0; i < m; ++i) sum[i] += x[i];
      }
      chainer::narrow(sum, at(0) + b0, m);
      for (int j = 1; j < regions; ++j) std::memcpy(at(j) + b0, at(0) + b0, size_t(m) * sizeof(T));
    }
  });
}

class SharedMemoryTransport final : public BucketTransport {
 public:
  struct Bucket {
    BucketLayout layout;
    size_t offset = 0, stride = 0;  // rank j's region: offset + j * stride bytes into the segment
    Tensor mine;                    // this rank's region
    Tensor target;                  // where this step packs: mine, or a private buffer when held
    bool held = false;
    Tensor means;
  };

  SharedMemoryTransport(MPI_Comm comm, std::vector<BucketLayout> layouts,
                        std::function<long(size_t, const std::shared_ptr<chainer::Storage>&)> own_views)
      : comm_(comm), own_views_(std::move(own_views)) {
    CHAINERMN_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    CHAINERMN_MPI_CHECK(MPI_Comm_size(comm_, &size_));
    size_t bytes = 0;
    for (BucketLayout& l : layouts) {
      Bucket b;
      b.layout = std::move(l);
      b.offset = bytes;
      b.stride = (size_t(b.layout.numel) * chainer::dtype_size(b.layout.dtype) + 63) / 64 * 64;
      bytes += b.stride * size_t(size_);
      buckets_.push_back(std::move(b));
    }
    segment_ = SharedSegment::create(comm_, bytes);
    if (!segment_) return;
    for (Bucket& b : buckets_) {
      auto storage = std::make_shared<chainer::Storage>(region(b, rank_), b.stride, chainer::Device{}, segment_);
      b.mine = Tensor::from_storage(std::move(storage), {b.layout.numel}, b.layout.dtype);
    }
  }
  bool usable() const { return segment_ != nullptr; }

  bool packs_early() const override { return true; }
  bool sums_at_finish() const override { return true; }

  Tensor buffer(size_t i) override {
    Bucket& b = buckets_[i];
    if (!b.target.defined()) {
      b.held = held(i);
      b.target = b.held ? Tensor::empty({b.layout.numel}, b.layout.dtype) : b.mine;
    }
    return b.target;
  }

  std::unique_ptr<PendingSum> start(size_t) override { return finished_sum(); }  // summed at finish_step

  // The all-reduce of the "held" flags is also what tells each rank that all have packed. The
  // barrier after summing keeps anybody from reading means not written yet (unless the caller
  // defers it, see GradientReducer::finalize). Nobody writes a region again before the next
  // step's flag all-reduce, which no rank reaches before it is done with this step's gradients.
  Finished finish_step(bool barrier) override {
    int any_held = 0, mine = 0;
    for (const Bucket& b : buckets_) mine |= b.held;
    fenced([&] { CHAINERMN_MPI_CHECK(mpi::allreduce(&mine, &any_held, 1, MPI_INT, MPI_MAX, comm_)); });
    if (any_held) {
      std::vector<std::unique_ptr<PendingSum>> sums;
      for (Bucket& b : buckets_) {
        b.means = b.held ? b.target : b.mine.clone();
        sums.push_back(start_mpi_sum(b.means, comm_));
      }
      for (auto& s : sums) s->wait();
      return {false, true};
    }
    for (Bucket& b : buckets_) {
      // Each rank sums the share of every parameter that it steps with a shared update
      // (share_of), so it can step right after, before the others are done.
      const size_t item = chainer::dtype_size(b.layout.dtype);
      for (const auto& [offset, numel] : b.layout.parts) {
        const auto [lo, hi] = share_of(numel, item, rank_, size_);
        switch (b.layout.dtype) {
          case DType::Float32: sum_into_regions<float>(region(b, 0), b.stride, size_, offset + lo, offset + hi); break;
          case DType::Float64: sum_into_regions<double>(region(b, 0), b.stride, size_, offset + lo, offset + hi); break;
          case DType::Float16:
            sum_16bit_into_regions<chainer::float16>(region(b, 0), b.stride, size_, offset + lo, offset + hi);
            break;
          case DType::BFloat16:
            sum_16bit_into_regions<chainer::bfloat16>(region(b, 0), b.stride, size_, offset + lo, offset + hi);
            break;
          default:
            throw chainer::InternalError(chainer::str("SharedMemoryTransport: cannot sum ", chainer::dtype_name(b.layout.dtype)));
        }
      }
      b.means = b.mine;
    }
    if (barrier) fenced([&] { CHAINERMN_MPI_CHECK(mpi::barrier(comm_)); });
    return {true, false};
  }

  Tensor means(size_t i) override { return buckets_[i].means; }

  void end_step() override {
    for (Bucket& b : buckets_) b.target = Tensor();
  }

 private:
  char* region(const Bucket& b, int j) const { return segment_->data() + b.offset + size_t(j) * b.stride; }

  // Whether somebody other than this transport and the bucket's own gradients (about to be
  // packed, and replaced by new views at the end of the step) still holds a view of this rank's
  // region: its values must then not be overwritten.
  bool held(size_t i) {
    Bucket& b = buckets_[i];
    if (b.means.defined() && b.means.storage() == b.mine.storage()) b.means = Tensor();
    const long ours = 1 + own_views_(i, b.mine.storage());  // mine, and the gradients
    return b.mine.storage().use_count() > ours;
  }

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  std::function<long(size_t, const std::shared_ptr<chainer::Storage>&)> own_views_;
  std::shared_ptr<SharedSegment> segment_;
  std::vector<Bucket> buckets_;
};

}  // namespace

std::unique_ptr<BucketTransport> shared_memory_transport(
    MPI_Comm comm, std::vector<BucketLayout> buckets,
    std::function<long(size_t, const std::shared_ptr<chainer::Storage>&)> own_views) {
  auto t = std::make_unique<SharedMemoryTransport>(comm, std::move(buckets), std::move(own_views));
  if (!t->usable()) return nullptr;
  return t;
}

}  // namespace chainermn
