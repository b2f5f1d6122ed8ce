#include "datasets/cifar.h"


#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "core/io/npz.h"
#include "datasets/gzip_file.h"

namespace chainer::datasets {

namespace fs = std::filesystem;

namespace {

constexpr int64_t kPixels = 3 * 32 * 32;

std::string quoted(const fs::path& path) { return str("'", path.string(), "'"); }

// What distinguishes the two data sets.
struct CifarFormat {
  const char* name;                     // "CIFAR-10", as messages name it
  const char* function;                 // "get_cifar10"
  const char* archive;                  // "cifar-10-binary.tar.gz"
  std::vector<std::string> train;       // the training members, in order
  std::string test;                     // the test member
  int label_bytes;                      // 1 (label), or 2 (coarse, fine)
  std::vector<int> classes;             // the classes of each label byte (CIFAR-100: 20, 100)
  const dataset::DatasetSource& (*source)();
};

const CifarFormat& cifar10_format() {
  static const CifarFormat format{"CIFAR-10",
                                  "get_cifar10",
                                  "cifar-10-binary.tar.gz",
                                  {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
                                   "data_batch_5.bin"},
                                  "test_batch.bin",
                                  1,
                                  {10},
                                  &cifar10_source};
  return format;
}

const CifarFormat& cifar100_format() {
  static const CifarFormat format{
      "CIFAR-100", "get_cifar100", "cifar-100-binary.tar.gz", {"train.bin"}, "test.bin", 2, {20, 100},
      &cifar100_source};
  return format;
}

// The archive, read as one stream of bytes (GzipFile). Unlike the IDX reader it refuses data
// that is not gzip: the archives are only ever published compressed.
class GzipStream {
 public:
  GzipStream(const fs::path& path, const CifarFormat& format)
      : path_(path), format_(format), file_(path, str(format.name, " archive")) {
    const unsigned char* magic = file_.first_bytes();
    if (!file_.gzip())
      throw Error(str(format.name, " archive ", quoted(path), " is not gzip data (",
                      file_.file_bytes() < 2 ? str("it is ", file_.file_bytes(), " bytes long")
                                             : str("it starts with bytes ", int(magic[0]), " ", int(magic[1]),
                                                   ", not gzip's 31 139"),
                      "); expected ", format.archive, " as the CIFAR page serves it"));
  }

  // Reads up to SIZE bytes; fewer only at the end of the data.
  size_t read(void* dst, size_t size) { return file_.read(dst, size); }

  // Reads exactly SIZE bytes of WHAT ("the tar header", "member test_batch.bin"); throws naming
  // the archive as truncated when the data end first.
  void read_exactly(void* dst, size_t size, const std::string& what) {
    const uint64_t start = offset();
    const size_t got = read(dst, size);
    if (got < size) truncated(str(what, " needs ", size, " bytes from offset ", start, ", only ", got, " are there"));
  }

  // Skips SIZE bytes (a member not wanted, a block's padding).
  void skip(uint64_t size, const std::string& what) {
    char buf[1 << 16];
    while (size > 0) {
      const size_t n = size_t(std::min<uint64_t>(size, sizeof buf));
      read_exactly(buf, n, what);
      size -= n;
    }
  }

  // Reads to the end of the gzip stream, so that zlib checks its CRC-32 and length.
  void finish() {
    if (file_.ends_before_trailer())
      truncated("the gzip stream ends before its checksum (its last 8 bytes), so its data cannot be verified");
  }

  [[noreturn]] void truncated(const std::string& detail) const {
    throw Error(str(format_.name, " archive ", quoted(path_), " is truncated: ", detail, "; download it again"));
  }

  uint64_t offset() const { return file_.offset(); }  // bytes of decompressed data read so far

 private:
  fs::path path_;
  const CifarFormat& format_;
  GzipFile file_;
};

// A number of a tar header field: octal digits, maybe led by spaces and ended by a space or NUL.
// Returns false for anything else (GNU's base-256 sizes, needed only past 8 GiB, included).
bool parse_octal(const char* field, size_t width, uint64_t& value) {
  size_t i = 0;
  while (i < width && field[i] == ' ') ++i;
  value = 0;
  bool any = false;
  for (; i < width && field[i] >= '0' && field[i] <= '7'; ++i) {
    value = value * 8 + uint64_t(field[i] - '0');
    any = true;
  }
  for (; i < width; ++i)
    if (field[i] != ' ' && field[i] != '\0') return false;
  return any;
}

std::string field_string(const char* field, size_t width) { return std::string(field, strnlen(field, width)); }

// The wanted members of the tar archive inside PATH's gzip stream, by file name (the last part
// of the member's path: "cifar-10-batches-bin/test_batch.bin" is test_batch.bin). The archive is
// read through once; members not wanted (the label names, the readme) are skipped.
std::map<std::string, std::string> read_members(const fs::path& path, const CifarFormat& format,
                                                const std::vector<std::string>& wanted) {
  GzipStream in(path, format);
  std::map<std::string, std::string> members;
  std::string long_name;  // from a GNU long-name header, for the member that follows
  char header[512];
  for (;;) {
    const uint64_t at = in.offset();
    const size_t got = in.read(header, sizeof header);
    if (got == 0) break;  // no end-of-archive blocks: tolerated, as GNU tar does
    if (got < sizeof header)
      in.truncated(str("the tar header at offset ", at, " is cut short (", got, " of 512 bytes)"));
    if (std::all_of(header, header + 512, [](char c) { return c == 0; })) break;  // the end-of-archive block
    uint64_t stored = 0, size = 0;
    unsigned sum = 0;
    for (int i = 0; i < 512; ++i)  // the checksum field counts as spaces
      sum += (i >= 148 && i < 156) ? unsigned(' ') : unsigned(static_cast<unsigned char>(header[i]));
    if (!parse_octal(header + 148, 8, stored) || stored != sum)
      throw Error(str(format.name, " archive ", quoted(path), " is not a valid tar archive: the header at offset ", at,
                      " of its data has a wrong checksum (stored '", field_string(header + 148, 8), "', computed ", sum,
                      "); the file is corrupt, download it again"));
    if (!parse_octal(header + 124, 12, size))
      throw Error(str(format.name, " archive ", quoted(path), ": the tar header at offset ", at,
                      " has a size field that is not an octal number ('", field_string(header + 124, 12), "')"));
    const char type = header[156];
    std::string name = field_string(header, 100);
    if (std::memcmp(header + 257, "ustar", 5) == 0 && header[345] != 0)
      name = field_string(header + 345, 155) + "/" + name;  // the POSIX prefix
    if (!long_name.empty()) name = std::move(long_name), long_name.clear();
    const uint64_t padded = (size + 511) / 512 * 512;
    if (type == 'L') {  // GNU: the next member's long name is this member's data
      std::string data(size, '\0');
      in.read_exactly(data.data(), data.size(), "a GNU long-name block");
      in.skip(padded - size, "a GNU long-name block's padding");
      long_name = field_string(data.data(), data.size());
      continue;
    }
    const std::string base = name.substr(name.find_last_of('/') == std::string::npos ? 0 : name.find_last_of('/') + 1);
    const bool regular = type == '0' || type == '\0';
    if (regular && std::find(wanted.begin(), wanted.end(), base) != wanted.end()) {
      if (members.count(base))
        throw Error(
            str(format.name, " archive ", quoted(path), " holds ", base, " twice (the second as '", name, "')"));
      std::string data(size, '\0');
      in.read_exactly(data.data(), data.size(), str("member '", name, "'"));
      in.skip(padded - size, str("the padding after member '", name, "'"));
      members[base] = std::move(data);
    } else {
      in.skip(padded, str("member '", name, "'"));
    }
  }
  in.finish();
  for (const std::string& name : wanted)
    if (!members.count(name))
      throw Error(str(format.name, " archive ", quoted(path), " has no member ", name,
                      " (expected ", format.archive, " as the CIFAR page serves it)"));
  return members;
}

void check_arguments(const CifarFormat& format, int ndim, DType dtype) {
  if (ndim != 1 && ndim != 3)
    throw Error(str(format.function, ": ndim must be 1 (N, 3072) or 3 (N, 3, 32, 32), got ", ndim));
  if (dtype != DType::Float32 && dtype != DType::Float64)
    throw Error(str(format.function, ": dtype must be float32 or float64, got ", dtype_name(dtype)));
}

// One split from its MEMBERS' records, in order.
std::shared_ptr<const TupleDataset> make_split(const fs::path& path, const CifarFormat& format,
                                               const std::map<std::string, std::string>& members,
                                               const std::vector<std::string>& names, bool withlabel, int ndim,
                                               double scale, DType dtype) {
  const size_t record = size_t(format.label_bytes + kPixels);
  int64_t n = 0;
  for (const std::string& name : names) {
    const std::string& data = members.at(name);
    if (data.empty() || data.size() % record != 0)
      throw Error(str(format.name, " archive ", quoted(path), ": member ", name, " holds ", data.size(),
                      " bytes, which is not a whole number of records of ", record, " bytes (",
                      format.label_bytes == 1 ? "a label" : "a coarse and a fine label", " and 3072 pixels); "
                      "the file is corrupt, download it again"));
    n += int64_t(data.size() / record);
  }
  const Shape shape = ndim == 1 ? Shape{n, kPixels} : Shape{n, 3, 32, 32};
  Tensor images = Tensor::empty(shape, dtype);
  Tensor labels = Tensor::empty({n}, DType::Int32);
  int32_t* label_out = labels.data<int32_t>();
  // As Chainer: the pixels converted to DTYPE, then multiplied by scale / 255 in DTYPE.
  float table32[256];
  double table64[256];
  for (int p = 0; p < 256; ++p) {
    table32[p] = float(p) * float(scale / 255.0);
    table64[p] = double(p) * (scale / 255.0);
  }
  int64_t row = 0;
  for (const std::string& name : names) {
    const std::string& data = members.at(name);
    const int64_t count = int64_t(data.size() / record);
    for (int64_t i = 0; i < count; ++i, ++row) {
      const auto* rec = reinterpret_cast<const unsigned char*>(data.data()) + size_t(i) * record;
      for (int b = 0; b < format.label_bytes; ++b)
        if (rec[b] >= format.classes[size_t(b)])
          throw Error(str(format.name, " archive ", quoted(path), ": record ", i, " of member ", name, " has ",
                          format.label_bytes == 1 ? "label " : b == 0 ? "coarse label " : "fine label ", int(rec[b]),
                          ", but labels are classes 0-", format.classes[size_t(b)] - 1));
      label_out[row] = rec[format.label_bytes - 1];  // the fine label of CIFAR-100
      const unsigned char* px = rec + format.label_bytes;
      if (dtype == DType::Float32) {
        float* dst = images.data<float>() + row * kPixels;
        for (int64_t k = 0; k < kPixels; ++k) dst[k] = table32[px[k]];
      } else {
        double* dst = images.data<double>() + row * kPixels;
        for (int64_t k = 0; k < kPixels; ++k) dst[k] = table64[px[k]];
      }
    }
  }
  std::vector<Tensor> fields{images};
  if (withlabel) fields.push_back(labels);
  return std::make_shared<const TupleDataset>(std::move(fields));
}

TupleDatasetPair load(const fs::path& given, const CifarFormat& format, bool withlabel, int ndim, double scale,
                      DType dtype) {
  check_arguments(format, ndim, dtype);
  std::error_code ec;
  const fs::path path = fs::is_directory(given, ec) ? given / format.archive : given;
  if (!fs::exists(path, ec))
    throw Error(str(format.name, " archive ", quoted(path), " does not exist; put ", format.archive, " (",
                    format.source().mirrors.front(), format.archive, ") there, or give ", format.function,
                    " the path of the archive or of the directory that holds it"));
  std::vector<std::string> wanted = format.train;
  wanted.push_back(format.test);
  const std::map<std::string, std::string> members = read_members(path, format, wanted);
  return {make_split(path, format, members, format.train, withlabel, ndim, scale, dtype),
          make_split(path, format, members, {format.test}, withlabel, ndim, scale, dtype)};
}

// The archive in the dataset root, downloaded first when it is not there.
TupleDatasetPair load_from_root(const CifarFormat& format, bool withlabel, int ndim, double scale, DType dtype) {
  check_arguments(format, ndim, dtype);  // before any download
  const dataset::DatasetSource& source = format.source();
  fs::path path = dataset::get_dataset_directory(source.directory, false) / format.archive;
  std::error_code ec;
  // A file already there is read as Chainer reads its cache, without a sum (see cifar.h).
  if (!fs::is_regular_file(path, ec)) path = dataset::download_dataset(source) / format.archive;
  return load(path, format, withlabel, ndim, scale, dtype);
}

}  // namespace

const dataset::DatasetSource& cifar10_source() {
  // The CIFAR page publishes MD5 sums only (https://www.cs.toronto.edu/~kriz/cifar.html).
  static const dataset::DatasetSource source{
      "CIFAR-10",
      "pfnet/chainer/cifar",
      {"https://www.cs.toronto.edu/~kriz/"},
      {{"cifar-10-binary.tar.gz", "", 170052171, "c32a1d4ab5d03f1284b67883e8d87530"}}};
  return source;
}

const dataset::DatasetSource& cifar100_source() {
  static const dataset::DatasetSource source{
      "CIFAR-100",
      "pfnet/chainer/cifar",
      {"https://www.cs.toronto.edu/~kriz/"},
      {{"cifar-100-binary.tar.gz", "", 168513733, "03b5dce01913d631647c71ecec9e9cb8"}}};
  return source;
}

TupleDatasetPair get_cifar10(const fs::path& path, bool withlabel, int ndim, double scale, DType dtype) {
  return load(path, cifar10_format(), withlabel, ndim, scale, dtype);
}

TupleDatasetPair get_cifar10(bool withlabel, int ndim, double scale, DType dtype) {
  return load_from_root(cifar10_format(), withlabel, ndim, scale, dtype);
}

TupleDatasetPair get_cifar100(const fs::path& path, bool withlabel, int ndim, double scale, DType dtype) {
  return load(path, cifar100_format(), withlabel, ndim, scale, dtype);
}

TupleDatasetPair get_cifar100(bool withlabel, int ndim, double scale, DType dtype) {
  return load_from_root(cifar100_format(), withlabel, ndim, scale, dtype);
}

}  // namespace chainer::datasets
