// The layout MNIST and Fashion-MNIST share, read into Chainer's {train, test} pair: a directory
// of four IDX files (train-/t10k- images and labels) of 28x28 uint8 images and labels 0-9.
// Internal (not installed): get_mnist and get_fashion_mnist are its public faces, and each
// passes the names and advice its messages use.
#pragma once
#include <array>
#include <filesystem>
#include <string>

#include "datasets/tuple_dataset.h"

namespace chainer::datasets::detail {

/// How messages about one data set in this layout name it and say how to get it.
struct MnistFormat {
  std::string name;        ///< The data set, as messages name it: "MNIST", "Fashion-MNIST".
  std::string function;    ///< The public function, for argument errors: "get_mnist".
  std::string how_to_get;  ///< Ends a message about a missing file or directory: what to do.
};

/// The four files' names as stored (gzip-compressed), training images first.
inline constexpr std::array<const char*, 4> kMnistFileNames{
    "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz"};

/// Throws unless NDIM is 1, 2 or 3, naming FORMAT.function.
void check_ndim(const MnistFormat& format, int ndim);

/// {train, test} read from DIR: images float32 pixel / 255 * SCALE of shape (N, 784), (N, 28, 28)
/// or (N, 1, 28, 28) for NDIM 1, 2, 3; labels int32 (N,), left out unless WITHLABEL.
TupleDatasetPair load_mnist_format(const std::filesystem::path& dir, const MnistFormat& format, bool withlabel,
                                   int ndim, double scale);

}  // namespace chainer::datasets::detail
