/// @file
/// MNIST handwritten digits, as Chainer's chainer.datasets.get_mnist, read from the four IDX
/// files of http://yann.lecun.com/exdb/mnist/ in a local directory (nothing is downloaded).
/// Each file is read through zlib, so FILE.gz and an uncompressed FILE both work (.gz first).
/// Broken or missing files raise chainer::Error naming the file and what is wrong with it.
#pragma once
#include <filesystem>

#include "datasets/idx.h"
#include "datasets/tuple_dataset.h"

namespace chainer::datasets {

/// What an MNIST directory holds and where to download it, for error messages: "the four IDX
/// files (train-images-idx3-ubyte.gz, ...; URLs)".
const char* mnist_files_help();

/// MNIST as {train (60000 examples), test (10000 examples)}, read from DIR. Images are float32
/// `pixel / 255 * scale`, of shape (N, 784) for ndim 1, (N, 28, 28) for ndim 2 and (N, 1, 28, 28)
/// for ndim 3; labels are int32 (N,). Without labels each dataset has the single field images.
TupleDatasetPair get_mnist(const std::filesystem::path& dir, bool withlabel = true, int ndim = 1,
                           double scale = 1.0);

}  // namespace chainer::datasets
