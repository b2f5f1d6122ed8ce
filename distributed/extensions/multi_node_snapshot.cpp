#include "distributed/extensions/multi_node_snapshot.h"

#include <filesystem>

#include "core/util/error.h"
#include "training/trainer.h"

namespace chainermn::extensions {

using chainer::Error;
using chainer::str;

std::vector<std::set<int>> parse_replica_sets(const std::vector<std::vector<int>>& replica_sets, int size) {
  std::vector<std::set<int>> sets;
  std::set<int> seen;
  for (const std::vector<int>& given : replica_sets) {
    std::set<int> set;
    for (int rank : given) {
      if (rank < 0 || rank >= size)
        throw Error(str("multi_node_snapshot: rank ", rank, " in replica_sets is not a rank of a communicator of size ",
                        size));
      if (!seen.insert(rank).second) throw Error(str("multi_node_snapshot: rank ", rank, " is in two replica sets"));
      set.insert(rank);
    }
    if (!set.empty()) sets.push_back(std::move(set));
  }
  std::set<int> rest;
  for (int rank = 0; rank < size; ++rank)
    if (!seen.count(rank)) rest.insert(rank);
  if (!rest.empty()) sets.push_back(std::move(rest));
  return sets;
}

MultiNodeSnapshot::MultiNodeSnapshot(std::shared_ptr<Communicator> comm,
                                     std::shared_ptr<chainer::training::extensions::Snapshot> snapshot,
                                     const std::vector<std::vector<int>>& replica_sets)
    : comm_(std::move(comm)), snapshot_(std::move(snapshot)) {
  if (!comm_) throw Error("multi_node_snapshot: the communicator is null");
  if (!snapshot_) throw Error("multi_node_snapshot: the snapshot is null");
  snapshot_->set_filename(str(snapshot_->filename(), ".", comm_->rank()));
  for (std::set<int>& set : parse_replica_sets(replica_sets, comm_->size()))
    if (set.count(comm_->rank())) {
      master_ = *set.begin();
      replica_set_ = std::move(set);
    }
  CHAINER_ASSERT(master_ >= 0, "multi_node_snapshot: rank ", comm_->rank(), " is in no replica set");
}

void MultiNodeSnapshot::operator()(chainer::training::Trainer& trainer) {
  if (is_master()) (*snapshot_)(trainer);
}

void MultiNodeSnapshot::finalize() {
  if (is_master()) snapshot_->finalize();
}

void MultiNodeSnapshot::initialize(chainer::training::Trainer& trainer) {
  if (is_master()) snapshot_->initialize(trainer);
  if (!snapshot_->autoload()) return;
  auto serialize = [&](chainer::Serializer& s) {
    if (snapshot_->target()) snapshot_->target()->serialize(s);
    else trainer.serialize(s);
  };
  // "Broadcast" within the replica set: the master's loaded state, or nothing when it found no snapshot.
  bool loaded_any = false;
  if (is_master()) {
    chainer::TensorMap loaded;
    if (!chainer::training::extensions::find_latest_snapshot(snapshot_->filename(), trainer.out()).empty()) {
      chainer::Serializer s = chainer::Serializer::writer();
      serialize(s);
      loaded = s.entries();
      loaded_any = true;
    }
    for (int rank : replica_set_)
      if (rank != comm_->rank()) comm_->send_obj(loaded, rank);
  } else {
    chainer::TensorMap loaded = comm_->recv_obj<chainer::TensorMap>(master_);
    if (!loaded.empty()) {
      chainer::Serializer s = chainer::Serializer::reader(std::move(loaded));
      serialize(s);
      loaded_any = true;
    }
  }
  if (!comm_->debug()) return;
  // Debug mode: the ranks of each replica set must now hold the same parameters (a link whose
  // serialize leaves one out keeps each rank's own). A set that loaded nothing starts from its
  // ranks' own initial values, which the first update broadcasts: compared with none (a group of
  // its own per rank).
  std::vector<std::pair<std::string, chainer::Variable>> params;
  if (snapshot_->target()) {
    params = snapshot_->target()->namedparams();
  } else {
    for (auto& [name, optimizer] : trainer.updater().get_all_optimizers())
      for (auto& [path, p] : optimizer->target().namedparams()) params.emplace_back(name + path, p);
  }
  const int64_t group = loaded_any ? master_ : -1 - int64_t(comm_->rank());
  comm_->check_params_consistent(params, str("multi_node_snapshot: autoload in '", trainer.out(), "'"), group);
}

std::shared_ptr<MultiNodeSnapshot> multi_node_snapshot(std::shared_ptr<Communicator> comm,
                                                       std::shared_ptr<chainer::training::extensions::Snapshot> snapshot,
                                                       const std::vector<std::vector<int>>& replica_sets) {
  return std::make_shared<MultiNodeSnapshot>(std::move(comm), std::move(snapshot), replica_sets);
}

}  // namespace chainermn::extensions
