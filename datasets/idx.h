/// @file
/// IDX files, the format of MNIST and of the data sets laid out like it (Fashion-MNIST): a
/// big-endian header (magic number, then one extent per axis) and the values, row-major. Each
/// file is read through zlib, so FILE.gz and an uncompressed FILE both work. A broken file
/// (not a regular file, wrong magic number, cut short, corrupt gzip stream) raises
/// chainer::Error naming the file and what is wrong with it. The counts in the header are checked
/// against the file's size before the values are allocated: an uncompressed file must hold
/// them, a gzip file's bytes must be able to inflate to them (deflate expands at most 1032 times).
#pragma once
#include <filesystem>

#include "core/tensor/tensor.h"

namespace chainer::datasets {

/// The raw contents of one IDX image file (magic 2051) as uint8 (N, rows, cols).
Tensor load_idx_images(const std::filesystem::path& path);
/// The raw contents of one IDX label file (magic 2049) as uint8 (N,).
Tensor load_idx_labels(const std::filesystem::path& path);

}  // namespace chainer::datasets
