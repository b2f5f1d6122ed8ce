#include "distributed/runtime/chunked_transfer.h"

#include <algorithm>
#include <atomic>

#include "core/util/error.h"
#include "distributed/runtime/mpi_check.h"
#include "distributed/runtime/mpi_wait.h"

namespace chainermn::detail {

namespace {
std::atomic<size_t> g_max_chunk_bytes{size_t(1) << 30};

int chunk_count(size_t bytes) { return int(bytes); }  // bytes <= max_chunk_bytes() < 2^31

// The MPI objects of the 16-bit dtypes (mpi_sum_op). Only the main thread calls MPI
// (MPI_THREAD_FUNNELED, mpi_runtime.h), so a plain global suffices.
struct SixteenBit {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Op sum_float16 = MPI_OP_NULL, sum_bfloat16 = MPI_OP_NULL;
} g_16bit;

// INOUT += IN, elementwise. Added in float: with 24 bits against 11 (or 8), rounding the float
// sum again to 16 bits gives the correctly rounded sum (Figueroa, "When is double rounding
// innocuous?", 1995). In blocks that stay in L1, converted by the vectorized loops of float16.h.
template <class T>
void sum_16bit(void* in, void* inout, int* len, MPI_Datatype*) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  constexpr int kBlock = 512;
  float x[kBlock], y[kBlock];
  for (int at = 0, n = *len; at < n; at += kBlock) {
    const int m = std::min(kBlock, n - at);
    chainer::widen(a + at, x, m);
    chainer::widen(b + at, y, m);
    for (int i = 0; i < m; ++i) y[i] += x[i];
    chainer::narrow(y, b + at, m);
  }
}

int free_16bit(MPI_Comm, int, void*, void*) {
  MPI_Op_free(&g_16bit.sum_float16);
  MPI_Op_free(&g_16bit.sum_bfloat16);
  MPI_Type_free(&g_16bit.type);
  g_16bit = SixteenBit{};
  return MPI_SUCCESS;
}

const SixteenBit& sixteen_bit() {
  if (g_16bit.type == MPI_DATATYPE_NULL) {
    // Bytes, not MPI_UINT16_T: MPI's own sum would add the bit patterns as integers.
    CHAINERMN_MPI_CHECK(MPI_Type_contiguous(2, MPI_BYTE, &g_16bit.type));
    CHAINERMN_MPI_CHECK(MPI_Type_commit(&g_16bit.type));
    CHAINERMN_MPI_CHECK(MPI_Op_create(&sum_16bit<chainer::float16>, 1, &g_16bit.sum_float16));
    CHAINERMN_MPI_CHECK(MPI_Op_create(&sum_16bit<chainer::bfloat16>, 1, &g_16bit.sum_bfloat16));
    int key = MPI_KEYVAL_INVALID;
    CHAINERMN_MPI_CHECK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_16bit, &key, nullptr));
    CHAINERMN_MPI_CHECK(MPI_Comm_set_attr(MPI_COMM_SELF, key, nullptr));
    CHAINERMN_MPI_CHECK(MPI_Comm_free_keyval(&key));  // the attribute, and its callback, stay
  }
  return g_16bit;
}
}  // namespace

size_t max_chunk_bytes() { return g_max_chunk_bytes.load(); }

void set_max_chunk_bytes(size_t bytes) {
  if (bytes < 8 || bytes > (size_t(1) << 30))
    throw chainer::Error(chainer::str("set_max_chunk_bytes: ", bytes, " is outside [8, 2^30]"));
  g_max_chunk_bytes = bytes;
}

MPI_Datatype mpi_datatype(chainer::DType dtype) {
  switch (dtype) {
    case chainer::DType::Float32: return MPI_FLOAT;
    case chainer::DType::Float64: return MPI_DOUBLE;
    case chainer::DType::Int32: return MPI_INT32_T;
    case chainer::DType::Int64: return MPI_INT64_T;
    case chainer::DType::UInt8: return MPI_UINT8_T;
    case chainer::DType::Float16:
    case chainer::DType::BFloat16: return sixteen_bit().type;
  }
  throw chainer::Error("mpi_datatype: unknown dtype");
}

MPI_Op mpi_sum_op(chainer::DType dtype) {
  if (dtype == chainer::DType::Float16) return sixteen_bit().sum_float16;
  if (dtype == chainer::DType::BFloat16) return sixteen_bit().sum_bfloat16;
  return MPI_SUM;
}

void send_chunked(const void* data, size_t nbytes, int dest, int tag, MPI_Comm comm) {
  const char* p = static_cast<const char*>(data);
  const size_t chunk = max_chunk_bytes();
  for (size_t off = 0; off < nbytes; off += chunk) {
    const size_t n = std::min(chunk, nbytes - off);
    CHAINERMN_MPI_CHECK(mpi::send(p + off, chunk_count(n), MPI_BYTE, dest, tag, comm));
  }
}

void recv_chunked(void* data, size_t nbytes, int source, int tag, MPI_Comm comm) {
  char* p = static_cast<char*>(data);
  const size_t chunk = max_chunk_bytes();
  for (size_t off = 0; off < nbytes; off += chunk) {
    const size_t n = std::min(chunk, nbytes - off);
    MPI_Status status;
    CHAINERMN_MPI_CHECK(mpi::recv(p + off, chunk_count(n), MPI_BYTE, source, tag, comm, &status));
    int got = 0;
    CHAINERMN_MPI_CHECK(MPI_Get_count(&status, MPI_BYTE, &got));
    if (size_t(got) != n)
      throw chainer::Error(chainer::str("recv: expected a chunk of ", n, " bytes from rank ", source, " but got ", got,
                                        " (are sender and receiver out of step?)"));
  }
}

void isend_chunked(const void* data, size_t nbytes, int dest, int tag, MPI_Comm comm,
                   std::vector<MPI_Request>& requests) {
  const char* p = static_cast<const char*>(data);
  const size_t chunk = max_chunk_bytes();
  for (size_t off = 0; off < nbytes; off += chunk) {
    const size_t n = std::min(chunk, nbytes - off);
    MPI_Request req;
    CHAINERMN_MPI_CHECK(MPI_Isend(p + off, chunk_count(n), MPI_BYTE, dest, tag, comm, &req));
    requests.push_back(req);
  }
}

void wait_all(std::vector<MPI_Request>& requests) {
  if (requests.empty()) return;
  CHAINERMN_MPI_CHECK(mpi::wait_all(int(requests.size()), requests.data(), MPI_STATUSES_IGNORE));
  requests.clear();
}

void bcast_chunked(void* data, size_t nbytes, int root, MPI_Comm comm) {
  char* p = static_cast<char*>(data);
  const size_t chunk = max_chunk_bytes();
  for (size_t off = 0; off < nbytes; off += chunk) {
    const size_t n = std::min(chunk, nbytes - off);
    CHAINERMN_MPI_CHECK(mpi::bcast(p + off, chunk_count(n), MPI_BYTE, root, comm));
  }
}

void allreduce_sum_chunked(void* data, int64_t count, chainer::DType dtype, MPI_Comm comm) {
  if (dtype == chainer::DType::UInt8)
    throw chainer::Error("allreduce: dtype uint8 cannot be summed (use float16, bfloat16, float32, float64, int32 or int64)");
  const size_t item = chainer::dtype_size(dtype);
  const int64_t per_chunk = int64_t(std::max<size_t>(1, max_chunk_bytes() / item));
  const MPI_Datatype type = mpi_datatype(dtype);
  const MPI_Op sum = mpi_sum_op(dtype);
  char* p = static_cast<char*>(data);
  for (int64_t off = 0; off < count; off += per_chunk) {
    const int64_t n = std::min(per_chunk, count - off);
    CHAINERMN_MPI_CHECK(mpi::allreduce(MPI_IN_PLACE, p + size_t(off) * item, int(n), type, sum, comm));
  }
}

}  // namespace chainermn::detail
