#include "datasets/mnist.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace chainer::datasets {

namespace fs = std::filesystem;

namespace {

constexpr uint32_t kImageMagic = 2051;  // 0x00000803: unsigned bytes, 3 dimensions
constexpr uint32_t kLabelMagic = 2049;  // 0x00000801: unsigned bytes, 1 dimension
// Library code cannot know how its caller is told where the data lie (an app's flag, a config
// file): the message says what the directory must hold and leaves the rest to the caller.
const std::string kHowToGet = str("put ", mnist_files_help(), " there, or give get_mnist the directory that holds them");

std::string quoted(const fs::path& path) { return str("'", path.string(), "'"); }

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

uint32_t big_endian(const unsigned char* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

// A file read through zlib: gzip data is inflated, anything else is read as it is.
class GzReader {
 public:
  explicit GzReader(const fs::path& path) : path_(path), file_(gzopen(path.c_str(), "rb")) {
    if (!file_) throw Error(str("cannot open MNIST file ", quoted(path_), ": ", std::strerror(errno)));
    gzbuffer(file_, 1 << 18);
  }
  ~GzReader() { gzclose(file_); }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;

  // Reads up to SIZE bytes; fewer only at the end of the data.
  size_t read(void* dst, size_t size) {
    size_t done = 0;
    while (done < size) {
      const unsigned chunk = unsigned(std::min<size_t>(size - done, size_t(1) << 30));
      const int n = gzread(file_, static_cast<char*>(dst) + done, chunk);
      if (n < 0) {
        int code = Z_OK;
        std::string msg = gzerror(file_, &code);
        const std::string prefix = path_.string() + ": ";  // zlib puts the path in front
        if (msg.starts_with(prefix)) msg.erase(0, prefix.size());
        throw Error(str("cannot decompress MNIST file ", quoted(path_), ": ", msg, " (zlib error ", code,
                        "); the file is corrupt, download it again"));
      }
      if (n == 0) break;
      done += size_t(n);
    }
    return done;
  }

  // The truncation error: EXPECTED bytes of (decompressed) data were needed, ACTUAL were there.
  [[noreturn]] void truncated(uint64_t expected, uint64_t actual) const {
    int code = Z_OK;
    gzerror(file_, &code);
    throw Error(str("MNIST file ", quoted(path_), " is truncated: expected ", expected, " bytes, got ", actual,
                    code == Z_BUF_ERROR ? " (the gzip stream ends early)" : "", "; download it again"));
  }

  // Reads the IDX header: the magic number (checked against MAGIC) and DIMS extents.
  std::vector<uint32_t> header(uint32_t magic, size_t dims, const char* kind) {
    unsigned char buf[16];
    const size_t bytes = 4 * (1 + dims);
    const size_t got = read(buf, bytes);
    if (got >= 4 && big_endian(buf) != magic)
      throw Error(str("MNIST file ", quoted(path_), " is not an IDX ", kind, " file: its magic number is ",
                      big_endian(buf), " (", hex(big_endian(buf)), "), expected ", magic, " (", hex(magic), ")"));
    if (got < bytes) truncated(bytes, got);
    std::vector<uint32_t> extents;
    for (size_t d = 0; d < dims; ++d) extents.push_back(big_endian(buf + 4 * (d + 1)));
    return extents;
  }

  // Reads the body of SHAPE uint8 values that follows a header of HEADER_BYTES.
  Tensor body(const Shape& shape, size_t header_bytes) {
    Tensor out = Tensor::empty(shape, DType::UInt8);
    const size_t got = out.nbytes() ? read(out.raw_data(), out.nbytes()) : 0;
    if (got < out.nbytes()) truncated(header_bytes + out.nbytes(), header_bytes + got);
    char probe;
    read(&probe, 1);  // lets zlib reach the end of the stream and check its CRC (extra bytes are ignored)
    // All the data, but the stream ended before its trailer (CRC-32 and length, 8 bytes): zlib
    // notes that as a soft error and returns 0, so a cut file would pass unchecked.
    int code = Z_OK;
    gzerror(file_, &code);
    if (code == Z_BUF_ERROR)
      throw Error(str("MNIST file ", quoted(path_), " is truncated: the gzip stream ends before its checksum (",
                      "its last 8 bytes), so its data cannot be verified; download it again"));
    return out;
  }

 private:
  fs::path path_;
  gzFile file_;
};

// DIR/NAME.gz if it exists, else DIR/NAME; the error says where it looked.
fs::path find_file(const fs::path& dir, const std::string& name) {
  const fs::path gz = dir / (name + ".gz"), plain = dir / name;
  std::error_code ec;
  if (fs::is_regular_file(gz, ec)) return gz;
  if (fs::is_regular_file(plain, ec)) return plain;
  throw Error(str("MNIST file ", name, " was not found: looked for ", quoted(gz), " and ", quoted(plain), "; ",
                  kHowToGet));
}

// Images as float32 pixel / 255 * scale (computed as numpy does: float32 pixel * float32 factor).
Tensor to_float(const Tensor& pixels, double scale, const Shape& shape) {
  float table[256];
  const float factor = float(scale / 255.0);
  for (int p = 0; p < 256; ++p) table[p] = float(p) * factor;
  Tensor out = Tensor::empty(shape, DType::Float32);
  const uint8_t* src = pixels.data<uint8_t>();
  float* dst = out.data<float>();
  for (int64_t i = 0, n = pixels.numel(); i < n; ++i) dst[i] = table[src[i]];
  return out;
}

std::shared_ptr<const TupleDataset> load_split(const fs::path& dir, const std::string& prefix, bool withlabel,
                                               int ndim, double scale) {
  const fs::path image_path = find_file(dir, prefix + "-images-idx3-ubyte");
  Tensor pixels = load_idx_images(image_path);
  const int64_t n = pixels.size(0);
  if (pixels.size(1) != 28 || pixels.size(2) != 28)
    throw Error(str("MNIST file ", quoted(image_path), " holds images of ", pixels.size(1), "x", pixels.size(2),
                    " pixels, expected 28x28"));
  const Shape shape = ndim == 1 ? Shape{n, 784} : ndim == 2 ? Shape{n, 28, 28} : Shape{n, 1, 28, 28};
  std::vector<Tensor> fields{to_float(pixels, scale, shape)};
  if (withlabel) {
    const fs::path label_path = find_file(dir, prefix + "-labels-idx1-ubyte");
    Tensor raw = load_idx_labels(label_path);
    if (raw.size(0) != n)
      throw Error(str("MNIST files do not match: ", quoted(image_path), " holds ", n, " images but ",
                      quoted(label_path), " holds ", raw.size(0), " labels"));
    const uint8_t* src = raw.data<uint8_t>();
    Tensor labels = Tensor::empty({n}, DType::Int32);
    int32_t* dst = labels.data<int32_t>();
    for (int64_t i = 0; i < n; ++i) {
      if (src[i] > 9)
        throw Error(str("MNIST file ", quoted(label_path), " holds label ", int(src[i]), " at index ", i,
                        ", but labels are digits 0-9"));
      dst[i] = src[i];
    }
    fields.push_back(labels);
  }
  return std::make_shared<const TupleDataset>(std::move(fields));
}

}  // namespace

Tensor load_idx_images(const fs::path& path) {
  GzReader file(path);
  const std::vector<uint32_t> dims = file.header(kImageMagic, 3, "image");
  const uint64_t n = dims[0], rows = dims[1], cols = dims[2];
  if (rows * cols > (uint64_t(1) << 24) || n * rows * cols > (uint64_t(1) << 40))
    throw Error(str("MNIST file ", quoted(path), " has an implausible header: ", n, " images of ", rows, "x", cols,
                    " pixels"));
  return file.body({int64_t(n), int64_t(rows), int64_t(cols)}, 16);
}

Tensor load_idx_labels(const fs::path& path) {
  GzReader file(path);
  const std::vector<uint32_t> dims = file.header(kLabelMagic, 1, "label");
  return file.body({int64_t(dims[0])}, 8);
}

const char* mnist_files_help() {
  return "the four IDX files (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz, "
         "t10k-labels-idx1-ubyte.gz; http://yann.lecun.com/exdb/mnist/ or a mirror such as "
         "https://ossci-datasets.s3.amazonaws.com/mnist/)";
}

TupleDatasetPair get_mnist(const fs::path& dir, bool withlabel, int ndim, double scale) {
  if (ndim != 1 && ndim != 2 && ndim != 3)
    throw Error(str("get_mnist: ndim must be 1 (N, 784), 2 (N, 28, 28) or 3 (N, 1, 28, 28), got ", ndim));
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error(str("MNIST directory ", quoted(dir), (fs::exists(dir, ec) ? " is not a directory" : " does not exist"),
                    "; ", kHowToGet));
  return {load_split(dir, "train", withlabel, ndim, scale), load_split(dir, "t10k", withlabel, ndim, scale)};
}

}  // namespace chainer::datasets
