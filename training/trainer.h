/// @file
/// Trainer, as chainer.training.Trainer: runs updater.update() until the stop trigger fires,
/// running each extension when its trigger fires, all inside a reporter scope whose observation
/// collects what the model and the extensions report this iteration.
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nn/reporter.h"
#include "training/extension.h"
#include "training/trigger.h"
#include "training/updater.h"

namespace chainer::training {

/// Runs the updater until the stop trigger fires, with its extensions, as `chainer.training.Trainer`.
class Trainer {
 public:
  /// A trainer that writes its outputs (logs, snapshots) under the directory OUT.
  Trainer(std::shared_ptr<Updater> updater, Trigger stop_trigger = IntervalTrigger(20, Unit::Epoch),
          std::string out = "result");

  /// Registers EXT under NAME (its default name when empty; "_1", "_2" appended on clashes),
  /// with TRIGGER (its default when unset) and PRIORITY (its default when unset).
  void extend(std::shared_ptr<Extension> ext, std::string name = "", OptionalTrigger trigger = {},
              std::optional<int> priority = {});
  /// Registers FUNCTION, run on this trainer when TRIGGER fires, as Chainer's
  /// `trainer.extend(lambda trainer: ..., trigger=...)`: make_extension(function) with NAME (else
  /// "<lambda>"), TRIGGER (else every iteration) and PRIORITY (else PRIORITY_READER).
  void extend(std::function<void(Trainer&)> function, std::string name = "",
              OptionalTrigger trigger = {}, std::optional<int> priority = {});
  /// Runs the training loop until the stop trigger fires; extensions are initialized first and finalized last.
  void run();

  Updater& updater() const { return *updater_; }  ///< The updater that runs each iteration.
  /// The reporter whose observers are the optimizers' targets and their links.
  Reporter& reporter() { return reporter_; }
  const Observation& observation() const { return observation_; }  ///< What was reported this iteration.
  const std::string& out() const { return out_; }  ///< The output directory.
  const Trigger& stop_trigger() const { return stop_trigger_; }  ///< When training stops.
  double elapsed_time() const;  ///< Seconds of training, including those before a resume.
  /// The extension registered under NAME; throws chainer::Error when there is none.
  Extension& get_extension(const std::string& name);

  /// Saves or restores the whole training state (updater, triggers, extensions, elapsed time, RNG).
  /// Reading first checks the counters (the updater's iteration; the iterators' epoch, position
  /// and epoch_detail; the optimizers' steps and epoch; the triggers' previous positions; the
  /// elapsed time): a negative, fractional, non-finite or uncountable value (beyond 2^53, which a
  /// double such as epoch_detail cannot count) throws chainer::Error naming the entry and the
  /// value before anything is loaded.
  void serialize(Serializer& s);

 private:
  struct Entry {
    std::string name;
    std::shared_ptr<Extension> extension;
    Trigger trigger;
    int priority;
  };
  std::shared_ptr<Updater> updater_;
  Trigger stop_trigger_;
  std::string out_;
  Reporter reporter_;
  Observation observation_;
  std::vector<Entry> extensions_;
  std::chrono::steady_clock::time_point start_;
  double elapsed_before_ = 0;  // restored from a snapshot
  bool running_ = false;
};

/// Loads a snapshot written by extensions::snapshot into TRAINER (call before run()). All or
/// nothing: a missing, unreadable or mismatched snapshot throws and leaves TRAINER as it was.
/// Strict: every entry the trainer reads must be there, the parameters of lazily sized links
/// included; and the counters (the iteration, the iterators' epochs and positions, the
/// optimizers' steps, the triggers' positions, the elapsed time) must hold what a run writes
/// (Trainer::serialize).
void load_snapshot(const std::string& path, Trainer& trainer);
/// Loads ENTRIES, a snapshot's contents already read, into TRAINER, all or nothing as above;
/// errors name SOURCE (the file they came from). Keys the trainer does not ask for are ignored.
void load_snapshot(TensorMap entries, Trainer& trainer, const std::string& source);

/// A trainer's whole state, taken before a load that may fail part way so that it can be put
/// back: what load_snapshot does around its load, and what a caller loading several things (a
/// checkpointer loading on every rank) does around them.
///
///     TrainerState before(trainer);
///     try { load_snapshot(entries, trainer, file); ... } catch (...) { before.restore(); throw; }
class TrainerState {
 public:
  /// TRAINER's state now (Trainer::serialize), and which parameters are not initialized yet.
  explicit TrainerState(Trainer& trainer);
  /// Puts the state back: every value as it was, and the parameters that were not initialized
  /// (lazily sized links, which a load initializes) uninitialized again.
  void restore() const;
  /// The saved entries, as a snapshot of the trainer would hold them.
  const TensorMap& entries() const { return entries_; }

 private:
  Trainer* trainer_;
  TensorMap entries_;
  std::vector<Variable> uninitialized_;
};

}  // namespace chainer::training
