// NPZ = ZIP archive of NPY v1.0 arrays. We write uncompressed (stored) members, as numpy.savez
// does; we read stored and deflated members (numpy.savez_compressed), little-endian only.
#include "core/npz.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

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

// WHAT names the array in errors: "load_npz: f.npz: member 'w'", "load_npy: 'mean.npy'".
Tensor parse_npy(const std::string& what, const std::string& b) {
  auto bad = [&](const std::string& why) { return Error(str(what, " ", why)); };
  if (b.size() < 10 || b.compare(0, 6, "\x93NUMPY") != 0) throw bad("is not an NPY array");
  const unsigned major = static_cast<unsigned char>(b[6]);
  size_t hlen, start;
  if (major == 1) hlen = get16(reinterpret_cast<const unsigned char*>(b.data()) + 8), start = 10;
  else if (b.size() >= 12) hlen = get32(reinterpret_cast<const unsigned char*>(b.data()) + 8), start = 12;
  else throw bad("has a truncated header");
  if (start + hlen > b.size()) throw bad("has a truncated header");
  const std::string header = b.substr(start, hlen);
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
  std::string shape_text = field("shape");
  shape_text = shape_text.substr(shape_text.find('(') + 1);
  shape_text = shape_text.substr(0, shape_text.find(')'));
  Shape shape;
  for (size_t pos = 0; pos < shape_text.size();) {
    size_t next = shape_text.find(',', pos);
    std::string item = shape_text.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    if (item.find_first_of("0123456789") != std::string::npos) shape.push_back(std::stoll(item));
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  Tensor t = Tensor::empty(shape, dtype);
  if (b.size() - start - hlen != t.nbytes())
    throw bad(str("holds ", b.size() - start - hlen, " data bytes but shape ", shape_str(shape), " needs ", t.nbytes()));
  std::memcpy(t.raw_data(), b.data() + start + hlen, t.nbytes());
  return t;
}

std::string inflate_raw(const std::string& path, const std::string& in, size_t out_size) {
  std::string out(out_size, '\0');
  z_stream zs{};
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) throw Error(str("load_npz: ", path, ": zlib init failed"));
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = uInt(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = uInt(out.size());
  int rc = inflate(&zs, Z_FINISH);
  inflateEnd(&zs);
  if (rc != Z_STREAM_END) throw Error(str("load_npz: ", path, ": a compressed member is corrupt"));
  return out;
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
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(str("load_npz: cannot open '", path, "'"));
  const std::string b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto* u = reinterpret_cast<const unsigned char*>(b.data());
  auto corrupt = [&](const char* why) { return Error(str("load_npz: '", path, "' is not a valid NPZ file (", why, ")")); };
  if (b.size() < 22) throw corrupt("too short");
  size_t eocd = b.size() - 22;
  while (get32(u + eocd) != 0x06054b50) {
    if (eocd == 0 || b.size() - eocd > 22 + 0xffff) throw corrupt("no end-of-archive record");
    --eocd;
  }
  const uint32_t count = get16(u + eocd + 10);
  size_t at = get32(u + eocd + 16);
  TensorMap entries;
  for (uint32_t i = 0; i < count; ++i) {
    if (at + 46 > b.size() || get32(u + at) != 0x02014b50) throw corrupt("bad central directory");
    const uint32_t method = get16(u + at + 10), crc = get32(u + at + 16), csize = get32(u + at + 20), usize = get32(u + at + 24);
    const uint32_t nlen = get16(u + at + 28), xlen = get16(u + at + 30), clen = get16(u + at + 32);
    const uint32_t local = get32(u + at + 42);
    if (at + 46 + nlen > b.size()) throw corrupt("bad central directory");
    std::string name = b.substr(at + 46, nlen);
    at += 46 + nlen + xlen + clen;
    if (local + 30 > b.size() || get32(u + local) != 0x04034b50) throw corrupt("bad local header");
    const size_t data_at = local + 30 + get16(u + local + 26) + get16(u + local + 28);
    if (data_at + csize > b.size()) throw corrupt("truncated member");
    std::string raw = b.substr(data_at, csize);
    if (method == 8) raw = inflate_raw(path, raw, usize);
    else if (method != 0) throw corrupt("unsupported compression method");
    if (uint32_t(crc32(0, reinterpret_cast<const Bytef*>(raw.data()), uInt(raw.size()))) != crc)
      throw corrupt(("checksum mismatch in " + name).c_str());
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0) name.resize(name.size() - 4);
    entries[name] = parse_npy(str("load_npz: ", path, ": member '", name, "'"), raw);
  }
  return entries;
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
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(str("load_npy: cannot open '", path, "': ", std::strerror(errno)));
  const std::string b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return parse_npy(str("load_npy: '", path, "'"), b);
}

}  // namespace chainer
