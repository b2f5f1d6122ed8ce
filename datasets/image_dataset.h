/// @file
/// Image files as datasets, as Chainer's chainer.datasets.ImageDataset and LabeledImageDataset:
/// the datasets hold paths (and labels) and decode an image (read_image, (C, H, W)) each time an
/// example is read, so a data set of any size costs only its list in memory. Both describe a share
/// of their examples as its paths (and labels), root and dtypes (datasets/dataset_description.h),
/// so chainermn::scatter_dataset sends that instead of pixels.
///
/// Paths stay under the root: Chainer joins root and path (os.path.join), so an absolute path or
/// one that climbs with ".." would read any file the process may read. Both datasets refuse such
/// a path when they are made, naming it (and its line of a list file), unless
/// ALLOW_OUTSIDE_ROOT is true. The check is on the path's text; a symbolic link under the root
/// is followed wherever it leads.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/io/byte_stream.h"
#include "datasets/dataset.h"

namespace chainer::datasets {

/// Images named by paths relative to a root: example i is {image (C, H, W)}.
class ImageDataset : public Dataset {
 public:
  /// A dataset of the images at `root / path` for each of PATHS, decoded as DTYPE. Throws
  /// chainer::Error naming the path and its index when it leaves the root (above) and
  /// ALLOW_OUTSIDE_ROOT is false.
  ImageDataset(std::vector<std::string> paths, std::string root = ".", DType dtype = DType::Float32,
               bool allow_outside_root = false);
  /// A dataset of the images listed in the text file LIST_PATH, one path per line (each line
  /// stripped of surrounding whitespace, as Chainer does; a blank line names the root itself).
  /// Throws chainer::Error naming LIST_PATH when it cannot be read or is not a regular file, and
  /// naming the line when its path leaves the root and ALLOW_OUTSIDE_ROOT is false.
  explicit ImageDataset(const std::string& list_path, std::string root = ".", DType dtype = DType::Float32,
                        bool allow_outside_root = false);

  size_t size() const override { return paths_.size(); }
  Example get_example(size_t i) const override;
  /// Kind "ImageDataset": the root, the dtype and the paths of INDICES.
  std::optional<std::string> describe(const std::vector<size_t>& indices) const override;
  /// The dataset the fields of an "ImageDataset" description make.
  static DatasetPtr from_description(ByteReader& fields);

  const std::vector<std::string>& paths() const { return paths_; }  ///< the paths, relative to root()
  const std::string& root() const { return root_; }                ///< the directory the paths start from
  DType dtype() const { return dtype_; }                             ///< the images' dtype
  bool allow_outside_root() const { return allow_outside_root_; }    ///< whether paths may leave the root

 private:
  std::vector<std::string> paths_;
  std::string root_;
  DType dtype_;
  bool allow_outside_root_;
};

/// Labelled images: example i is {image (C, H, W) of dtype, label () of label_dtype}.
class LabeledImageDataset : public Dataset {
 public:
  /// One (path, label) pair per example.
  using Pair = std::pair<std::string, int64_t>;
  /// A dataset of PAIRS, each image at `root / path`, decoded as DTYPE, its label as LABEL_DTYPE.
  /// Throws chainer::Error naming the pair's index when a label does not fit LABEL_DTYPE exactly,
  /// or a path leaves the root (above) and ALLOW_OUTSIDE_ROOT is false.
  LabeledImageDataset(std::vector<Pair> pairs, std::string root = ".", DType dtype = DType::Float32,
                      DType label_dtype = DType::Int32, bool allow_outside_root = false);
  /// A dataset of the pairs listed in the text file LIST_PATH, one "path label" per line, split on
  /// whitespace as Chainer does: every line, blank ones included, must have exactly two fields,
  /// the label must be an integer that LABEL_DTYPE holds exactly (int32: -2147483648 to
  /// 2147483647), and the path must stay under the root unless ALLOW_OUTSIDE_ROOT. Throws
  /// chainer::Error naming LIST_PATH and the line (counted from 1) otherwise, the label as written;
  /// and naming LIST_PATH when it cannot be read or is not a regular file.
  explicit LabeledImageDataset(const std::string& list_path, std::string root = ".",
                               DType dtype = DType::Float32, DType label_dtype = DType::Int32,
                               bool allow_outside_root = false);

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
  bool allow_outside_root() const { return allow_outside_root_; }  ///< whether paths may leave the root

 private:
  std::vector<Pair> pairs_;
  std::string root_;
  DType dtype_, label_dtype_;
  bool allow_outside_root_;
};

}  // namespace chainer::datasets
