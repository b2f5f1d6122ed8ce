/// @file
/// create_multi_node_checkpointer, as ChainerMN's chainermn.extensions.create_multi_node_checkpointer:
/// generational per-rank snapshots of the whole trainer for fault tolerance. Each rank writes
/// `{path}/{name}.{rank}.{iteration}`; maybe_load finds, by a collective, the newest iteration
/// that every rank saved and resumes from it. Beyond ChainerMN: a save is atomic and durable
/// (temporary file, fsync, rename, fsync of the directory), so a job killed mid-save keeps its
/// previous checkpoint; a file that cannot be loaded is an error on every rank naming it; and
/// finalize keeps the checkpoints (ChainerMN removes them, also when training ends by an
/// exception, which is when they are needed).
///
/// Each file also records the process count that wrote it, and a data-parallel job resumes with
/// another count M than the N that wrote the checkpoints:
///   - The iteration is the newest for which all N old ranks' files exist: rank 0 of the new job
///     lists and reads them (the directory must be shared with it) and broadcasts what it found.
///     Such a set newer than the newest checkpoint of this count that every rank holds is
///     preferred to it (a job of another count went on from there).
///   - The model, the optimizer state, the updater's iteration and epoch, the other extensions'
///     state (LogReport's log continues) and the default generator come from old rank 0's file,
///     after rank 0 has checked that every old rank's model and optimizer entries, persistent
///     values aside, are bit for bit rank 0's (data-parallel replicas); otherwise every rank
///     throws chainer::Error naming, for each old rank that differs, its file and the first entry
///     that differs, and how.
///   - Persistent values (BatchNormalization's running statistics) never block it: before each
///     save of a data-parallel job, the checkpointer replaces the model's floating persistents
///     with their mean over the ranks, as AllreducePersistent does (in place, so the training goes
///     on with what the files hold), and every rank's file holds the same. Where they still
///     differ (integer persistents, checkpoints written otherwise), old rank 0's are taken.
///   - The batch per process is kept, so the global batch becomes M*b and an epoch takes other
///     iterations; rank 0 prints "resumed from N processes at iteration I (epoch E); the global
///     batch was N*b, now M*b".
///   - The interrupted epoch, when set_scatter told how the iterator's dataset was scattered:
///     each old rank's iterator order and position give the multiset U of the examples (global
///     ids, share_indices) the old ranks had yet to visit in the epoch. New rank k takes, in its
///     new share's order, the examples of its share that are in U, each occurrence of U once over
///     all new ranks (R_k), and runs the rest of the epoch over R_k repeated from its start up to
///     L = max_k |R_k| (the scatter's padding: every rank ends the epoch at the same iteration; an
///     empty R_k repeats its share's first examples). Later epochs are normal epochs over the new
///     share. A checkpoint taken at an epoch's end (position 0) has no interrupted epoch.
///     Without set_scatter, the interrupted epoch starts again as a full pass over each new share.
///   - Every iterator's order and random state are this job's own (from its construction).
/// A job of another count that cannot find such a set of files is an error on every rank saying
/// so, never a silent start from iteration 0 or a load of some ranks' files.
///
/// When no iteration has the checkpoints of every rank of the job that wrote them, and every
/// checkpoint found is a job's first after it started afresh (a job killed while its ranks wrote
/// their first checkpoints), maybe_load removes them and the job starts afresh, rank 0 printing
/// which files it removed (notice()). Otherwise a file was lost, and every rank refuses.
///
/// Every collective decision (whether to collect garbage, what to keep, what to load) is made on
/// facts allgathered from every rank, never on one rank's own files: after a restart with another
/// count, or a job killed between two ranks' deletions, the ranks hold different files.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
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

/// What maybe_load did when the checkpoints came from a job of another process count.
struct ProcessCountChange {
  int64_t old_size = 0;   ///< The process count that wrote the checkpoints (N).
  int64_t iteration = 0;  ///< The iteration resumed from.
  int64_t epoch = 0;      ///< The epoch it was in.
  /// The indices into this rank's share that the rest of the interrupted epoch visits (R_k),
  /// before the padding to epoch_length; empty when there is no interrupted epoch.
  std::vector<int64_t> rest_of_epoch;
  int64_t epoch_length = 0;  ///< The interrupted epoch's length on every rank (L); 0 when there is none.
  std::string message;       ///< The line rank 0 printed.
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
  /// Saves TRAINER as NAME.RANK.ITERATION atomically and durably (collective). In a data-parallel
  /// job (every rank's model and optimizer state the same), the model's floating persistent values
  /// are first averaged over the ranks, in place. When some rank holds more than
  /// cp_interval + gc_interval of this run's checkpoints, or rank 0 holds files of ranks beyond
  /// this job's count (a restart with fewer processes), every rank removes its checkpoints but the
  /// newest cp_interval iterations every rank holds, and rank 0 those files of the other
  /// iterations.
  void save(chainer::training::Trainer& trainer, int64_t iteration);
  /// If every rank holds a checkpoint of some iteration, loads the newest such one into TRAINER
  /// (collective; call after extending the trainer with every extension that has state).
  /// Checkpoints of another process count are mapped to this one (see above).
  /// Nothing found: the trainer is left as it is (iteration 0). A rank whose file cannot be
  /// loaded (unreadable, corrupt, or of another model: names or shapes differ) throws
  /// chainer::Error on every rank naming the file and the first mismatch, as does a job of
  /// another process count whose checkpoints cannot be mapped; every rank's
  /// trainer is left as it was. What a job killed in its first save left is removed (see above).
  /// OPTIMIZER is ChainerMN's argument: a loaded multi-node
  /// optimizer already knows its parameters agree, so it may be null. PATH, when given and no
  /// path was set, is where the checkpoints are. Returns the loaded iteration, or 0.
  int64_t maybe_load(chainer::training::Trainer& trainer, chainer::Optimizer* optimizer = nullptr,
                     const std::string& path = "");
  /// How the dataset of the updater's iterator ITERATOR was scattered: scatter_dataset's (or
  /// share_of_dataset's) N_TOTAL (the whole dataset's length), SHUFFLE, SEED and
  /// FORCE_EQUAL_LENGTH, so that maybe_load in a job of another process count maps the interrupted
  /// epoch (see above). Call it with the same arguments on every rank before maybe_load. Throws
  /// chainer::Error for a negative N_TOTAL.
  void set_scatter(int64_t n_total, bool shuffle = false, uint64_t seed = 0, bool force_equal_length = true,
                   std::string iterator = "main");
  /// What the last maybe_load mapped from a job of another process count; none after a resume
  /// with the same count, or nothing loaded.
  const std::optional<ProcessCountChange>& process_count_change() const { return count_change_; }
  /// What the last maybe_load found and removed when it started afresh over the files of a job
  /// killed in its first save (the line rank 0 printed, on every rank); empty otherwise.
  const std::string& notice() const { return notice_; }

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
  // A process count change's plan; made by rank 0.
  struct Remap;
  // The models of a trainer's optimizers (each once) and their persistent values, keyed as the
  // trainer's entries hold them.
  struct Persistents {
    std::vector<chainer::Link*> models;
    std::map<std::string, chainer::Tensor> values;
  };
  static Persistents persistents(chainer::training::Trainer& trainer);
  // Collective: in a data-parallel job whose ranks' persistent values differ, averages them over
  // the ranks in the trainer's models and in ENTRIES (the trainer's, about to be saved).
  void average_persistents(chainer::training::Trainer& trainer, chainer::TensorMap& entries) const;
  // Collective: collects garbage when it is due (see save).
  void collect_garbage();
  // Collective: the iterations of iterations_ that every rank holds, ascending.
  std::vector<int64_t> iterations_every_rank_holds() const;
  // The iterations every list of ALL (ascending) holds.
  static std::vector<int64_t> intersection(const std::vector<std::vector<int64_t>>& all);
  // Every checkpoint of this run in the directory: iteration -> the ranks that wrote one.
  std::map<int64_t, std::set<int64_t>> scan() const;
  // Collective: when every checkpoint this job sees is a job's first after it started afresh,
  // removes them, sets notice_ and returns true (see above).
  bool discard_interrupted_first_save();
  // Rank 0: finds the newest iteration from AFTER on with all files of a job of another count
  // and plans the mapping; PERSISTENT are the entries that may differ between old ranks.
  Remap plan_remap(int64_t after, const std::set<std::string>& persistent) const;
  // Collective: resumes from a job of another process count (an iteration from AFTER on); false
  // when no such checkpoint exists.
  bool load_remapped(chainer::training::Trainer& trainer, int64_t& loaded, int64_t after);
  // Collective: throws the same Error on every rank when FAILURE is non-empty on any (WHERE
  // says which checkpoint), naming each failing rank's reason.
  void throw_if_any(const std::string& failure, const std::string& where) const;
  // Collective: runs LOAD (into TRAINER) on every rank; when it throws on any rank, every rank
  // throws (WHERE says which checkpoint) and puts BACKUP (the trainer as it was before) back, so
  // the job stays as it was everywhere. In debug mode a load that succeeded is followed by a
  // comparison of the ranks' parameters (Communicator::check_params_consistent).
  void load_on_every_rank(chainer::training::Trainer& trainer, const chainer::training::TrainerState& backup,
                          const std::function<void()>& load, const std::string& where) const;
  std::string name_;
  std::shared_ptr<Communicator> comm_;
  int64_t cp_interval_, gc_interval_;
  std::string path_;
  std::vector<int64_t> iterations_;  // this rank's checkpoints known to exist, ascending
  // Rank 0: the files of ranks beyond this job's count in the directory, iteration -> ranks.
  std::map<int64_t, std::vector<int64_t>> foreign_;
  // The iteration of the newest complete checkpoint this job saved or resumed from; -1: none.
  int64_t previous_ = -1;
  std::string notice_;
  std::vector<CheckpointTiming> timings_;
  struct Scatter {
    int64_t n_total;
    bool shuffle;
    uint64_t seed;
    bool force_equal_length;
    std::string iterator;
  };
  std::optional<Scatter> scatter_;
  std::optional<ProcessCountChange> count_change_;
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
