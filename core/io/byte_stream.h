/// @file
/// A byte string written and read back in order: counts, raw bytes, strings and tensors, in the
/// machine's own byte order and sizes (every process of a job runs the same build on the same kind
/// of machine). The reader checks every read against the bytes left, so a message of another
/// layout fails with an Error instead of reading past its end. chainermn's object collectives
/// encode with it (distributed/runtime/object_serialization.h), and datasets describe themselves in it
/// (datasets/dataset_description.h).
#pragma once
#include <cstdint>
#include <string>

#include "core/tensor/tensor.h"

namespace chainer {

/// Appends encoded values to a byte string.
class ByteWriter {
 public:
  void write_raw(const void* data, size_t n) { out_.append(static_cast<const char*>(data), n); }  ///< Appends N bytes.
  void write_size(uint64_t n) { write_raw(&n, sizeof n); }  ///< Appends a count, as 8 bytes.
  void write_string(const std::string& s);                   ///< Appends S's length and bytes.
  /// Appends T's dtype, shape and row-major values (read back on the CPU); an undefined tensor
  /// stays undefined.
  void write_tensor(const Tensor& t);
  std::string take() { return std::move(out_); }  ///< The bytes written, moved out.

 private:
  std::string out_;
};

/// Reads what a ByteWriter wrote, checking every read against the bytes left.
class ByteReader {
 public:
  /// Reads IN from its start; IN must outlive the reader.
  explicit ByteReader(const std::string& in) : in_(in) {}
  /// Copies the next N bytes to DATA; throws chainer::Error when fewer are left.
  void read_raw(void* data, size_t n);
  /// A count of N items of at least ITEM_BYTES each, checked against the bytes left.
  uint64_t read_size(size_t item_bytes = 0);
  std::string read_string();  ///< A string write_string wrote.
  Tensor read_tensor();       ///< A tensor write_tensor wrote (a fresh CPU tensor).
  size_t remaining() const { return in_.size() - pos_; }  ///< The bytes not read yet.

 private:
  const std::string& in_;
  size_t pos_ = 0;
};

}  // namespace chainer
