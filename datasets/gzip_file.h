// GzipFile: a regular file read through zlib as one stream of bytes (gzip data inflated, other
// data as it is), with messages that name the file as its reader calls it ("IDX file",
// "CIFAR-10 archive"). Shared by the IDX and CIFAR readers; internal (not installed).
#pragma once
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <string>

namespace chainer::datasets {

class GzipFile {
 public:
  // Opens PATH, a regular file only (core/io/npz.h's InputFile: a FIFO or /dev/zero would never
  // end); WHAT names it in every message.
  GzipFile(const std::filesystem::path& path, std::string what);
  ~GzipFile();
  GzipFile(const GzipFile&) = delete;
  GzipFile& operator=(const GzipFile&) = delete;

  // Reads up to SIZE bytes; fewer only at the end of the data. Throws chainer::Error naming the
  // file and zlib's message when the data cannot be inflated.
  size_t read(void* dst, size_t size);
  // Reads to the end of the stream (zlib then checks the CRC-32 and length of gzip data) and
  // says whether the gzip stream ended before its trailer: zlib takes that for a soft error, so
  // a cut file would otherwise pass unchecked.
  bool ends_before_trailer();
  // Whether the gzip stream has ended before its trailer so far (zlib's Z_BUF_ERROR).
  bool cut_short() const;

  const std::filesystem::path& path() const { return path_; }
  const std::string& what() const { return what_; }
  std::string quoted_path() const { return "'" + path_.string() + "'"; }
  uint64_t file_bytes() const { return file_bytes_; }  // the file's size on disk
  bool gzip() const { return magic_[0] == 0x1f && magic_[1] == 0x8b; }  // starts with gzip's magic bytes
  const unsigned char* first_bytes() const { return magic_; }  // its first 2 bytes (0 past its end)
  uint64_t offset() const { return offset_; }  // bytes of (inflated) data read so far

 private:
  std::filesystem::path path_;
  std::string what_;
  gzFile file_ = nullptr;
  uint64_t file_bytes_ = 0;
  unsigned char magic_[2] = {0, 0};
  uint64_t offset_ = 0;
};

}  // namespace chainer::datasets
