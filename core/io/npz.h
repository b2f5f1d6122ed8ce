/// @file
/// NPZ files (numpy.savez format: an uncompressed ZIP of .npy arrays), so parameters and
/// snapshots written here open with numpy.load, and numpy-written files load here; single
/// arrays as NPY files (numpy.save) the same way.
///
/// Reading trusts no size a file declares: every array's bytes must lie in the file (a stored
/// entry) or be few enough for its compressed bytes to hold (a deflated one: deflate expands at
/// most 1032 times), no two entries may share bytes, and what a file decodes to must stay under
/// npz_max_bytes(), all checked before anything is allocated. Only regular files are read
/// (InputFile).
#pragma once
#include <cstdint>
#include <string>

#include "core/io/serializer.h"

namespace chainer {

/// Writes ENTRIES to PATH as an NPZ file, one array per key (numpy.savez). The file is written as
/// `PATH.tmp.<pid>.<n>` and renamed to PATH, so PATH only ever holds a whole file; a save killed
/// mid-way leaves that temporary file. DURABLE also syncs the file before the rename and the
/// directory after it, so the new file survives a crash of the machine (checkpoints).
void save_npz(const std::string& path, const TensorMap& entries, bool durable = false);
/// Reads the NPZ file at PATH (numpy.load). Throws chainer::Error naming the file, the entry and
/// the problem: not a regular file, not a ZIP archive, an entry whose declared size its bytes
/// cannot hold, entries that overlap, arrays that together exceed npz_max_bytes(), a checksum
/// mismatch, an array that is not an NPY array of a supported dtype.
TensorMap load_npz(const std::string& path);

/// Writes ARRAY to PATH as one NPY file (numpy.save), e.g. the mean image of compute_mean.
void save_npy(const std::string& path, const Tensor& array);
/// Reads the NPY file at PATH (numpy.load of a .npy). Throws chainer::Error naming the file and
/// the problem, as load_npz.
Tensor load_npy(const std::string& path);

/// The most bytes of arrays load_npz and load_npy decode from one file: CHAINER_NPZ_MAX_BYTES when
/// set (a whole number of bytes, at least 1; anything else is an Error naming the variable), else
/// half of this machine's physical memory. Loading a snapshot holds its arrays and the objects
/// they are copied into, so a file of more than half the memory cannot be loaded anyway; refusing
/// it up front says so instead of swapping until the kernel ends the process.
uint64_t npz_max_bytes();

/// A file opened for reading by this library's readers (NPZ and NPY here; images, image lists
/// and IDX files in datasets/). Only a regular file (or a link to one) is opened: a directory, a
/// FIFO, a device such as /dev/zero or a socket is refused by name before a byte is read, since
/// reading a FIFO waits forever for a writer and /dev/zero never ends. The FIFO's open itself
/// does not block (it is made non-blocking).
class InputFile {
 public:
  /// Opens PATH. Errors read "OP: cannot open NOUN'PATH': REASON" and "OP: NOUN'PATH' is a
  /// directory, not a regular file" (OP: the reader, e.g. "read_image"; NOUN names the file's
  /// role with a trailing space, e.g. "the list file ", or is empty; with OP empty the message
  /// starts at the verb).
  InputFile(const std::string& op, const std::string& path, const std::string& noun = "");
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  uint64_t size() const { return size_; }          ///< the file's size when it was opened
  int fd() const { return fd_; }                   ///< the descriptor (still owned by this)
  int release();                                   ///< gives the descriptor away (the caller closes it)
  /// Reads N bytes at OFFSET into DST. Throws naming the file when it ends before them (it was
  /// cut while being read) or reading fails.
  void read_at(uint64_t offset, void* dst, size_t n) const;
  /// The whole file, size() bytes.
  std::string read_all() const;

 private:
  std::string op_, path_, noun_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace chainer
