/// @file
/// Image files as datasets, as Chainer's chainer.datasets.ImageDataset and LabeledImageDataset:
/// the datasets hold paths (and labels) and decode an image (read_image, (C, H, W)) each time an
/// example is read, so a data set of any size costs only its list in memory. Both describe a share
/// of their examples as its paths (and labels), root and dtypes (datasets/dataset_description.h),
/// so chainermn::scatter_dataset sends that instead of pixels.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/byte_stream.h"
#include "datasets/dataset.h"

namespace chainer::datasets {

/// Images named by paths relative to a root: example i is {image (C, H, W)}.
class ImageDataset : public Dataset {
 public:
  /// A dataset of the images at `root / path` for each of PATHS, decoded as DTYPE.
  ImageDataset(std::vector<std::string> paths, std::string root = ".", DType dtype = DType::Float32);
  /// A dataset of the images listed in the text file LIST_PATH, one path per line (each line
  /// stripped of surrounding whitespace, as Chainer does; a blank line names the root itself).
  /// Throws chainer::Error naming LIST_PATH when it cannot be read.
  explicit ImageDataset(const std::string& list_path, std::string root = ".", DType dtype = DType::Float32);

  size_t size() const override { return paths_.size(); }
  Example get_example(size_t i) const override;
  /// Kind "ImageDataset": the root, the dtype and the paths of INDICES.
  std::optional<std::string> describe(const std::vector<size_t>& indices) const override;
  /// The dataset the fields of an "ImageDataset" description make.
  static DatasetPtr from_description(ByteReader& fields);

  const std::vector<std::string>& paths() const { return paths_; }  ///< the paths, relative to root()
  const std::string& root() const { return root_; }                ///< the directory the paths start from
  DType dtype() const { return dtype_; }                             ///< the images' dtype

 private:
  std::vector<std::string> paths_;
  std::string root_;
  DType dtype_;
};

/// Labelled images: example i is {image (C, H, W) of dtype, label () of label_dtype}.
class LabeledImageDataset : public Dataset {
 public:
  /// One (path, label) pair per example.
  using Pair = std::pair<std::string, int64_t>;
  /// A dataset of PAIRS, each image at `root / path`, decoded as DTYPE, its label as LABEL_DTYPE.
  LabeledImageDataset(std::vector<Pair> pairs, std::string root = ".", DType dtype = DType::Float32,
                      DType label_dtype = DType::Int32);
  /// A dataset of the pairs listed in the text file LIST_PATH, one "path label" per line, split on
  /// whitespace as Chainer does: every line, blank ones included, must have exactly two fields, and
  /// the label must be an integer. Throws chainer::Error naming LIST_PATH and the line (counted
  /// from 1) otherwise.
  explicit LabeledImageDataset(const std::string& list_path, std::string root = ".",
                               DType dtype = DType::Float32, DType label_dtype = DType::Int32);

  size_t size() const override { return pairs_.size(); }
  Example get_example(size_t i) const override;
  /// Kind "LabeledImageDataset": the root, the two dtypes and the pairs of INDICES.
  std::optional<std::string> describe(const std::vector<size_t>& indices) const override;
  /// The dataset the fields of a "LabeledImageDataset" description make.
  static DatasetPtr from_description(ByteReader& fields);

  const std::vector<Pair>& pairs() const { return pairs_; }  ///< the (path, label) pairs, paths relative to root()
  const std::string& root() const { return root_; }           ///< the directory the paths start from
  DType dtype() const { return dtype_; }                        ///< the images' dtype
  DType label_dtype() const { return label_dtype_; }            ///< the labels' dtype

 private:
  std::vector<Pair> pairs_;
  std::string root_;
  DType dtype_, label_dtype_;
};

}  // namespace chainer::datasets
