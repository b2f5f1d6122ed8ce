/// @file
/// MNIST handwritten digits, as Chainer's chainer.datasets.get_mnist, read from the four IDX
/// files of http://yann.lecun.com/exdb/mnist/ in a local directory (nothing is downloaded).
/// Each file is read through zlib, so FILE.gz and an uncompressed FILE both work (.gz first).
/// Broken or missing files raise chainer::Error naming the file and what is wrong with it.
#pragma once
#include <filesystem>
#include <memory>
#include <utility>

#include "core/tensor.h"
#include "datasets/tuple_dataset.h"

namespace chainer::datasets {

/// What an MNIST directory holds and where to download it, for error messages: "the four IDX
/// files (train-images-idx3-ubyte.gz, ...; URLs)".
const char* mnist_files_help();

/// A {train, test} pair of in-memory datasets, as get_mnist returns.
using TupleDatasetPair = std::pair<std::shared_ptr<const TupleDataset>, std::shared_ptr<const TupleDataset>>;

/// MNIST as {train (60000 examples), test (10000 examples)}, read from DIR. Images are float32
/// `pixel / 255 * scale`, of shape (N, 784) for ndim 1, (N, 28, 28) for ndim 2 and (N, 1, 28, 28)
/// for ndim 3; labels are int32 (N,). Without labels each dataset has the single field images.
TupleDatasetPair get_mnist(const std::filesystem::path& dir, bool withlabel = true, int ndim = 1,
                           double scale = 1.0);

/// The raw contents of one IDX image file (magic 2051) as uint8 (N, rows, cols).
Tensor load_idx_images(const std::filesystem::path& path);
/// The raw contents of one IDX label file (magic 2049) as uint8 (N,).
Tensor load_idx_labels(const std::filesystem::path& path);

}  // namespace chainer::datasets
