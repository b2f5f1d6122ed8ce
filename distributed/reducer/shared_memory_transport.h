// The gradient reducer's transport on one host (distributed/reducer/bucket_transport.h): every bucket
// has a region per rank in one shared-memory segment (distributed/runtime/shared_segment.h). Each rank
// packs its gradients into its own region from their hooks; finish_step sums, on each rank, its
// share (share_of) of every parameter over all ranks' regions and writes the sums back into
// every region, and each rank's gradients become views of its own region, so what the optimizer
// or its hooks then do to them in place stays on that rank. No bytes are copied between
// processes by MPI (docs/design.md, "Averaging on one host", has the reasons and figures).
//
// A view of a region still held from the last step (beyond the bucket's own gradients) must not
// be overwritten: that rank packs privately, and since the ranks learn it from one all-reduce
// of flags, every rank then sums this step with MPI instead (Finished::held_fallback).
#pragma once
#include <mpi.h>

#include <functional>
#include <memory>

#include "distributed/reducer/bucket_transport.h"

namespace chainermn {

// Collective over COMM (whose ranks must all run on this host). OWN_VIEWS(b, storage) counts the
// bucket's own gradients that view STORAGE. Null on every rank when the segment cannot be made.
std::unique_ptr<BucketTransport> shared_memory_transport(
    MPI_Comm comm, std::vector<BucketLayout> buckets,
    std::function<long(size_t b, const std::shared_ptr<chainer::Storage>& storage)> own_views);

}  // namespace chainermn
