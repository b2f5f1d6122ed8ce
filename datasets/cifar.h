/// @file
/// CIFAR-10 and CIFAR-100 (32x32 colour images of 10 and 100 classes), as Chainer's
/// chainer.datasets.get_cifar10 and get_cifar100, read from the binary distribution of
/// https://www.cs.toronto.edu/~kriz/cifar.html: cifar-10-binary.tar.gz (data_batch_1.bin to
/// data_batch_5.bin and test_batch.bin, records of 1 label byte and 3072 pixel bytes) and
/// cifar-100-binary.tar.gz (train.bin and test.bin, records of a coarse label byte, a fine label
/// byte and 3072 pixel bytes; the fine labels are returned, as Chainer). Pixels are stored
/// channel by channel (1024 red, 1024 green, 1024 blue, each row by row), which is the (3, 32, 32)
/// layout of ndim 3 as it stands.
///
/// The archive is read as it is, through zlib and a small tar reader, without unpacking it. It is
/// looked for in get_dataset_root() / "pfnet/chainer/cifar" (Chainer's directory for CIFAR) and
/// downloaded there when missing, checked against the MD5 the CIFAR page publishes (it gives no
/// other sum). An archive already there is read without a sum, as Chainer trusts its cache: the
/// gzip stream's own CRC-32 and length catch a damaged or cut-short file, and a file in the
/// format with fewer records (a test's) reads too. Every broken file raises chainer::Error
/// naming the file and what is wrong: not gzip, corrupt or truncated data, a damaged tar header,
/// a missing member, a member that is not a whole number of records, a label out of range.
#pragma once
#include <filesystem>

#include "datasets/download.h"
#include "datasets/tuple_dataset.h"

namespace chainer::datasets {

/// Where CIFAR-10 is cached and downloaded from: "pfnet/chainer/cifar" under the dataset root,
/// https://www.cs.toronto.edu/~kriz/, cifar-10-binary.tar.gz (170052171 bytes, the MD5 of the
/// CIFAR page).
const dataset::DatasetSource& cifar10_source();

/// The same for CIFAR-100: cifar-100-binary.tar.gz (168513733 bytes) in the same directory.
const dataset::DatasetSource& cifar100_source();

/// CIFAR-10 as {train (data_batch_1 to 5, 50000 examples in the real archive), test (test_batch,
/// 10000)}, read from PATH: the archive itself, or a directory holding cifar-10-binary.tar.gz.
/// Images are DTYPE (float32 or float64) `pixel * (scale / 255)`, of shape (N, 3072) for ndim 1
/// and (N, 3, 32, 32) for ndim 3; labels are int32 (N,), 0-9. Without labels each dataset has
/// the single field images.
TupleDatasetPair get_cifar10(const std::filesystem::path& path, bool withlabel = true, int ndim = 3,
                             double scale = 1.0, DType dtype = DType::Float32);

/// get_cifar10(PATH, ...) for a path given as a C string (without this overload a string
/// literal would convert to bool and pick the path-less form).
inline TupleDatasetPair get_cifar10(const char* path, bool withlabel = true, int ndim = 3, double scale = 1.0,
                                    DType dtype = DType::Float32) {
  return get_cifar10(std::filesystem::path(path), withlabel, ndim, scale, dtype);
}

/// CIFAR-10 as Chainer's get_cifar10(withlabel, ndim, scale, dtype): from get_dataset_root() /
/// "pfnet/chainer/cifar", downloading the archive first when it is not there (cifar10_source).
TupleDatasetPair get_cifar10(bool withlabel = true, int ndim = 3, double scale = 1.0, DType dtype = DType::Float32);

/// CIFAR-100 as get_cifar10(PATH, ...): train.bin (50000 examples in the real archive) and
/// test.bin (10000) of cifar-100-binary.tar.gz; labels are the fine labels, int32 0-99 (the
/// coarse labels, 0-19, are checked and left out, as Chainer does).
TupleDatasetPair get_cifar100(const std::filesystem::path& path, bool withlabel = true, int ndim = 3,
                              double scale = 1.0, DType dtype = DType::Float32);

/// get_cifar100(PATH, ...) for a path given as a C string.
inline TupleDatasetPair get_cifar100(const char* path, bool withlabel = true, int ndim = 3, double scale = 1.0,
                                     DType dtype = DType::Float32) {
  return get_cifar100(std::filesystem::path(path), withlabel, ndim, scale, dtype);
}

/// CIFAR-100 as Chainer's get_cifar100(withlabel, ndim, scale, dtype), from the dataset root,
/// downloading the archive first when it is not there (cifar100_source).
TupleDatasetPair get_cifar100(bool withlabel = true, int ndim = 3, double scale = 1.0, DType dtype = DType::Float32);

}  // namespace chainer::datasets
