/// @file
/// multi_node_snapshot, as ChainerMN's chainermn.extensions.multi_node_snapshot: a snapshot
/// extension for a job whose ranks fall into replica sets, the ranks of a set holding the same
/// state (often rank 0, with the reports, and the rest). Only the smallest rank of each set
/// writes (its file name gets ".{rank}" appended); with the snapshot's autoload it loads the
/// newest one at initialize and sends what it loaded to the other ranks of its set.
#pragma once
#include <memory>
#include <set>
#include <vector>

#include "distributed/communicators/communicator.h"
#include "training/extensions/snapshot.h"

namespace chainermn::extensions {

/// The replica sets of a job of SIZE ranks, as ChainerMN's _parse_replica_sets: each given set,
/// then the ranks in none of them as one more set. Throws chainer::Error for a rank outside
/// [0, SIZE) or one in two sets.
std::vector<std::set<int>> parse_replica_sets(const std::vector<std::vector<int>>& replica_sets, int size);

/// Runs a Snapshot on the smallest rank of each replica set (ChainerMN's _MultiNodeSnapshot).
class MultiNodeSnapshot : public chainer::training::Extension {
 public:
  /// Wraps SNAPSHOT (its filename gets ".{rank}" appended) for the ranks of COMM in REPLICA_SETS.
  MultiNodeSnapshot(std::shared_ptr<Communicator> comm, std::shared_ptr<chainer::training::extensions::Snapshot> snapshot,
                    const std::vector<std::vector<int>>& replica_sets);
  /// The master saves; the other ranks of its set do nothing.
  void operator()(chainer::training::Trainer& trainer) override;
  std::string default_name() const override { return snapshot_->default_name(); }  ///< The snapshot's.
  /// The snapshot's (every epoch).
  chainer::training::Trigger default_trigger() const override { return snapshot_->default_trigger(); }
  int priority() const override { return snapshot_->priority(); }  ///< The snapshot's (-100).
  /// With the snapshot's autoload (collective within each replica set): the master loads its
  /// newest snapshot and sends the loaded state to the rest of its set, which load it. In debug
  /// mode (Communicator::debug) the ranks of each set that loaded then compare their parameters
  /// (Communicator::check_params_consistent; collective over the whole communicator) and throw
  /// on every rank when they differ.
  void initialize(chainer::training::Trainer& trainer) override;
  void finalize() override;  ///< The master finalizes the snapshot.

  bool is_master() const { return master_ == comm_->rank(); }  ///< Whether this rank writes.
  int master() const { return master_; }  ///< The smallest rank of this rank's replica set.
  const std::set<int>& replica_set() const { return replica_set_; }  ///< This rank's replica set.

 private:
  std::shared_ptr<Communicator> comm_;
  std::shared_ptr<chainer::training::extensions::Snapshot> snapshot_;
  std::set<int> replica_set_;
  int master_ = -1;
};

/// As chainermn.extensions.multi_node_snapshot(comm, snapshot, replica_sets):
///
///     auto snapshot = E::snapshot();
///     snapshot->set_autoload(true);
///     trainer.extend(chainermn::extensions::multi_node_snapshot(comm, snapshot, {{0}}), "",
///                    IntervalTrigger(1, Unit::Epoch));
///
/// REPLICA_SETS lists sets of ranks (ChainerMN's single integer r is the set {r}); the ranks in
/// none form one more set: {{0}} at 4 processes is {0}, {1, 2, 3}; {} is one set of all.
std::shared_ptr<MultiNodeSnapshot> multi_node_snapshot(std::shared_ptr<Communicator> comm,
                                                       std::shared_ptr<chainer::training::extensions::Snapshot> snapshot,
                                                       const std::vector<std::vector<int>>& replica_sets);

}  // namespace chainermn::extensions
