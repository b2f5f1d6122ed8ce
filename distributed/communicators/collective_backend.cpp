#include "distributed/communicators/collective_backend.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "core/util/error.h"
#include "distributed/runtime/chunked_transfer.h"
#include "distributed/runtime/mpi_check.h"
#include "distributed/runtime/mpi_wait.h"

namespace chainermn {

using chainer::Error;
using chainer::Tensor;

std::vector<int64_t> even_shares(int64_t n, int parts) {
  std::vector<int64_t> shares(size_t(parts), n / parts);
  for (int i = 0; i < int(n % parts); ++i) ++shares[size_t(i)];
  return shares;
}

namespace {

// What MPI is handed for a buffer (mpi_accessible: host memory, or device memory when MPI is
// CUDA-aware). Host code never touches its values through a pointer: MpiBuffer gives addresses
// only for MPI calls, and the one host-side operation the collectives need, moving elements
// within the buffer, goes through HostBytes, which only host memory yields, or through the
// tensor's own device.
class HostBytes {
 public:
  // Throws InternalError for memory that is not the host's.
  explicit HostBytes(Tensor& t) : bytes_(static_cast<char*>(t.raw_data())), item_(t.itemsize()) {
    if (!t.device().is_cpu())
      throw chainer::InternalError(chainer::str("HostBytes: ", t.device().str(), " memory is not host memory"));
  }
  // N elements from FROM to TO (the ranges may overlap).
  void move(int64_t to, int64_t from, int64_t n) {
    std::memmove(bytes_ + to * int64_t(item_), bytes_ + from * int64_t(item_), size_t(n) * item_);
  }

 private:
  char* bytes_;
  size_t item_;
};

class MpiBuffer {
 public:
  explicit MpiBuffer(Tensor& t) : t_(t) {}
  chainer::DType dtype() const { return t_.dtype(); }
  int64_t numel() const { return t_.numel(); }
  size_t itemsize() const { return t_.itemsize(); }
  // Where element AT is, for an MPI call (device memory with a CUDA-aware MPI).
  void* mpi_address(int64_t at = 0) const { return static_cast<char*>(t_.raw_data()) + at * int64_t(t_.itemsize()); }
  // N elements from FROM to TO (the ranges may overlap): in host memory a memmove, in device
  // memory a copy on the device.
  void move(int64_t to, int64_t from, int64_t n) {
    if (n == 0 || to == from) return;
    if (t_.device().is_cpu()) return HostBytes(t_).move(to, from, n);
    const Tensor flat = t_.reshape({t_.numel()});
    flat.narrow(0, to, n).copy_(flat.narrow(0, from, n).clone());
  }

 private:
  Tensor& t_;
};

class MpiBackend final : public CollectiveBackend {
 public:
  MpiBackend(MPI_Comm comm, DeviceMemory device) : comm_(comm), staged_(device == DeviceMemory::Staged) {
    CHAINERMN_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    CHAINERMN_MPI_CHECK(MPI_Comm_size(comm_, &size_));
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  // Each collective on what MPI may be handed for BUF (pending_sum.h: BUF itself in host memory
  // or with CUDA-aware MPI, else a host copy written back).
  void reduce(Tensor& buf, int root) const override { on_accessible(buf, [&](MpiBuffer& b) { reduce_accessible(b, root); }); }
  void allreduce(Tensor& buf) const override { on_accessible(buf, [&](MpiBuffer& b) { allreduce_accessible(b); }); }
  void bcast(Tensor& buf, int root) const override { on_accessible(buf, [&](MpiBuffer& b) { bcast_accessible(b, root); }); }
  void reduce_scatter(Tensor& buf, const std::vector<int64_t>& shares) const override {
    on_accessible(buf, [&](MpiBuffer& b) { reduce_scatter_accessible(b, shares); });
  }
  void allgather(Tensor& buf, const std::vector<int64_t>& shares) const override {
    on_accessible(buf, [&](MpiBuffer& b) { allgather_accessible(b, shares); });
  }

 private:
  template <class Fn>
  void on_accessible(Tensor& buf, Fn&& fn) const {
    on_mpi_accessible(
        buf,
        [&](Tensor& t) {
          MpiBuffer b(t);
          fn(b);
        },
        staged_);
  }

  void reduce_accessible(MpiBuffer& buf, int root) const {
    const MPI_Datatype type = detail::mpi_datatype(buf.dtype());
    const MPI_Op sum = detail::mpi_sum_op(buf.dtype());
    for_chunks(buf, [&](int64_t at, int count) {
      void* p = buf.mpi_address(at);
      CHAINERMN_MPI_CHECK(mpi::reduce(rank_ == root ? MPI_IN_PLACE : p, rank_ == root ? p : nullptr, count, type, sum,
                                     root, comm_));
    });
  }
  void allreduce_accessible(MpiBuffer& buf) const {
    detail::allreduce_sum_chunked(buf.mpi_address(), buf.numel(), buf.dtype(), comm_);
  }
  void bcast_accessible(MpiBuffer& buf, int root) const {
    detail::bcast_chunked(buf.mpi_address(), size_t(buf.numel()) * buf.itemsize(), root, comm_);
  }

  void reduce_scatter_accessible(MpiBuffer& buf, const std::vector<int64_t>& shares) const {
    const std::vector<int> counts = int_counts(shares, "reduce_scatter");
    // In place, MPI leaves this rank's sum at the start of the buffer: move it to its share.
    CHAINERMN_MPI_CHECK(mpi::reduce_scatter(MPI_IN_PLACE, buf.mpi_address(), counts.data(),
                                           detail::mpi_datatype(buf.dtype()), detail::mpi_sum_op(buf.dtype()), comm_));
    buf.move(offset_of(shares, rank_), 0, shares[size_t(rank_)]);
  }
  void allgather_accessible(MpiBuffer& buf, const std::vector<int64_t>& shares) const {
    const std::vector<int> counts = int_counts(shares, "allgather");
    std::vector<int> displs(counts.size(), 0);
    for (size_t i = 1; i < counts.size(); ++i) displs[i] = displs[i - 1] + counts[i - 1];
    CHAINERMN_MPI_CHECK(mpi::allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf.mpi_address(), counts.data(), displs.data(),
                                       detail::mpi_datatype(buf.dtype()), comm_));
  }

 private:
  // FN(first element, count) over BUF in chunks of at most max_chunk_bytes().
  template <class Fn>
  static void for_chunks(const MpiBuffer& buf, Fn&& fn) {
    const int64_t step = std::max<int64_t>(1, int64_t(detail::max_chunk_bytes() / buf.itemsize()));
    for (int64_t at = 0; at < buf.numel(); at += step) fn(at, int(std::min(step, buf.numel() - at)));
  }
  static int64_t offset_of(const std::vector<int64_t>& shares, int member) {
    int64_t at = 0;
    for (int i = 0; i < member; ++i) at += shares[size_t(i)];
    return at;
  }
  // Shares as MPI's int counts: the displacements of MPI's v-collectives are ints too.
  static std::vector<int> int_counts(const std::vector<int64_t>& shares, const char* op) {
    std::vector<int> counts;
    int64_t total = 0;
    for (int64_t s : shares) {
      total += s;
      counts.push_back(int(s));
    }
    if (total > INT_MAX)
      throw Error(chainer::str(op, ": ", total, " elements are more than one MPI call can address (", INT_MAX,
                               "); use the flat or hierarchical communicator for buffers this large"));
    return counts;
  }

  MPI_Comm comm_;
  bool staged_ = false;
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::unique_ptr<CollectiveBackend> mpi_backend(MPI_Comm comm, DeviceMemory device) {
  return std::make_unique<MpiBackend>(comm, device);
}

}  // namespace chainermn
