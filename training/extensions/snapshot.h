/// @file
/// snapshot, as Chainer's extensions.snapshot: saves the whole trainer (model, optimizer state,
/// iterator position and RNG, extension state, elapsed time) as NPZ to `<out>/<filename>`, where
/// FILENAME is formatted with the trainer as Python's `filename.format(trainer)`: the fields
/// `{.updater.iteration}`, `{.updater.epoch}`, `{.updater.epoch_detail}` and `{.elapsed_time}`,
/// with Python's format specs (`{.updater.iteration:08d}`, `{.updater.epoch_detail:.2f}`); `{{`
/// and `}}` are braces. Another field, or a bad spec, throws when the extension is made.
/// training::load_snapshot(path, trainer) resumes exactly where the run stopped.
/// snapshot_object saves one link's parameters the same way. With autoload, initialize loads
/// the newest file in out() that the filename format matches, as Chainer's snapshot(autoload=True).
#pragma once
#include <functional>
#include <string>
#include <vector>

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
  /// Removes the stale temporary files of snapshots of this filename format in out()
  /// (remove_stale_temporaries), then, with autoload, loads the newest snapshot in out() that
  /// the format matches (find_latest_snapshot).
  void initialize(Trainer& trainer) override;

  const std::string& filename() const { return filename_; }  ///< The filename format.
  /// Replaces the filename format (as assigning Chainer's `snapshot.filename`; multi_node_snapshot appends the rank).
  void set_filename(std::string filename) { filename_ = std::move(filename); }
  Link* target() const { return target_; }  ///< The link saved, or null for the whole trainer.
  bool autoload() const { return autoload_; }  ///< Whether initialize loads the newest snapshot.
  /// Chainer's autoload argument: whether initialize loads the newest matching snapshot (default false).
  void set_autoload(bool autoload) { autoload_ = autoload; }
  /// Loads the snapshot at PATH into the target (the trainer, or the link): what autoload does.
  void load(const std::string& path, Trainer& trainer) const;

 private:
  std::string filename_;
  Link* target_;
  bool autoload_ = false;
};

/// Removes from DIRECTORY the temporary files of saves killed before their rename: files named
/// `NAME.tmp.PID.N` (save_npz's and LogReport's temporaries; PID and N digits) whose NAME
/// MATCHES accepts and whose process PID no longer runs on this machine (a running one may be
/// saving into the same directory). Nothing else is touched. Returns the names removed.
/// Snapshot and LogReport call it at initialize with their own names.
std::vector<std::string> remove_stale_temporaries(const std::string& directory,
                                                  const std::function<bool(const std::string&)>& matches);

/// The newest file in DIRECTORY (by modification time, then name) whose name begins with the part
/// of FORMAT before its first '{' and ends with the part after its last '}', as Chainer's
/// _find_latest_snapshot; empty when there is none (or no such directory).
std::string find_latest_snapshot(const std::string& format, const std::string& directory);

/// A Snapshot of the whole trainer, as Chainer's `extensions.snapshot(filename=...)`.
std::shared_ptr<Snapshot> snapshot(std::string filename = "snapshot_iter_{.updater.iteration}");
/// A Snapshot of TARGET's parameters, as Chainer's `extensions.snapshot_object(target, filename)`.
std::shared_ptr<Snapshot> snapshot_object(Link& target, std::string filename);

}  // namespace chainer::training::extensions
