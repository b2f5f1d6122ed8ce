#include "datasets/idx.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/io/npz.h"
#include "datasets/gzip_file.h"

namespace chainer::datasets {

namespace fs = std::filesystem;

namespace {

constexpr uint32_t kImageMagic = 2051;  // 0x00000803: unsigned bytes, 3 dimensions
constexpr uint32_t kLabelMagic = 2049;  // 0x00000801: unsigned bytes, 1 dimension

std::string quoted(const fs::path& path) { return str("'", path.string(), "'"); }

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

// Deflate's largest expansion, 1032:1: gzip data of N bytes inflates to at most 1032 N.
constexpr uint64_t kMaxDeflateRatio = 1032;

// A * B, or UINT64_MAX when that overflows (sizes computed from declared extents).
uint64_t mul_saturated(uint64_t a, uint64_t b) {
  uint64_t p;
  return __builtin_mul_overflow(a, b, &p) ? UINT64_MAX : p;
}

uint32_t big_endian(const unsigned char* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

// An IDX file, gzip-compressed or not (GzipFile).
class GzReader {
 public:
  explicit GzReader(const fs::path& path) : path_(path), file_(path, "IDX file") {}

  size_t read(void* dst, size_t size) { return file_.read(dst, size); }

  // The truncation error: EXPECTED bytes of (decompressed) data were needed, ACTUAL were there.
  [[noreturn]] void truncated(uint64_t expected, uint64_t actual) const {
    throw Error(str("IDX file ", quoted(path_), " is truncated: expected ", expected, " bytes, got ", actual,
                    file_.cut_short() ? " (the gzip stream ends early)" : "", "; download it again"));
  }

  // Reads the IDX header: the magic number (checked against MAGIC) and DIMS extents.
  std::vector<uint32_t> header(uint32_t magic, size_t dims, const char* kind) {
    unsigned char buf[16];
    const size_t bytes = 4 * (1 + dims);
    const size_t got = read(buf, bytes);
    if (got >= 4 && big_endian(buf) != magic)
      throw Error(str("file ", quoted(path_), " is not an IDX ", kind, " file: its magic number is ",
                      big_endian(buf), " (", hex(big_endian(buf)), "), expected ", magic, " (", hex(magic), ")"));
    if (got < bytes) truncated(bytes, got);
    std::vector<uint32_t> extents;
    for (size_t d = 0; d < dims; ++d) extents.push_back(big_endian(buf + 4 * (d + 1)));
    return extents;
  }

  // Reads the body of EXTENTS uint8 values that follows a header of HEADER_BYTES. The size the
  // header declares is checked against the file's before it is allocated: an uncompressed file
  // must hold it, a gzip file's bytes must be able to inflate to it.
  Tensor body(const std::vector<uint32_t>& extents, size_t header_bytes) {
    uint64_t values = 1;
    for (uint32_t e : extents) values = mul_saturated(values, e);
    const uint64_t declared = values == UINT64_MAX ? UINT64_MAX : header_bytes + values;
    if (!file_.gzip() && declared > file_.file_bytes()) truncated(declared, file_.file_bytes());
    if (file_.gzip() && declared > mul_saturated(file_.file_bytes(), kMaxDeflateRatio)) {
      std::string dims;
      for (uint32_t e : extents) dims += (dims.empty() ? "" : " x ") + std::to_string(e);
      throw Error(str("IDX file ", quoted(path_), " declares ", dims, " values (",
                      declared == UINT64_MAX ? std::string("over 2^64") : std::to_string(declared),
                      " bytes), more than its ", file_.file_bytes(), " bytes of gzip data can hold (deflate expands at most ",
                      kMaxDeflateRatio, " times): it is truncated or its header is corrupt; download it again"));
    }
    Shape shape;
    for (uint32_t e : extents) shape.push_back(int64_t(e));
    Tensor out = Tensor::empty(shape, DType::UInt8);
    const size_t got = out.nbytes() ? read(out.raw_data(), out.nbytes()) : 0;
    if (got < out.nbytes()) truncated(header_bytes + out.nbytes(), header_bytes + got);
    // All the data, but the stream may end before its trailer (CRC-32 and length, 8 bytes).
    if (file_.ends_before_trailer())
      throw Error(str("IDX file ", quoted(path_), " is truncated: the gzip stream ends before its checksum (",
                      "its last 8 bytes), so its data cannot be verified; download it again"));
    return out;
  }

 private:
  fs::path path_;
  GzipFile file_;
};

}  // namespace

Tensor load_idx_images(const fs::path& path) {
  GzReader file(path);
  return file.body(file.header(kImageMagic, 3, "image"), 16);
}

Tensor load_idx_labels(const fs::path& path) {
  GzReader file(path);
  return file.body(file.header(kLabelMagic, 1, "label"), 8);
}

}  // namespace chainer::datasets
