/// @file
/// SharedUpdate: on one host, the ranks of a multi-node optimizer keep ONE copy of the
/// parameters and of the optimizer state, in a shared-memory segment, and each rank steps a share
/// of every parameter (ZeRO stage 1 within a host; the updated shares need no exchange, the memory
/// is the same). After the gradients are averaged every rank holds the same gradients, so without
/// this each rank repeats the same step over all parameters: N ranks stream N times the optimizer's
/// memory traffic (Adam reads and writes 28 bytes per parameter per step) and keep N copies of its
/// state, which on a memory-bound host is the largest cost that data parallelism adds.
///
/// Layout: per parameter (initialized, namedparams order) a slot for its data and one per state
/// key, each on a 64-byte boundary. Rank r steps the flat elements [edge(r), edge(r+1)), edge(j) =
/// numel * j / size rounded down to a cache line, so no two ranks write one line, and each split
/// falls where the vectorized step would start a new vector anyway: the results are those of the
/// whole step, bit for bit.
///
/// Binding is lazy, in prepare() (see chainer::UpdatePartition): a parameter or state tensor not in
/// its slot (the first step, state restored from a snapshot, a parameter replaced by hand) has this
/// rank's share copied there and becomes a view of the slot; the other shares are written by their
/// owners in the same update. A missing state tensor starts as zeros. finish_step() is a barrier:
/// after it every share of this update is written, so each rank's next forward reads the same
/// parameters. Nobody writes them again before the next update's steps, which begin after that
/// update's gradient averaging, and no rank's averaging completes before every rank has finished
/// its backward, i.e. its reading of the parameters (with double buffering the averaging waited for
/// is the previous update's, so the multi-node optimizer calls barrier() before the steps). Optimizer hooks may read any parameter
/// (WeightDecay does), so with hooks before_steps() is a barrier too.
///
/// Rules: every rank of COMM runs on this host and updates in lockstep (as for any multi-node
/// optimizer); parameters are not edited in place on some ranks only (every rank loading the same
/// snapshot is fine: all write the same values). Optimizer::set_update_partition(nullptr) copies
/// everything back into private memory.
#pragma once
#include <mpi.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "distributed/runtime/shared_segment.h"
#include "nn/link.h"
#include "nn/optimizer.h"

namespace chainermn {

/// One shared copy of a link's parameters and optimizer state, each rank stepping a share of it.
class SharedUpdate : public chainer::UpdatePartition {
 public:
  /// Collective over COMM, whose ranks must all run on this host: lays out LINK's initialized
  /// parameters with one state tensor per entry of STATE_KEYS each. Null on every rank when the
  /// segment cannot be made (no room in /dev/shm) or a parameter is not float32/float64.
  static std::shared_ptr<SharedUpdate> create(MPI_Comm comm, const chainer::Link& link,
                                              const std::vector<std::string>& state_keys);

  /// Whether the layout covers exactly LINK's initialized parameters (names, shapes, dtypes).
  bool matches(const chainer::Link& link) const;
  /// Collective: makes every planned parameter of LINK a view of its slot now, each rank copying
  /// its share, then a barrier (the parameters must be equal on every rank, as after bcast_data).
  /// Without it a parameter is bound at its first step, and a graph recorded before then keeps the
  /// private copy: a GAN's generator loss, backpropagated through the discriminator's graph after
  /// the discriminator's update, would see the discriminator's parameters before that step on the
  /// first update only, where one process (stepping in place, as Chainer) sees them after it.
  void bind_parameters(chainer::Link& link);
  /// Every rank's share of this update is written once every rank has returned (a barrier).
  void finish_step();
  /// A barrier over the ranks: after it every rank has finished this update's backward (its
  /// reading of the parameters), so the steps may write them.
  void barrier() const;

  /// A barrier when HOOKS_RAN (hooks may read any parameter); nothing otherwise.
  void before_steps(bool hooks_ran) override;
  std::pair<int64_t, int64_t> prepare(const std::string& name, chainer::Variable& param, chainer::TensorMap& state,
                                      const std::vector<std::string>& keys) override;
  bool holds(const chainer::Tensor& t) const override;

 private:
  struct Slot {
    chainer::Shape shape;
    chainer::DType dtype = chainer::DType::Float32;
    int64_t first = 0, last = 0;            // this rank's share, in elements
    chainer::Tensor data;                   // the parameter's place (a view of the segment)
    std::map<std::string, chainer::Tensor> state;  // one place per state key
  };
  SharedUpdate(MPI_Comm comm, std::shared_ptr<SharedSegment> segment) : comm_(comm), segment_(std::move(segment)) {}
  // Makes T a view of PLACE, copying this rank's share of T into it first (zeros when T is
  // undefined); nothing when T already is PLACE.
  void bind(chainer::Tensor& t, const chainer::Tensor& place, const Slot& slot) const;

  MPI_Comm comm_;
  std::shared_ptr<SharedSegment> segment_;
  std::map<std::string, Slot> slots_;  // by parameter name
};

}  // namespace chainermn
