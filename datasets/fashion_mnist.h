/// @file
/// Fashion-MNIST (Zalando's article images: 10 classes of clothing, laid out as MNIST), as
/// Chainer's chainer.datasets.get_fashion_mnist. The four IDX files are looked for, in order:
///  1. in the directory the caller gives (get_fashion_mnist(dir, ...)), and nowhere else;
///  2. where Debian's package dataset-fashion-mnist put them (/usr/share/datasets/fashion-mnist
///     in Debian 12), found at run time through dpkg's list of the package's files,
///     /var/lib/dpkg/info/dataset-fashion-mnist.list (fashion_mnist_package_directory());
///  3. in get_dataset_root() / "pfnet/chainer/fashion-mnist" (Chainer's place), where the
///     files that are missing or fail their SHA-256 are downloaded from Zalando's server
///     (fashion_mnist_source()).
/// The package's files are the same images and labels gzip-compressed anew, so their bytes
/// (and SHA-256) differ from the downloaded ones; both read the same.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "datasets/download.h"
#include "datasets/tuple_dataset.h"

namespace chainer::datasets {

/// What a Fashion-MNIST directory holds and where to download it, for error messages: "the
/// four IDX files (train-images-idx3-ubyte.gz, ...; URL)".
const char* fashion_mnist_files_help();

/// Where Fashion-MNIST is cached and downloaded from: "pfnet/chainer/fashion-mnist" under the
/// dataset root, Zalando's server (Chainer's and torchvision's address), and the SHA-256 of each
/// file it serves.
const dataset::DatasetSource& fashion_mnist_source();

/// The directory of Debian's dataset-fashion-mnist files, from dpkg's list of the package's
/// files (/var/lib/dpkg/info/dataset-fashion-mnist.list); empty when the package is not
/// installed or its four files are not all there.
std::filesystem::path fashion_mnist_package_directory();

/// Fashion-MNIST as {train (60000 examples), test (10000 examples)}, read from DIR. Images are
/// float32 `pixel / 255 * scale`, of shape (N, 784) for ndim 1, (N, 28, 28) for ndim 2 and
/// (N, 1, 28, 28) for ndim 3; labels are int32 (N,), the classes of
/// get_fashion_mnist_labels. Without labels each dataset has the single field images.
TupleDatasetPair get_fashion_mnist(const std::filesystem::path& dir, bool withlabel = true, int ndim = 1,
                                   double scale = 1.0);

/// get_fashion_mnist(DIR, ...) for a directory given as a C string (without this overload a
/// string literal would convert to bool and pick the directory-less form).
inline TupleDatasetPair get_fashion_mnist(const char* dir, bool withlabel = true, int ndim = 1, double scale = 1.0) {
  return get_fashion_mnist(std::filesystem::path(dir), withlabel, ndim, scale);
}

/// Fashion-MNIST as Chainer's get_fashion_mnist(withlabel, ndim, scale), from Debian's package
/// where it is installed, else from the dataset root, downloading the missing files first.
TupleDatasetPair get_fashion_mnist(bool withlabel = true, int ndim = 1, double scale = 1.0);

/// The English names of LABELS (each 0-9): "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
/// "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot" (as Chainer).
std::vector<std::string> get_fashion_mnist_labels(const std::vector<int>& labels);

}  // namespace chainer::datasets
