// snapshot, as Chainer's extensions.snapshot: saves the whole trainer (model, optimizer state,
// iterator position and RNG, extension state, elapsed time) as NPZ to <out>/<filename>, where
// "{.updater.iteration}" and "{.updater.epoch}" in FILENAME are replaced by their values.
// training::load_snapshot(path, trainer) resumes exactly where the run stopped.
// snapshot_object saves one link's parameters the same way.
#pragma once
#include "nn/link.h"
#include "training/extension.h"

namespace chainer::training::extensions {

class Snapshot : public Extension {
 public:
  explicit Snapshot(std::string filename = "snapshot_iter_{.updater.iteration}", Link* target = nullptr);
  void operator()(Trainer& trainer) override;
  std::string default_name() const override { return target_ ? "snapshot_object" : "snapshot"; }
  IntervalTrigger default_trigger() const override { return IntervalTrigger(1, Unit::Epoch); }
  int priority() const override { return -100; }
  std::string path_for(const Trainer& trainer) const;

 private:
  std::string filename_;
  Link* target_;
};

std::shared_ptr<Snapshot> snapshot(std::string filename = "snapshot_iter_{.updater.iteration}");
std::shared_ptr<Snapshot> snapshot_object(Link& target, std::string filename);

}  // namespace chainer::training::extensions
