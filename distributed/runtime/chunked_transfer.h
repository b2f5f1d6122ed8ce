// Moving buffers of any size with MPI, whose counts are ints: every transfer is cut into chunks
// of at most max_chunk_bytes() (1 GiB), so tensors and byte strings over 2 GiB (or 2^31
// elements) go through as a sequence of messages. Chunks of one transfer use one tag and MPI
// keeps messages between two ranks with one tag in order, so the receiver reassembles them by
// position. These are the building blocks of Communicator; they check every MPI call.
#pragma once
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/tensor/dtype.h"

namespace chainermn::detail {

// The largest chunk, in bytes (1 GiB). Tests lower it to run the multi-chunk paths on small
// data; every rank must use the same value.
size_t max_chunk_bytes();
void set_max_chunk_bytes(size_t bytes);

// The MPI datatype of DTYPE's elements. Float16 and BFloat16 share a 2-byte type of our own
// (MPI has neither), on which MPI_SUM is an error rather than a sum of bit patterns.
MPI_Datatype mpi_datatype(chainer::DType dtype);
// The elementwise sum of DTYPE for reductions over mpi_datatype(DTYPE): MPI_SUM, or for Float16
// and BFloat16 an MPI_Op of our own (commutative) that adds each pair in float and rounds the sum
// back to nearest even, as a GPU's half-precision add does. Those types and ops are made at the
// first call and freed as MPI_Finalize begins (an attribute of MPI_COMM_SELF, whose delete
// callback MPI runs first thing in MPI_Finalize), however MPI gets finalized.
MPI_Op mpi_sum_op(chainer::DType dtype);

void send_chunked(const void* data, size_t nbytes, int dest, int tag, MPI_Comm comm);
void recv_chunked(void* data, size_t nbytes, int source, int tag, MPI_Comm comm);
// Non-blocking: appends the requests to REQUESTS; DATA must stay alive until they complete.
void isend_chunked(const void* data, size_t nbytes, int dest, int tag, MPI_Comm comm,
                   std::vector<MPI_Request>& requests);
void wait_all(std::vector<MPI_Request>& requests);
void bcast_chunked(void* data, size_t nbytes, int root, MPI_Comm comm);
// In-place elementwise sum over COMM of COUNT elements of DTYPE (float16, bfloat16, float32,
// float64, int32, int64).
void allreduce_sum_chunked(void* data, int64_t count, chainer::DType dtype, MPI_Comm comm);

}  // namespace chainermn::detail
