/// @file
/// A block of memory that every process of a one-host communicator maps (POSIX shared memory).
/// The gradient reducer uses it to average gradients on one host without MPI copying them: each
/// rank writes its gradients there, each sums a share of every rank's values, and all read the
/// means in place.
///
/// create() is collective: rank 0 makes and sizes the segment, the others map it, and its name is
/// removed as soon as everybody has it, so nothing is left in /dev/shm even if the job dies
/// later. A job killed inside that window leaves its name behind; the next create() on the host
/// removes names whose creating process is gone. Unmapping is local: the mapping goes when the
/// last shared_ptr does, so tensors wrapping it (core/tensor/storage.h) stay valid on their own.
#pragma once
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

namespace chainermn {

/// A block of POSIX shared memory that every process of a one-host communicator maps.
class SharedSegment {
 public:
  /// Collective over COMM, whose ranks must all run on this host. Returns null on every rank when
  /// any rank could not map BYTES (no room in /dev/shm, say), so callers can agree on a fallback.
  static std::shared_ptr<SharedSegment> create(MPI_Comm comm, size_t bytes);
  /// Unmaps the segment (local).
  ~SharedSegment();
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;

  char* data() const { return data_; }  ///< The start of this process's mapping.
  size_t bytes() const { return bytes_; }  ///< The segment's size in bytes.

 private:
  SharedSegment(char* data, size_t bytes) : data_(data), bytes_(bytes) {}
  char* data_;
  size_t bytes_;
};

/// The elements `[first, second)` of an array of NUMEL elements of ITEM bytes that rank RANK of
/// SIZE works on when the ranks of a host split work on a shared array: from `numel * rank / size`,
/// rounded down to a 64-byte cache line, to the next rank's start (the last rank takes the rest).
/// The gradient reducer sums, and the shared update steps, the same share of every parameter, so
/// a rank can step its share right after summing it, without waiting for the others.
std::pair<int64_t, int64_t> share_of(int64_t numel, size_t item, int rank, int size);

}  // namespace chainermn
