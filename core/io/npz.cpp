// NPZ = ZIP archive of NPY v1.0 arrays. We write uncompressed (stored) members, as numpy.savez
// does; we read stored and deflated members (numpy.savez_compressed), little-endian only.
#include "core/io/npz.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <vector>

#include "core/util/parse.h"

namespace chainer {

namespace {
void put16(std::string& b, uint32_t v) { b.push_back(char(v & 0xff)), b.push_back(char((v >> 8) & 0xff)); }
void put32(std::string& b, uint32_t v) { put16(b, v & 0xffff), put16(b, v >> 16); }
uint32_t get16(const unsigned char* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8; }
uint32_t get32(const unsigned char* p) { return get16(p) | get16(p + 2) << 16; }

const char* npy_descr(DType d) {
  switch (d) {
    case DType::Float32: return "<f4";
    case DType::Float64: return "<f8";
    case DType::Int32: return "<i4";
    case DType::Int64: return "<i8";
    case DType::UInt8: return "|u1";
    case DType::Float16: return "<f2";
    case DType::BFloat16: break;  // numpy has no bfloat16 (ml_dtypes writes a void type)
  }
  return "";
}

// WHAT names the array in errors: "save_npz: entry 'w'", "save_npy: 'mean.npy'".
std::string npy_bytes(const std::string& what, const Tensor& t) {
  if (*npy_descr(t.dtype()) == '\0')
    throw Error(str(what, " is ", dtype_name(t.dtype()),
                    ", which numpy cannot read (convert with astype(DType::Float32) first)"));
  std::string header = std::string("{'descr': '") + npy_descr(t.dtype()) + "', 'fortran_order': False, 'shape': (";
  for (int64_t d : t.shape()) header += std::to_string(d) + ", ";
  if (t.ndim() > 1) header.resize(header.size() - 2);  // "(3, 4)", but "(3,)" and "()"
  if (t.ndim() == 1) header.pop_back();
  header += "), }";
  const size_t preamble = 10;  // magic(6) + version(2) + header length(2)
  header.append(64 - (preamble + header.size() + 1) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY\x01";
  out.push_back('\0');
  put16(out, uint32_t(header.size()));
  out += header;
  Tensor c = t.contiguous();
  out.append(static_cast<const char*>(c.raw_data()), c.nbytes());
  return out;
}

// Deflate's largest expansion: at best a run of 258 bytes costs 2 bits (a 1-bit length code and a
// 1-bit distance code), 1032 bytes out of each byte in; a deflated entry declaring more than this
// times its compressed size (plus a little slack for the stream's ends) lies about its size.
constexpr uint64_t kMaxDeflateRatio = 1032;

// A * B, or UINT64_MAX when that overflows (sizes computed from declared shapes).
uint64_t mul_saturated(uint64_t a, uint64_t b) {
  uint64_t p;
  return __builtin_mul_overflow(a, b, &p) ? UINT64_MAX : p;
}

// The bytes of one array, read in order: a stored entry or a whole .npy file as they lie in the
// file, a deflated entry through zlib, a chunk of its compressed bytes at a time. Nothing is
// allocated for a declared size: reads stop at it, and the caller allocates only what the NPY
// header declares once that matches the bytes there are. WHAT names the array in errors.
class ArrayStream {
 public:
  ArrayStream(const InputFile& file, std::string what, uint64_t at, uint64_t stored, uint64_t size, bool deflated)
      : file_(file), what_(std::move(what)), at_(at), stored_left_(stored), size_(size), deflated_(deflated) {
    if (deflated_ && inflateInit2(&zs_, -MAX_WBITS) != Z_OK) throw Error(str(what_, ": zlib could not start"));
  }
  ~ArrayStream() {
    if (deflated_) inflateEnd(&zs_);
  }
  ArrayStream(const ArrayStream&) = delete;
  ArrayStream& operator=(const ArrayStream&) = delete;

  uint64_t size() const { return size_; }          // the bytes it declares
  uint64_t left() const { return size_ - done_; }  // the bytes not read yet
  uint32_t crc() const { return crc_; }            // CRC-32 of the bytes read so far
  const std::string& what() const { return what_; }

  // Reads N <= left() bytes into DST.
  void read(void* dst, size_t n) {
    CHAINER_ASSERT(n <= left(), "reading past the declared size");
    if (!deflated_) {
      file_.read_at(at_, dst, n);
      at_ += n;
    } else {
      inflate_into(static_cast<unsigned char*>(dst), n);
    }
    for (size_t off = 0; off < n;) {  // crc32 takes at most a uInt at a time
      const size_t chunk = std::min<size_t>(n - off, size_t(1) << 30);
      crc_ = uint32_t(crc32(crc_, static_cast<const Bytef*>(dst) + off, uInt(chunk)));
      off += chunk;
    }
    done_ += n;
  }

  // After the last read of a deflated entry: its stream must end exactly there.
  void finish() {
    if (!deflated_ || ended_) return;
    unsigned char extra;
    inflate_into(&extra, 1, /*at_end=*/true);
  }

 private:
  void inflate_into(unsigned char* dst, size_t n, bool at_end = false) {
    size_t got = 0;
    while (got < n) {
      if (ended_)
        throw Error(str(what_, " inflates to fewer than the ", size_,
                        " bytes its ZIP header declares (the archive is corrupt)"));
      if (zs_.avail_in == 0 && stored_left_ > 0) {
        in_.resize(size_t(std::min<uint64_t>(stored_left_, 1 << 20)));
        file_.read_at(at_, in_.data(), in_.size());
        at_ += in_.size(), stored_left_ -= in_.size();
        zs_.next_in = in_.data();
        zs_.avail_in = uInt(in_.size());
      }
      zs_.next_out = dst + got;
      zs_.avail_out = uInt(std::min<size_t>(n - got, size_t(1) << 30));
      const uInt before = zs_.avail_out;
      const int rc = inflate(&zs_, Z_NO_FLUSH);
      got += before - zs_.avail_out;
      if (rc == Z_STREAM_END) ended_ = true;
      else if (rc == Z_BUF_ERROR && stored_left_ == 0 && zs_.avail_in == 0)
        throw Error(str(what_, "'s compressed bytes end early (the archive is truncated or corrupt)"));
      else if (rc != Z_OK && rc != Z_BUF_ERROR)
        throw Error(str(what_, " is corrupt (zlib: ", zs_.msg ? zs_.msg : "error", ")"));
      if (at_end && got > 0)
        throw Error(str(what_, " inflates to more than the ", size_,
                        " bytes its ZIP header declares (the archive is corrupt)"));
      if (at_end && ended_) return;
    }
  }

  const InputFile& file_;
  std::string what_;
  uint64_t at_, stored_left_, size_, done_ = 0;
  bool deflated_, ended_ = false;
  uint32_t crc_ = 0;
  z_stream zs_{};
  std::vector<unsigned char> in_;
};

// numpy's shape tuple, "(3, 4)", "(3,)" or "()", each extent a non-negative decimal (old files
// write "3L"). Throws BAD naming the text otherwise.
Shape parse_shape(const std::string& text, const std::function<Error(const std::string&)>& bad) {
  const size_t open = text.find('('), close = text.find(')');
  if (open == std::string::npos || close == std::string::npos || close < open)
    throw bad("has a 'shape' that is not a tuple: " + text.substr(0, 40));
  Shape shape;
  const std::string inside = text.substr(open + 1, close - open - 1);
  for (size_t pos = 0; pos <= inside.size();) {
    const size_t comma = std::min(inside.find(',', pos), inside.size());
    std::string item = inside.substr(pos, comma - pos);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \tL") + 1);
    if (!item.empty()) {
      int64_t extent = -1;
      const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), extent);
      if (ec == std::errc::result_out_of_range)
        throw bad(str("has the extent ", item, " in its shape (", inside, "), larger than any array"));
      if (ec != std::errc() || end != item.data() + item.size() || extent < 0)
        throw bad(str("has the extent '", item, "' in its shape (", inside, "); expected non-negative integers"));
      shape.push_back(extent);
    } else if (comma < inside.size() && !(shape.size() == 1 && comma + 1 >= inside.size())) {
      throw bad(str("has an empty extent in its shape (", inside, ")"));
    }
    pos = comma + 1;
  }
  return shape;
}

// Reads one NPY array from IN. WHAT names it in errors: "load_npz: 'f.npz' entry 'w'",
// "load_npy: 'mean.npy'".
Tensor read_npy(ArrayStream& in) {
  auto bad = [&](const std::string& why) { return Error(str(in.what(), " ", why)); };
  unsigned char pre[12];
  if (in.size() < 10) throw bad(str("is not an NPY array (", in.size(), " bytes)"));
  in.read(pre, 10);
  if (std::memcmp(pre, "\x93NUMPY", 6) != 0) throw bad("is not an NPY array (no \\x93NUMPY signature)");
  const unsigned major = pre[6];
  size_t hlen;
  if (major == 1) {
    hlen = get16(pre + 8);
  } else if (major == 2 || major == 3) {
    if (in.left() < 2) throw bad("has a truncated header");
    in.read(pre + 10, 2);
    hlen = get32(pre + 8);
  } else {
    throw bad(str("has NPY format version ", major, ".", unsigned(pre[7]), "; expected 1.0, 2.0 or 3.0"));
  }
  if (hlen > in.left()) throw bad(str("has a header of ", hlen, " bytes but only ", in.left(), " bytes follow"));
  std::string header(hlen, '\0');
  in.read(header.data(), hlen);
  auto field = [&](const std::string& key) {
    size_t at = header.find("'" + key + "'");
    if (at == std::string::npos) throw bad("has no '" + key + "' in its header");
    return header.substr(header.find(':', at) + 1);
  };
  std::string descr = field("descr");
  descr = descr.substr(descr.find('\'') + 1);
  descr = descr.substr(0, descr.find('\''));
  DType dtype;
  if (descr == "<f4") dtype = DType::Float32;
  else if (descr == "<f8") dtype = DType::Float64;
  else if (descr == "<i4") dtype = DType::Int32;
  else if (descr == "<i8") dtype = DType::Int64;
  else if (descr == "|u1" || descr == "|b1") dtype = DType::UInt8;
  else if (descr == "<f2") dtype = DType::Float16;
  else throw bad("has dtype '" + descr + "', which is not supported (float16/32/64, int32/64, uint8)");
  if (field("fortran_order").find("True") < field("fortran_order").find(','))
    throw bad("is stored in Fortran order, which is not supported");
  const Shape shape = parse_shape(field("shape"), bad);
  // The declared size, checked against the bytes that follow before anything is allocated.
  uint64_t nbytes = dtype_size(dtype);
  for (int64_t d : shape) nbytes = mul_saturated(nbytes, uint64_t(d));
  if (in.left() != nbytes)
    throw bad(str("holds ", in.left(), " data bytes but shape ", shape_str(shape), " of ", dtype_name(dtype), " needs ",
                  nbytes == UINT64_MAX ? std::string("more than 2^64") : std::to_string(nbytes)));
  Tensor t = Tensor::empty(shape, dtype);
  in.read(t.raw_data(), t.nbytes());
  in.finish();
  return t;
}

// The limit's message: what was found, the limit and how to raise it.
Error over_limit(const std::string& what, uint64_t bytes, uint64_t limit) {
  return Error(str(what, " holds ", bytes, " bytes of arrays, more than the limit of ", limit,
                   " bytes (CHAINER_NPZ_MAX_BYTES; by default half the machine's memory): set CHAINER_NPZ_MAX_BYTES to "
                   "at least ", bytes, " to load it"));
}
}  // namespace

namespace {
// fsync of PATH (a file or a directory): what was written or renamed there survives a crash of
// the machine. The error, or empty.
std::string sync_path(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return str("save_npz: cannot open '", path, "' to sync it: ", std::strerror(errno));
  const int rc = ::fsync(fd), err = errno;
  ::close(fd);
  return rc == 0 ? std::string() : str("save_npz: fsync of '", path, "' failed: ", std::strerror(err));
}
}  // namespace

void save_npz(const std::string& path, const TensorMap& entries, bool durable) {
  std::string archive, central;
  uint32_t count = 0;
  for (const auto& [key, tensor] : entries) {
    const std::string name = key + ".npy", data = npy_bytes(str("save_npz: entry '", key, "'"), tensor);
    if (data.size() >= 0xffffffffu) throw Error(str("save_npz: entry '", key, "' is over 4 GiB"));
    const uint32_t crc = uint32_t(crc32(0, reinterpret_cast<const Bytef*>(data.data()), uInt(data.size())));
    const uint32_t offset = uint32_t(archive.size());
    auto common = [&](std::string& b) {
      put16(b, 20), put16(b, 0), put16(b, 0), put16(b, 0), put16(b, 0x21);  // version, flags, stored, time, date
      put32(b, crc), put32(b, uint32_t(data.size())), put32(b, uint32_t(data.size()));
      put16(b, uint32_t(name.size())), put16(b, 0);
    };
    put32(archive, 0x04034b50);
    common(archive);
    archive += name + data;
    put32(central, 0x02014b50);
    put16(central, 20);
    common(central);
    put16(central, 0), put16(central, 0), put16(central, 0), put32(central, 0), put32(central, offset);
    central += name;
    ++count;
  }
  const uint32_t central_offset = uint32_t(archive.size());
  archive += central;
  put32(archive, 0x06054b50);
  put16(archive, 0), put16(archive, 0), put16(archive, count), put16(archive, count);
  put32(archive, uint32_t(central.size())), put32(archive, central_offset), put16(archive, 0);

  // Written under a name of this process and call, then renamed: a crash mid-write never leaves
  // a half-written file under PATH, and writers of the same PATH (the ranks of a job, threads)
  // never write into each other's temporary file; the last rename wins, whole.
  static std::atomic<uint64_t> saves{0};
  const std::string tmp = str(path, ".tmp.", ::getpid(), ".", saves.fetch_add(1));
  std::string failure;
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) throw Error(str("save_npz: cannot open '", tmp, "' for writing: ", std::strerror(errno)));
    f.write(archive.data(), std::streamsize(archive.size()));
    if (!f.flush()) failure = str("save_npz: writing '", tmp, "' failed (disk full?)");
  }
  if (failure.empty() && durable) failure = sync_path(tmp);
  if (failure.empty() && std::rename(tmp.c_str(), path.c_str()) != 0)
    failure = str("save_npz: cannot rename '", tmp, "' to '", path, "': ", std::strerror(errno));
  if (!failure.empty()) {
    std::remove(tmp.c_str());  // nothing half-written is left behind
    throw Error(failure);
  }
  if (durable) {
    const std::string parent = std::filesystem::path(path).parent_path().string();
    if (const std::string err = sync_path(parent.empty() ? "." : parent); !err.empty()) throw Error(err);
  }
}

TensorMap load_npz(const std::string& path) {
  const InputFile file("load_npz", path);
  const uint64_t size = file.size();
  auto corrupt = [&](const std::string& why) {
    return Error(str("load_npz: '", path, "' is not a valid NPZ file (", why, ")"));
  };
  if (size < 22) throw corrupt(str("too short: ", size, " bytes"));
  // The end-of-archive record: in the last 22 bytes, or up to a 64 KiB comment before them.
  const uint64_t tail_at = size - std::min<uint64_t>(size, 22 + 0xffff);
  std::string tail(size_t(size - tail_at), '\0');
  file.read_at(tail_at, tail.data(), tail.size());
  const auto* t = reinterpret_cast<const unsigned char*>(tail.data());
  size_t eocd = tail.size() - 22;
  while (get32(t + eocd) != 0x06054b50) {
    if (eocd == 0) throw corrupt("no end-of-archive record");
    --eocd;
  }
  const uint32_t count = get16(t + eocd + 10), central_size = get32(t + eocd + 12), central_at = get32(t + eocd + 16);
  if (uint64_t(central_at) + central_size > tail_at + eocd)
    throw corrupt("the central directory lies outside the file");
  std::string central(central_size, '\0');
  file.read_at(central_at, central.data(), central.size());
  const auto* u = reinterpret_cast<const unsigned char*>(central.data());

  // Every entry's sizes are checked against the file, and the entries against each other,
  // before any array is read: what a header declares is never allocated on its word.
  struct Entry {
    std::string name;
    uint32_t method, crc;
    uint64_t data_at, csize, usize, begin, end;  // [begin, end): its local header and data
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  size_t at = 0;
  for (uint32_t i = 0; i < count; ++i) {
    if (at + 46 > central.size() || get32(u + at) != 0x02014b50) throw corrupt("bad central directory");
    Entry e;
    e.method = get16(u + at + 10), e.crc = get32(u + at + 16), e.csize = get32(u + at + 20),
    e.usize = get32(u + at + 24);
    const uint32_t nlen = get16(u + at + 28), xlen = get16(u + at + 30), clen = get16(u + at + 32);
    const uint64_t local = get32(u + at + 42);
    if (at + 46 + nlen > central.size()) throw corrupt("bad central directory");
    e.name = central.substr(at + 46, nlen);
    at += 46 + nlen + xlen + clen;
    const std::string entry = str("entry '", e.name, "'");
    if (e.csize == 0xffffffffu || e.usize == 0xffffffffu)
      throw corrupt(entry + " is in ZIP64 format (over 4 GiB), which is not supported");
    unsigned char lh[30];
    if (local + 30 > central_at) throw corrupt(entry + ": bad local header");
    file.read_at(local, lh, 30);
    if (get32(lh) != 0x04034b50) throw corrupt(entry + ": bad local header");
    e.data_at = local + 30 + get16(lh + 26) + get16(lh + 28);
    e.begin = local, e.end = e.data_at + e.csize;
    if (e.end > central_at)
      throw corrupt(str(entry, " declares ", e.csize, " bytes at offset ", e.data_at, ", past the end of its data (",
                        central_at, "): truncated member"));
    if (e.method == 0 && e.usize != e.csize)
      throw corrupt(str(entry, " is stored uncompressed in ", e.csize, " bytes but declares ", e.usize));
    if (e.method == 8 && e.usize > mul_saturated(e.csize, kMaxDeflateRatio) + kMaxDeflateRatio)
      throw corrupt(str(entry, " declares ", e.usize, " bytes inflated from ", e.csize,
                        " compressed ones; deflate expands at most ", kMaxDeflateRatio, " times"));
    if (e.method != 0 && e.method != 8)
      throw corrupt(str(entry, " uses compression method ", e.method, "; expected 0 (stored) or 8 (deflated)"));
    total += e.usize;  // at most 65535 entries of under 4 GiB: no overflow
    entries.push_back(std::move(e));
  }
  // Entries that share bytes would decode the same data again and again: a small file could
  // then fill any memory. numpy and zip tools never write them.
  std::vector<const Entry*> by_place;
  for (const Entry& e : entries) by_place.push_back(&e);
  std::sort(by_place.begin(), by_place.end(), [](const Entry* a, const Entry* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < by_place.size(); ++i)
    if (by_place[i]->begin < by_place[i - 1]->end)
      throw corrupt(str("entries '", by_place[i - 1]->name, "' and '", by_place[i]->name,
                        "' share the bytes from offset ", by_place[i]->begin,
                        " on; an archive's entries never overlap"));
  if (const uint64_t limit = npz_max_bytes(); total > limit)
    throw over_limit(str("load_npz: '", path, "'"), total, limit);

  TensorMap out;
  for (const Entry& e : entries) {
    std::string name = e.name;
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0) name.resize(name.size() - 4);
    if (out.count(name)) throw corrupt(str("entry '", e.name, "' appears twice"));
    ArrayStream in(file, str("load_npz: '", path, "' entry '", name, "'"), e.data_at, e.csize, e.usize, e.method == 8);
    Tensor array = read_npy(in);
    if (in.crc() != e.crc) throw corrupt(str("checksum mismatch in ", e.name));
    out.emplace(std::move(name), std::move(array));
  }
  return out;
}

void save_npy(const std::string& path, const Tensor& array) {
  const std::string data = npy_bytes(str("save_npy: '", path, "'"), array);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw Error(str("save_npy: cannot create '", path, "': ", std::strerror(errno)));
  f.write(data.data(), std::streamsize(data.size()));
  f.close();
  if (!f) {
    std::remove(path.c_str());
    throw Error(str("save_npy: cannot write '", path, "': ", std::strerror(errno)));
  }
}

Tensor load_npy(const std::string& path) {
  const InputFile file("load_npy", path);
  const std::string what = str("load_npy: '", path, "'");
  if (const uint64_t limit = npz_max_bytes(); file.size() > limit) throw over_limit(what, file.size(), limit);
  ArrayStream in(file, what, 0, file.size(), file.size(), false);
  return read_npy(in);
}

uint64_t npz_max_bytes() {
  if (const char* text = std::getenv("CHAINER_NPZ_MAX_BYTES"))
    return uint64_t(parse_integer(text, "CHAINER_NPZ_MAX_BYTES", 1));
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) / 2 : uint64_t(4) << 30;
}

namespace {
// What the file at PATH is, when it is not a regular file.
const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "a special file";
}
}  // namespace

InputFile::InputFile(const std::string& op, const std::string& path, const std::string& noun)
    : op_(op.empty() ? op : op + ": "), path_(path), noun_(noun) {
  auto not_regular = [&](mode_t mode) {
    return Error(str(op_, noun_, "'", path_, "' is ", file_kind(mode), ", not a regular file"));
  };
  // Looked at before opening: opening a device can itself act (a tape rewinds).
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) throw not_regular(st.st_mode);
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) throw Error(str(op_, "cannot open ", noun_, "'", path_, "': ", std::strerror(errno)));
  // And again once open: the path may have been replaced in between.
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    const mode_t mode = st.st_mode;
    ::close(fd_);
    throw not_regular(mode);
  }
  size_ = uint64_t(st.st_size);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

int InputFile::release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

void InputFile::read_at(uint64_t offset, void* dst, size_t n) const {
  for (size_t done = 0; done < n;) {
    const ssize_t got = ::pread(fd_, static_cast<char*>(dst) + done, std::min<size_t>(n - done, size_t(1) << 30),
                                off_t(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw Error(str(op_, "cannot read ", noun_, "'", path_, "': ", std::strerror(errno)));
    if (got == 0)
      throw Error(str(op_, noun_, "'", path_, "' ends at byte ", offset + done, " while ", offset + n,
                      " were expected (it was cut while being read)"));
    done += size_t(got);
  }
}

std::string InputFile::read_all() const {
  std::string bytes(size_t(size_), '\0');
  read_at(0, bytes.data(), bytes.size());
  return bytes;
}

}  // namespace chainer
