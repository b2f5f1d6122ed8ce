/// @file
/// Serializer: a hierarchical key/value view used by snapshots and save/load of parameters,
/// as Chainer's serializers. s["updater"]["model:main"].tensor("W", w) stores or loads under
/// "updater/model:main/W". Writers collect entries in memory; save_npz/load_npz (core/io/npz.h)
/// move them to and from disk. Scalars are 0-d tensors, strings are uint8 arrays.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor/tensor.h"

namespace chainer {

/// Named tensors, keyed by their full path ("updater/model:main/W"): what NPZ files hold.
using TensorMap = std::map<std::string, Tensor>;

/// A writer or reader of named entries under a path prefix (Chainer's Serializer and Deserializer).
class Serializer {
 public:
  /// Whether entries are stored or loaded.
  enum class Mode { Write, Read };
  /// A writer that collects entries into a fresh map (entries()).
  static Serializer writer();
  /// A reader over ENTRIES; a missing key throws unless the key is optional.
  static Serializer reader(TensorMap entries);
  /// A reader over the entries under PATH ("updater/model:main/"; the trailing "/" may be left
  /// out), as Chainer's NpzDeserializer(npz, path, strict). Not STRICT: a missing key leaves its
  /// value as it is, instead of throwing.
  static Serializer reader(TensorMap entries, const std::string& path, bool strict = true);

  bool is_reader() const { return mode_ == Mode::Read; }  ///< true for a reader, false for a writer
  /// The same serializer one level down: keys under prefix() + NAME + "/".
  Serializer operator[](const std::string& name) const;
  /// The path of this level, ending in "/" (empty at the top).
  const std::string& prefix() const { return prefix_; }

  /// Writers store VALUE (bfloat16 as float32, exactly: NPZ has no bfloat16); readers overwrite
  /// it (in place when a defined tensor of the same shape is given, so views and parameters keep
  /// their storage, converting to its dtype).
  void tensor(const std::string& key, Tensor& value);
  void value(const std::string& key, int64_t& value);  ///< stores or loads an integer (an int64 scalar)
  void value(const std::string& key, double& value);   ///< stores or loads a float (a float64 scalar)
  /// Stores or loads a float that may be unset (Python's None): no entry while unset, and a
  /// reader without the entry leaves it unset.
  void value(const std::string& key, std::optional<double>& value);
  void value(const std::string& key, bool& value);     ///< stores or loads a flag (an int64 scalar, 0 or 1)
  void value(const std::string& key, std::string& value);  ///< stores or loads a string (a uint8 array)
  void value(const std::string& key, std::vector<uint64_t>& value);  ///< stores or loads words (an int64 array)
  void value(const std::string& key, std::vector<int64_t>& value);   ///< stores or loads integers (an int64 array)
  /// Whether KEY has an entry: how readers treat a key as optional.
  bool contains(const std::string& key) const;
  /// Whether a reader throws on a missing key (true but for a reader made with strict = false).
  bool strict() const { return strict_; }

  /// Every entry so far, keyed by full path (what save_npz writes).
  const TensorMap& entries() const { return *entries_; }

 private:
  Serializer(Mode mode, std::shared_ptr<TensorMap> entries, std::string prefix, bool strict = true);
  // The entry KEY; null when it is missing and the reader is not strict (a strict one throws).
  const Tensor* find(const std::string& key) const;
  Mode mode_;
  std::shared_ptr<TensorMap> entries_;
  std::string prefix_;
  bool strict_ = true;
};

}  // namespace chainer
