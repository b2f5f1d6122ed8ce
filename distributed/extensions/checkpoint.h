/// @file
/// create_multi_node_checkpointer, as ChainerMN's chainermn.extensions.create_multi_node_checkpointer:
/// generational per-rank snapshots of the whole trainer for fault tolerance. Each rank writes
/// `{path}/{name}.{rank}.{iteration}`; maybe_load finds, by a collective, the newest iteration
/// that every rank saved and resumes from it. Beyond ChainerMN: a save is atomic and durable
/// (temporary file, fsync, rename, fsync of the directory), so a job killed mid-save keeps its
/// previous checkpoint; a file that cannot be loaded is an error on every rank naming it; and
/// finalize keeps the checkpoints (ChainerMN removes them, also when training ends by an
/// exception, which is when they are needed). Each file also records the process count that
/// wrote it: a restart with another count is an error on every rank (the iterators' positions
/// are per rank), never a silent start from iteration 0 or a load of some ranks' files.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "distributed/communicators/communicator.h"
#include "training/extension.h"
#include "training/trainer.h"

namespace chainermn {

/// How long each checkpoint took to write: ChainerMN's checkpointer statistics.
struct CheckpointTiming {
  double begin = 0;     ///< When the save began, in seconds since the epoch ('b' in ChainerMN).
  double duration = 0;  ///< How long it took, in seconds ('d' in ChainerMN).
};

/// Generational per-rank snapshots of a trainer (ChainerMN's _MultiNodeCheckpointer). Extend the
/// trainer with it (every rank, with the same trigger) and call maybe_load before run().
class MultiNodeCheckpointer : public chainer::training::Extension {
 public:
  /// A checkpointer of run NAME over COMM, keeping at least CP_INTERVAL checkpoints and
  /// collecting older ones once GC_INTERVAL more have accumulated, in PATH (empty: the trainer's
  /// out directory). Throws chainer::Error for an empty name, a null communicator or an interval below 1.
  MultiNodeCheckpointer(std::string name, std::shared_ptr<Communicator> comm, int64_t cp_interval = 5,
                        int64_t gc_interval = 5, std::string path = "");

  /// Saves the trainer at its current iteration (collective: every rank at the same iteration).
  void operator()(chainer::training::Trainer& trainer) override;
  std::string default_name() const override { return "MultiNodeCheckpointer"; }  ///< Its class name.
  /// Saves TRAINER as NAME.RANK.ITERATION atomically and durably. When more than
  /// cp_interval + gc_interval of this run's checkpoints are kept, removes all but the newest
  /// cp_interval iterations every rank holds (collective).
  void save(chainer::training::Trainer& trainer, int64_t iteration);
  /// If every rank holds a checkpoint of some iteration, loads the newest such one into TRAINER
  /// (collective; call after extending the trainer with every extension that has state).
  /// Nothing found: the trainer is left as it is (iteration 0). A rank whose file cannot be
  /// loaded (unreadable, corrupt, or of another model: names or shapes differ) throws
  /// chainer::Error on every rank naming the file and the first mismatch, as does a job of
  /// another process count than the one that wrote the files; every rank's
  /// trainer is left as it was. OPTIMIZER is ChainerMN's argument: a loaded multi-node
  /// optimizer already knows its parameters agree, so it may be null. PATH, when given and no
  /// path was set, is where the checkpoints are. Returns the loaded iteration, or 0.
  int64_t maybe_load(chainer::training::Trainer& trainer, chainer::Optimizer* optimizer = nullptr,
                     const std::string& path = "");
  /// ChainerMN's statistics line: "Snapshot duration stats (sec): avg=..., min=..., max=...",
  /// or "No stats available" before the first save.
  std::string get_stats() const;
  const std::vector<CheckpointTiming>& timings() const { return timings_; }  ///< Every save's timing.

  /// The iterations of this run's checkpoints this rank holds complete in the directory, ascending.
  std::vector<int64_t> local_iterations() const;
  /// The file name of this rank's checkpoint of ITERATION: `{name}.{rank}.{iteration}`.
  std::string filename(int64_t iteration) const;
  const std::string& path() const { return path_; }  ///< The directory (empty until set by a save or load).

 private:
  void collect_garbage();
  // Collective: throws the same Error on every rank when FAILURE is non-empty on any (WHERE
  // says which checkpoint), naming each failing rank's reason.
  void throw_if_any(const std::string& failure, const std::string& where) const;
  std::string name_;
  std::shared_ptr<Communicator> comm_;
  int64_t cp_interval_, gc_interval_;
  std::string path_;
  std::vector<int64_t> iterations_;  // this rank's checkpoints known to exist, ascending
  std::vector<CheckpointTiming> timings_;
};

/// As chainermn.create_multi_node_checkpointer(name, comm, cp_interval=5, gc_interval=5, path=None):
///
///     auto checkpointer = chainermn::create_multi_node_checkpointer("run1", comm);
///     trainer.extend(checkpointer, "", IntervalTrigger(25, Unit::Iteration));
///     checkpointer->maybe_load(trainer, optimizer.get());
///     trainer.run();
std::shared_ptr<MultiNodeCheckpointer> create_multi_node_checkpointer(std::string name,
                                                                      std::shared_ptr<Communicator> comm,
                                                                      int64_t cp_interval = 5, int64_t gc_interval = 5,
                                                                      std::string path = "");

}  // namespace chainermn
