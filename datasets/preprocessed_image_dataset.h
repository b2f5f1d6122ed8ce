/// @file
/// The ImageNet example's preprocessing (Chainer's examples/imagenet/train_imagenet.py,
/// PreprocessedDataset) as a dataset over labelled images: a crop of crop_size x crop_size, random
/// with a random horizontal flip for training or the center for validation, minus the mean image
/// cropped alike, times 1/255.
///
/// Randomness that no thread schedule can change: the crop of example i is a pure function of
/// (seed, i, draw), where draw counts how many times example i was read before from this dataset
/// (Philox4x32-10 keyed by the seed, counter (i, draw)). A prefetching iterator's workers may read
/// examples in any order on any thread and still see the crops a single thread would; each epoch
/// reads each example once more and gets a fresh crop. The counts live in the dataset, not in
/// snapshots: a resumed run draws as a fresh dataset does. A share of the dataset rebuilt from its
/// description (datasets/dataset_description.h: the mean, the settings, each example's key and the
/// base's description) keys its crops as the whole dataset did, so a scattered example is cropped
/// as it would be on one process.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/io/byte_stream.h"
#include "datasets/dataset.h"

namespace chainer::datasets {

/// Where one example is cut: rows [top, top + crop_size), columns [left, left + crop_size) of the
/// image after the optional horizontal flip (the mean image is never flipped), as the example does.
struct CropWindow {
  int64_t top = 0;    ///< the first row
  int64_t left = 0;   ///< the first column, counted in the flipped image when flip is set
  bool flip = false;  ///< whether the image is mirrored left to right before the crop
};

/// `(image[:, :, ::-1] if flip else image)[:, top:top+crop, left:left+crop] - mean[:, same]`, times
/// 1/255, as float32 (C, crop_size, crop_size). IMAGE and MEAN are (C, H, W) of the same shape.
Tensor crop_subtract_mean(const Tensor& image, const Tensor& mean, int64_t crop_size, const CropWindow& window);

/// Labelled images {image (C, H, W), label} preprocessed to {float32 (C, crop, crop), label}.
class PreprocessedImageDataset : public Dataset {
 public:
  /// BASE's examples cropped to CROP_SIZE: at random (top and left uniform in [0, H - crop_size - 1]
  /// and [0, W - crop_size - 1], as the example's randint, and a flip with probability 1/2) when
  /// RANDOM, else at the center ((H - crop_size) / 2, (W - crop_size) / 2); MEAN (C, H, W), the
  /// mean image (compute_mean), cropped alike and subtracted. SEED keys the random crops. KEYS,
  /// when given (one per example), crop example i as example KEYS[i] (else i) of that seed: a share
  /// cut from a larger dataset keeps the crops it had there.
  PreprocessedImageDataset(DatasetPtr base, Tensor mean, int64_t crop_size, bool random = true, uint64_t seed = 0,
                           std::vector<int64_t> keys = {});

  size_t size() const override { return base_->size(); }
  /// example_at(i, d) where d is how many times example i was read from this dataset before.
  Example get_example(size_t i) const override;
  /// Example I as its DRAW-th read gives it: the same for the same (seed, i, draw) on any thread.
  Example example_at(size_t i, uint64_t draw) const;
  /// The window of example I's DRAW-th read, for an image of H x W.
  CropWindow window(size_t i, uint64_t draw, int64_t h, int64_t w) const;
  /// Kind "PreprocessedImageDataset": the mean, the settings, the keys of INDICES and the base's
  /// description of INDICES (nullopt when the base has none).
  std::optional<std::string> describe(const std::vector<size_t>& indices) const override;
  /// The dataset the fields of a "PreprocessedImageDataset" description make.
  static DatasetPtr from_description(ByteReader& fields);

  const DatasetPtr& base() const { return base_; }  ///< the labelled images
  const Tensor& mean() const { return mean_; }       ///< the mean image, float32 (C, H, W)
  int64_t crop_size() const { return crop_size_; }   ///< the side of the square crop
  bool random() const { return random_; }            ///< random crops and flips (training), or centered
  uint64_t seed() const { return seed_; }            ///< the key of the random crops

 private:
  DatasetPtr base_;
  Tensor mean_;
  int64_t crop_size_;
  bool random_;
  uint64_t seed_;
  std::vector<int64_t> keys_;  // the key of each example's crops; empty: its index
  std::unique_ptr<std::atomic<uint64_t>[]> draws_;  // reads so far, per example
};

}  // namespace chainer::datasets
