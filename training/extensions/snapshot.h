/// @file
/// snapshot, as Chainer's extensions.snapshot: saves the whole trainer (model, optimizer state,
/// iterator position and RNG, extension state, elapsed time) as NPZ to `<out>/<filename>`, where
/// FILENAME is formatted with the trainer as Python's `filename.format(trainer)`: the fields
/// `{.updater.iteration}`, `{.updater.epoch}`, `{.updater.epoch_detail}` and `{.elapsed_time}`,
/// with Python's format specs (`{.updater.iteration:08d}`, `{.updater.epoch_detail:.2f}`); `{{`
/// and `}}` are braces. Another field, or a bad spec, throws when the extension is made.
/// training::load_snapshot(path, trainer) resumes exactly where the run stopped.
/// snapshot_object saves one link's parameters the same way.
#pragma once
#include "nn/link.h"
#include "training/extension.h"

namespace chainer::training::extensions {

/// Saves the trainer, or one link, as NPZ in the trainer's output directory.
class Snapshot : public Extension {
 public:
  /// Saves TARGET's parameters when given, the whole trainer otherwise, to FILENAME (formatted
  /// as above; a field it cannot format throws).
  explicit Snapshot(std::string filename = "snapshot_iter_{.updater.iteration}", Link* target = nullptr);
  void operator()(Trainer& trainer) override;  ///< Writes the snapshot to path_for(trainer).
  std::string default_name() const override { return target_ ? "snapshot_object" : "snapshot"; }
  Trigger default_trigger() const override { return IntervalTrigger(1, Unit::Epoch); }  ///< Every epoch.
  int priority() const override { return -100; }  ///< -100: after every reader, as Chainer's snapshot.
  /// The output path: the filename formatted with TRAINER's fields, under out().
  std::string path_for(const Trainer& trainer) const;

 private:
  std::string filename_;
  Link* target_;
};

/// A Snapshot of the whole trainer, as Chainer's `extensions.snapshot(filename=...)`.
std::shared_ptr<Snapshot> snapshot(std::string filename = "snapshot_iter_{.updater.iteration}");
/// A Snapshot of TARGET's parameters, as Chainer's `extensions.snapshot_object(target, filename)`.
std::shared_ptr<Snapshot> snapshot_object(Link& target, std::string filename);

}  // namespace chainer::training::extensions
