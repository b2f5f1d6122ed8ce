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

#include "core/dtype.h"

namespace chainermn::detail {

// The largest chunk, in bytes (1 GiB). Tests lower it to run the multi-chunk paths on small
// data; every rank must use the same value.
size_t max_chunk_bytes();
void set_max_chunk_bytes(size_t bytes);

// The MPI datatype of DTYPE's elements.
MPI_Datatype mpi_datatype(chainer::DType dtype);

void send_chunked(const void* data, size_t nbytes, int dest, int tag, MPI_Comm comm);
void recv_chunked(void* data, size_t nbytes, int source, int tag, MPI_Comm comm);
// Non-blocking: appends the requests to REQUESTS; DATA must stay alive until they complete.
void isend_chunked(const void* data, size_t nbytes, int dest, int tag, MPI_Comm comm,
                   std::vector<MPI_Request>& requests);
void wait_all(std::vector<MPI_Request>& requests);
void bcast_chunked(void* data, size_t nbytes, int root, MPI_Comm comm);
// In-place elementwise sum over COMM of COUNT elements of DTYPE (float32, float64, int32, int64).
void allreduce_sum_chunked(void* data, int64_t count, chainer::DType dtype, MPI_Comm comm);

}  // namespace chainermn::detail
