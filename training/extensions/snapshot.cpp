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

void Snapshot::load(const std::string& path, Trainer& trainer) const {
  if (!target_) return load_snapshot(path, trainer);
  Serializer s = Serializer::reader(load_npz(path));
  target_->serialize(s);
}

void Snapshot::initialize(Trainer& trainer) {
  if (!autoload_) return;
  if (const std::string latest = find_latest_snapshot(filename_, trainer.out()); !latest.empty())
    load((std::filesystem::path(trainer.out()) / latest).string(), trainer);
}

std::string find_latest_snapshot(const std::string& format, const std::string& directory) {
  const std::string prefix = format.substr(0, format.find('{'));
  const size_t close = format.rfind('}');
  const std::string suffix = close == std::string::npos ? format : format.substr(close + 1);
  // file_time_type's epoch is not 1970 (libstdc++: 2174), so the first match starts the search.
  std::pair<std::filesystem::file_time_type, std::string> latest{std::filesystem::file_time_type::min(), ""};
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(directory, ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || name.size() < prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    latest = std::max(latest, std::make_pair(entry.last_write_time(ec), name));
  }
  return latest.second;
}

std::shared_ptr<Snapshot> snapshot(std::string filename) { return std::make_shared<Snapshot>(std::move(filename)); }

std::shared_ptr<Snapshot> snapshot_object(Link& target, std::string filename) {
  return std::make_shared<Snapshot>(std::move(filename), &target);
}

}  // namespace chainer::training::extensions
