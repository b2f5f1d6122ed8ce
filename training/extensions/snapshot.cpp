#include "training/extensions/snapshot.h"

#include <filesystem>

#include "core/npz.h"
#include "training/trainer.h"

namespace chainer::training::extensions {

Snapshot::Snapshot(std::string filename, Link* target) : filename_(std::move(filename)), target_(target) {}

std::string Snapshot::path_for(const Trainer& trainer) const {
  std::string name = filename_;
  auto replace = [&](const std::string& key, int64_t value) {
    for (size_t at; (at = name.find(key)) != std::string::npos;) name.replace(at, key.size(), std::to_string(value));
  };
  replace("{.updater.iteration}", trainer.updater().iteration());
  replace("{.updater.epoch}", trainer.updater().epoch());
  return (std::filesystem::path(trainer.out()) / name).string();
}

void Snapshot::operator()(Trainer& trainer) {
  Serializer s = Serializer::writer();
  if (target_) target_->serialize(s);
  else trainer.serialize(s);
  save_npz(path_for(trainer), s.entries());
}

std::shared_ptr<Snapshot> snapshot(std::string filename) { return std::make_shared<Snapshot>(std::move(filename)); }

std::shared_ptr<Snapshot> snapshot_object(Link& target, std::string filename) {
  return std::make_shared<Snapshot>(std::move(filename), &target);
}

}  // namespace chainer::training::extensions
