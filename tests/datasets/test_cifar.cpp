// CIFAR-10 and CIFAR-100 (datasets/cifar.h) read from small archives in the real format, written
// here: a tar of the real member names, gzip-compressed, records of label byte(s) and 3072
// pixels. Values, shapes, dtypes, scale, ndim and withlabel are checked exactly, and every kind
// of broken archive raises an error naming the file and the fault. (Downloading them, with the
// MD5 check, is in test_datasets_download.cpp.)
#include <catch2/catch.hpp>

#include <cstdlib>

#include "datasets/cifar.h"
#include "dataset_files.h"

using namespace chainer;
using namespace chainer::datasets;
using namespace chainer::testing;
using Catch::Contains;

namespace {

// Checks that IMAGES (N, 3, 32, 32) or (N, 3072) of DTYPE hold the pixels of records FIRST.. as
// DTYPE(pixel) * DTYPE(scale / 255), and LABELS (if given) label(j) for record j.
template <class T>
void check_images(const Tensor& images, int64_t row0, int64_t first, int64_t n, double scale) {
  const T* data = images.data<T>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < 3072; ++k) {
      const T expected = T(cifar_pixel(first, i, k)) * T(scale / 255.0);
      if (data[(row0 + i) * 3072 + k] != expected) {
        FAIL("row " << row0 + i << " pixel " << k << ": " << data[(row0 + i) * 3072 + k] << " != " << expected);
      }
    }
}

std::vector<int32_t> labels_of(const TupleDataset& d) {
  const Tensor& t = d.fields().at(1);
  REQUIRE(t.dtype() == DType::Int32);
  return std::vector<int32_t>(t.data<int32_t>(), t.data<int32_t>() + t.numel());
}

}  // namespace

TEST_CASE("get_cifar10: the batches in order, pixels * scale / 255 as float32 (N, 3, 32, 32), labels int32") {
  TempDir tmp;
  write_gz(tmp.path / "cifar-10-binary.tar.gz", small_cifar10_tar());
  // The directory and the archive's own path read the same.
  for (const fs::path& path : {tmp.path, tmp.path / "cifar-10-binary.tar.gz"}) {
    auto [train, test] = get_cifar10(path);
    REQUIRE(train->fields().size() == 2);
    CHECK(train->fields()[0].shape() == Shape{7, 3, 32, 32});
    CHECK(train->fields()[0].dtype() == DType::Float32);
    CHECK(test->fields()[0].shape() == Shape{3, 3, 32, 32});
    check_images<float>(train->fields()[0], 0, 0, 7, 1.0);  // data_batch_1 (0, 1), then 2, 3, 4, 5 (5, 6)
    check_images<float>(test->fields()[0], 0, 100, 3, 1.0);
    CHECK(labels_of(*train) == std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6});
    CHECK(labels_of(*test) == std::vector<int32_t>{0, 1, 2});
  }
  // Pixel 1 of image 0 is 11 / 255 (its red channel, row 0, column 1).
  auto [train, test] = get_cifar10(tmp.path);
  CHECK(train->fields()[0].data<float>()[1] == float(11) * float(1.0 / 255.0));
}

TEST_CASE("get_cifar10: ndim 1, scale, float64 and withlabel=false as Chainer's") {
  TempDir tmp;
  write_gz(tmp.path / "cifar-10-binary.tar.gz", small_cifar10_tar());
  auto [train, test] = get_cifar10(tmp.path, false, 1, 2.5, DType::Float64);
  REQUIRE(train->fields().size() == 1);
  CHECK(train->fields()[0].shape() == Shape{7, 3072});
  CHECK(train->fields()[0].dtype() == DType::Float64);
  check_images<double>(train->fields()[0], 0, 0, 7, 2.5);
  check_images<double>(test->fields()[0], 0, 100, 3, 2.5);
  auto [train32, test32] = get_cifar10(tmp.path, true, 1, 0.5);
  check_images<float>(train32->fields()[0], 0, 0, 7, 0.5);
  CHECK(train32->fields()[0].shape() == Shape{7, 3072});

  REQUIRE_THROWS_WITH(get_cifar10(tmp.path, true, 2),
                      "get_cifar10: ndim must be 1 (N, 3072) or 3 (N, 3, 32, 32), got 2");
  REQUIRE_THROWS_WITH(get_cifar10(tmp.path, true, 3, 1.0, DType::Int32),
                      "get_cifar10: dtype must be float32 or float64, got int32");
}

TEST_CASE("get_cifar100: train.bin and test.bin, the fine labels") {
  TempDir tmp;
  write_gz(tmp.path / "cifar-100-binary.tar.gz", small_cifar100_tar());
  auto [train, test] = get_cifar100(tmp.path);
  CHECK(train->fields()[0].shape() == Shape{4, 3, 32, 32});
  CHECK(test->fields()[0].shape() == Shape{2, 3, 32, 32});
  check_images<float>(train->fields()[0], 0, 0, 4, 1.0);
  check_images<float>(test->fields()[0], 0, 100, 2, 1.0);
  CHECK(labels_of(*train) == std::vector<int32_t>{0, 7, 14, 21});  // j * 7 % 100, not the coarse j % 20
  CHECK(labels_of(*test) == std::vector<int32_t>{0, 7});           // 700 % 100, 707 % 100
  auto [train1, test1] = get_cifar100(tmp.path, false, 1);
  CHECK(train1->fields().size() == 1);
  CHECK(train1->fields()[0].shape() == Shape{4, 3072});
  // CIFAR-10's archive is not CIFAR-100's.
  REQUIRE_THROWS_WITH(get_cifar10(tmp.path), Contains("cifar-10-binary.tar.gz' does not exist"));
}

TEST_CASE("get_cifar10 and get_cifar100 without a path: the dataset root's archive, read without a sum") {
  TempDir tmp;
  dataset::set_dataset_root(tmp.path);
  fs::create_directories(tmp.path / "pfnet/chainer/cifar");
  write_gz(tmp.path / "pfnet/chainer/cifar/cifar-10-binary.tar.gz", small_cifar10_tar());
  write_gz(tmp.path / "pfnet/chainer/cifar/cifar-100-binary.tar.gz", small_cifar100_tar());
  CHECK(get_cifar10().first->size() == 7);
  CHECK(get_cifar100().first->size() == 4);
  CHECK(get_cifar10(true, 1).second->fields()[0].shape() == Shape{3, 3072});
  // A bad ndim is refused before anything is read or downloaded.
  dataset::set_dataset_root(tmp.path / "elsewhere");
  REQUIRE_THROWS_WITH(get_cifar10(true, 2), Contains("ndim must be 1"));
  CHECK_FALSE(fs::exists(tmp.path / "elsewhere"));
  dataset::set_dataset_root("");
}

TEST_CASE("CIFAR archives: a broken file raises an error naming it and the fault") {
  TempDir tmp;
  const fs::path path = tmp.path / "cifar-10-binary.tar.gz";
  const Bytes whole = gzip(small_cifar10_tar());
  auto fails_with = [&](const Bytes& bytes, const std::string& what) {
    write_file(path, bytes);
    REQUIRE_THROWS_WITH(get_cifar10(path), Contains(path.string()) && Contains(what));
  };
  SECTION("not gzip") { fails_with(small_cifar10_tar(), "is not gzip data (it starts with bytes 99 105"); }
  SECTION("empty") { fails_with("", "is not gzip data (it is 0 bytes long)"); }
  SECTION("cut inside a member") {
    fails_with(whole.substr(0, 5000), "is truncated: member 'cifar-10-batches-bin/data_batch_1.bin' needs");
  }
  SECTION("cut inside a tar header") {
    const Bytes data = small_cifar10_tar();
    fails_with(gzip(data.substr(0, 1024 + 200)),
               "is truncated: the tar header at offset 1024 is cut short (200 of 512 bytes)");
  }
  SECTION("cut before the gzip trailer") {
    fails_with(whole.substr(0, whole.size() - 4), "the gzip stream ends before its checksum");
  }
  SECTION("a corrupted byte: the gzip CRC-32 fails") {
    Bytes bad = whole;
    // Past the gzip and stored-block headers and 5 tar blocks: into data_batch_1's pixels.
    bad[10 + 5 + 2560 + 100] ^= 0x40;
    fails_with(bad, "cannot decompress CIFAR-10 archive");
  }
  SECTION("a damaged tar header") {
    Bytes data = small_cifar10_tar();
    data[3] = 'X';  // the first member's name, under its checksum
    fails_with(gzip(data), "is not a valid tar archive: the header at offset 0 of its data has a wrong checksum");
  }
  SECTION("a missing member") {
    fails_with(gzip(tar({{"cifar-10-batches-bin/data_batch_1.bin", cifar_records(0, 1, [](int64_t) {
                            return std::vector<uint8_t>{1};
                          })}})),
               "has no member data_batch_2.bin");
  }
  auto label = [](int64_t) { return std::vector<uint8_t>{3}; };
  auto archive_with_batch1 = [&](const Bytes& batch1) {
    std::vector<std::pair<std::string, Bytes>> members{{"d/data_batch_1.bin", batch1}};
    for (const char* name :
         {"data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"})
      members.push_back({std::string("d/") + name, cifar_records(0, 1, label)});
    return gzip(tar(members));
  };
  SECTION("a member that is not a whole number of records") {
    fails_with(archive_with_batch1(cifar_records(0, 2, label).substr(0, 3073 + 100)),
               "member data_batch_1.bin holds 3173 bytes, which is not a whole number of records of 3073 bytes");
  }
  SECTION("a label out of range") {
    Bytes records = cifar_records(0, 2, label);
    records[3073] = char(10);
    fails_with(archive_with_batch1(records),
               "record 1 of member data_batch_1.bin has label 10, but labels are classes 0-9");
  }
  SECTION("the file is not there") {
    REQUIRE_THROWS_WITH(get_cifar10(path),
                        Contains("does not exist; put cifar-10-binary.tar.gz (https://www.cs.toronto.edu/~kriz/"));
  }
}

TEST_CASE("CIFAR-100 archives: coarse and fine labels are each checked") {
  TempDir tmp;
  const fs::path path = tmp.path / "cifar-100-binary.tar.gz";
  for (auto [coarse, fine, what] : {std::tuple{20, 5, "has coarse label 20, but labels are classes 0-19"},
                                    std::tuple{19, 100, "has fine label 100, but labels are classes 0-99"}}) {
    auto labels = [&](int64_t) { return std::vector<uint8_t>{uint8_t(coarse), uint8_t(fine)}; };
    write_gz(path, tar({{"c/train.bin", cifar_records(0, 1, labels)}, {"c/test.bin", cifar_records(0, 1, labels)}}));
    REQUIRE_THROWS_WITH(get_cifar100(path), Contains("record 0 of member train.bin " + std::string(what)));
  }
}
