// Serializer: a hierarchical key/value view used by snapshots and save/load of parameters,
// as Chainer's serializers. s["updater"]["model:main"].tensor("W", w) stores or loads under
// "updater/model:main/W". Writers collect entries in memory; save_npz/load_npz (core/npz.h)
// move them to and from disk. Scalars are 0-d tensors, strings are uint8 arrays.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace chainer {

using TensorMap = std::map<std::string, Tensor>;

class Serializer {
 public:
  enum class Mode { Write, Read };
  // A writer that collects entries into a fresh map (entries()).
  static Serializer writer();
  // A reader over ENTRIES; a missing key throws unless the key is optional.
  static Serializer reader(TensorMap entries);

  bool is_reader() const { return mode_ == Mode::Read; }
  Serializer operator[](const std::string& name) const;
  const std::string& prefix() const { return prefix_; }

  // Writers store VALUE; readers overwrite it (in place when a defined tensor of the same shape
  // is given, so views and parameters keep their storage).
  void tensor(const std::string& key, Tensor& value);
  void value(const std::string& key, int64_t& value);
  void value(const std::string& key, double& value);
  void value(const std::string& key, bool& value);
  void value(const std::string& key, std::string& value);
  void value(const std::string& key, std::vector<uint64_t>& value);
  void value(const std::string& key, std::vector<int64_t>& value);
  bool contains(const std::string& key) const;

  const TensorMap& entries() const { return *entries_; }

 private:
  Serializer(Mode mode, std::shared_ptr<TensorMap> entries, std::string prefix);
  const Tensor& find(const std::string& key) const;
  Mode mode_;
  std::shared_ptr<TensorMap> entries_;
  std::string prefix_;
};

}  // namespace chainer
