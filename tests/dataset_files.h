// Files the dataset tests make: temporary directories, IDX files and gzip streams written by
// hand (so the tests need no zlib of their own), and a small MNIST-layout directory.
// Header-only: included by each test binary that reads or downloads data sets.
#pragma once
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "core/util/random.h"

namespace chainer::testing {

namespace fs = std::filesystem;

// A fresh directory under the system temp dir, removed with everything in it at the end.
struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("chainer_test_datasets_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

using Bytes = std::string;

inline void put_u32(Bytes& b, uint32_t v) {  // big-endian, as IDX headers
  for (int shift = 24; shift >= 0; shift -= 8) b.push_back(char((v >> shift) & 0xff));
}

inline void put_le32(Bytes& b, uint32_t v) {  // little-endian, as gzip trailers
  for (int shift = 0; shift < 32; shift += 8) b.push_back(char((v >> shift) & 0xff));
}

inline uint32_t crc32(const Bytes& data) {
  uint32_t c = 0xffffffff;
  for (unsigned char byte : data) {
    c ^= byte;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
  }
  return ~c;
}

// DATA as a gzip file of stored (uncompressed) deflate blocks (RFC 1951/1952); written by hand
// so this test needs no zlib of its own. The library reads it through zlib like any .gz file.
inline Bytes gzip(const Bytes& data) {
  Bytes b{'\x1f', '\x8b', 8, 0, 0, 0, 0, 0, 0, 3};  // magic, deflate, no flags, no mtime, Unix
  size_t pos = 0;
  do {
    const size_t len = std::min<size_t>(data.size() - pos, 65535);
    b.push_back(pos + len == data.size() ? 1 : 0);  // BFINAL, BTYPE 00 (stored)
    for (uint32_t v : {uint32_t(len), uint32_t(~len)}) {
      b.push_back(char(v & 0xff));
      b.push_back(char((v >> 8) & 0xff));
    }
    b.append(data, pos, len);
    pos += len;
  } while (pos < data.size());
  put_le32(b, crc32(data));
  put_le32(b, uint32_t(data.size()));
  return b;
}

// An IDX image file of N images of ROWS x COLS pseudo-random pixels (pixel 0 of image 0 is 0,
// pixel 1 is 255, pixel 2 is 51).
inline Bytes idx_images(uint32_t n, uint32_t rows = 28, uint32_t cols = 28, uint32_t magic = 2051) {
  Bytes b;
  put_u32(b, magic);
  put_u32(b, n);
  put_u32(b, rows);
  put_u32(b, cols);
  Generator gen(1);
  for (uint64_t i = 0; i < uint64_t(n) * rows * cols; ++i) b.push_back(char(gen.below(256)));
  if (n > 0) {
    b[16] = char(0);
    b[17] = char(255);
    b[18] = char(51);
  }
  return b;
}

inline Bytes idx_labels(uint32_t n, uint8_t bad_label = 0) {
  Bytes b;
  put_u32(b, 2049);
  put_u32(b, n);
  for (uint32_t i = 0; i < n; ++i) b.push_back(char(i % 10));
  if (bad_label && n > 0) b.back() = char(bad_label);
  return b;
}

inline void write_file(const fs::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

inline void write_gz(const fs::path& path, const Bytes& bytes) { write_file(path, gzip(bytes)); }

inline Bytes read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

// A complete small MNIST directory: 3 training and 2 test examples, gzip-compressed.
inline void write_small_mnist(const fs::path& dir) {
  write_gz(dir / "train-images-idx3-ubyte.gz", idx_images(3));
  write_gz(dir / "train-labels-idx1-ubyte.gz", idx_labels(3));
  write_gz(dir / "t10k-images-idx3-ubyte.gz", idx_images(2));
  write_gz(dir / "t10k-labels-idx1-ubyte.gz", idx_labels(2));
}

// One member of a tar archive: a regular file NAME holding DATA (a ustar header, the data, and
// zeros up to a multiple of 512 bytes).
inline Bytes tar_member(const std::string& name, const Bytes& data) {
  Bytes h(512, '\0');
  auto put = [&](size_t at, const std::string& text) { std::copy(text.begin(), text.end(), h.begin() + long(at)); };
  auto octal = [](uint64_t v, int digits) {
    std::string out(size_t(digits), '0');
    for (int i = digits - 1; i >= 0; --i, v /= 8) out[size_t(i)] = char('0' + v % 8);
    return out;
  };
  put(0, name);
  put(100, octal(0644, 7));
  put(108, octal(0, 7));
  put(116, octal(0, 7));
  put(124, octal(data.size(), 11));
  put(136, octal(0, 11));
  put(148, "        ");
  h[156] = '0';
  put(257, std::string("ustar\0" "00", 8));
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  put(148, octal(sum, 6) + std::string("\0 ", 2));
  Bytes out = h + data;
  out.append((512 - data.size() % 512) % 512, '\0');
  return out;
}

// A tar archive of MEMBERS ({name, data}, in order), ended by two zero blocks.
inline Bytes tar(const std::vector<std::pair<std::string, Bytes>>& members) {
  Bytes out;
  for (const auto& [name, data] : members) out += tar_member(name, data);
  return out + Bytes(1024, '\0');
}

// The pixel byte K (0-3071) of record I of a CIFAR test file whose records are numbered from FIRST.
inline uint8_t cifar_pixel(int64_t first, int64_t i, int64_t k) { return uint8_t((first + i) * 37 + k * 11); }

// N CIFAR records numbered from FIRST: LABELS(i) gives each record's label bytes (1 for
// CIFAR-10, coarse and fine for CIFAR-100), then 3072 pixels cifar_pixel(FIRST, i, k).
template <class Labels>
Bytes cifar_records(int64_t first, int64_t n, Labels labels) {
  Bytes out;
  for (int64_t i = 0; i < n; ++i) {
    for (uint8_t l : labels(first + i)) out.push_back(char(l));
    for (int64_t k = 0; k < 3072; ++k) out.push_back(char(cifar_pixel(first, i, k)));
  }
  return out;
}

// A small cifar-10-binary.tar.gz as the CIFAR page's: the member names of the real archive
// (with its text files), data_batch_1..5 holding 2, 1, 1, 1, 2 records (numbered 0-6) and
// test_batch 3 (numbered 100-102); record j's label is j % 10.
inline Bytes small_cifar10_tar() {
  auto label = [](int64_t j) { return std::vector<uint8_t>{uint8_t(j % 10)}; };
  const int64_t counts[5] = {2, 1, 1, 1, 2};
  std::vector<std::pair<std::string, Bytes>> members{{"cifar-10-batches-bin/readme.html", "<html>"},
                                                     {"cifar-10-batches-bin/batches.meta.txt", "airplane\n"}};
  int64_t first = 0;
  for (int b = 0; b < 5; ++b) {
    members.push_back({"cifar-10-batches-bin/data_batch_" + std::to_string(b + 1) + ".bin",
                       cifar_records(first, counts[b], label)});
    first += counts[b];
  }
  members.push_back({"cifar-10-batches-bin/test_batch.bin", cifar_records(100, 3, label)});
  return tar(members);
}

// A small cifar-100-binary.tar.gz: train.bin of 4 records (numbered 0-3), test.bin of 2 (100,
// 101); record j's coarse label is j % 20 and its fine label (j * 7) % 100.
inline Bytes small_cifar100_tar() {
  auto labels = [](int64_t j) { return std::vector<uint8_t>{uint8_t(j % 20), uint8_t(j * 7 % 100)}; };
  return tar({{"cifar-100-binary/coarse_label_names.txt", "aquatic_mammals\n"},
              {"cifar-100-binary/train.bin", cifar_records(0, 4, labels)},
              {"cifar-100-binary/test.bin", cifar_records(100, 2, labels)}});
}

}  // namespace chainer::testing
