/// @file
/// MNIST handwritten digits, as Chainer's chainer.datasets.get_mnist: the four IDX files of
/// http://yann.lecun.com/exdb/mnist/, read from a directory given by the caller, or, without
/// one, from get_dataset_root() / "pfnet/chainer/mnist" (Chainer's place), where the files are
/// downloaded on first use (chainer::dataset::download_dataset, mnist_source()). Each file is
/// read through zlib, so FILE.gz and an uncompressed FILE both work (.gz first). Broken or
/// missing files raise chainer::Error naming the file and what is wrong with it.
#pragma once
#include <filesystem>

#include "datasets/download.h"
#include "datasets/idx.h"
#include "datasets/tuple_dataset.h"

namespace chainer::datasets {

/// What an MNIST directory holds and where to download it, for error messages: "the four IDX
/// files (train-images-idx3-ubyte.gz, ...; URLs)".
const char* mnist_files_help();

/// Where MNIST is cached and downloaded from: "pfnet/chainer/mnist" under the dataset root;
/// the mirrors, in order, LeCun's page (Chainer's address, often down) and torchvision's copy;
/// the SHA-256 of each original file.
const dataset::DatasetSource& mnist_source();

/// MNIST as {train (60000 examples), test (10000 examples)}, read from DIR. Images are float32
/// `pixel / 255 * scale`, of shape (N, 784) for ndim 1, (N, 28, 28) for ndim 2 and (N, 1, 28, 28)
/// for ndim 3; labels are int32 (N,). Without labels each dataset has the single field images.
TupleDatasetPair get_mnist(const std::filesystem::path& dir, bool withlabel = true, int ndim = 1,
                           double scale = 1.0);

/// get_mnist(DIR, ...) for a directory given as a C string (without this overload a string
/// literal would convert to bool and pick the directory-less form).
inline TupleDatasetPair get_mnist(const char* dir, bool withlabel = true, int ndim = 1, double scale = 1.0) {
  return get_mnist(std::filesystem::path(dir), withlabel, ndim, scale);
}

/// MNIST as Chainer's get_mnist(withlabel, ndim, scale) finds it: in get_dataset_root() /
/// "pfnet/chainer/mnist", downloading first the files that are missing there or fail their
/// SHA-256 (a cached file cut short or damaged is downloaded again once; see mnist_source).
TupleDatasetPair get_mnist(bool withlabel = true, int ndim = 1, double scale = 1.0);

}  // namespace chainer::datasets
