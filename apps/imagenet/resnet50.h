// ResNet-50 as the ImageNet example's resnet50.py: a 7x7 convolution (with bias) and
// BatchNormalization, max pooling, four stages of bottleneck blocks (3, 4, 6 and 3 of them), a
// global average and a fully connected layer. Convolutions are He-initialized; those in the
// blocks have no bias, each followed by BatchNormalization. The example's
// average_pooling_2d(h, 7) at 224x224 is a global average at any other size, so the model runs
// on small images too.
#pragma once
#include "apps/imagenet/model.h"

namespace apps::imagenet {

// A bottleneck block that changes the size: 1x1 (in_size to ch), 3x3 (strided), 1x1 (ch to
// out_size) convolutions, and a strided 1x1 convolution on the shortcut (the example's
// BottleNeckA; downsample_fb puts the stride on the first 1x1 instead, as ResNeXt's).
class BottleNeckA : public chainer::Chain {
 public:
  BottleNeckA(int64_t in_size, int64_t ch, int64_t out_size, int64_t stride = 2, int64_t groups = 1,
              bool downsample_fb = false);
  chainer::Variable forward(const chainer::Variable& x) override;

 private:
  std::shared_ptr<chainer::links::Convolution2D> conv1, conv2, conv3, conv4;
  std::shared_ptr<chainer::links::BatchNormalization> bn1, bn2, bn3, bn4;
};

// A bottleneck block that keeps the size, with the identity as its shortcut (BottleNeckB).
class BottleNeckB : public chainer::Chain {
 public:
  BottleNeckB(int64_t in_size, int64_t ch, int64_t groups = 1);
  chainer::Variable forward(const chainer::Variable& x) override;

 private:
  std::shared_ptr<chainer::links::Convolution2D> conv1, conv2, conv3;
  std::shared_ptr<chainer::links::BatchNormalization> bn1, bn2, bn3;
};

// A stage: one BottleNeckA then LAYER - 1 BottleNeckB, children "0", "1", ... as the example's
// ChainList Block.
class Block : public chainer::Chain {
 public:
  Block(int64_t layer, int64_t in_size, int64_t ch, int64_t out_size, int64_t stride = 2, int64_t groups = 1,
        bool downsample_fb = false);
  chainer::Variable forward(const chainer::Variable& x) override;

 private:
  std::vector<std::shared_ptr<chainer::Link>> blocks_;
};

// The example's ResNet50.
class ResNet50 : public ImageNetModel {
 public:
  static constexpr const char* kArch = "resnet50";  // make_model's name
  static constexpr int64_t kInsize = 224;           // the example's input size
  // A model for N_CLASS classes whose data pipeline crops INSIZE pixels (any size from 3 up:
  // below it the max pooling after conv1 gets a 1x1 map and has no output).
  explicit ResNet50(int64_t n_class = 1000, int64_t insize = kInsize);
  chainer::Variable predict(const chainer::Variable& x) override;

 private:
  std::shared_ptr<chainer::links::Convolution2D> conv1;
  std::shared_ptr<chainer::links::BatchNormalization> bn1;
  std::shared_ptr<Block> res2, res3, res4, res5;
  std::shared_ptr<chainer::links::Linear> fc;
};

}  // namespace apps::imagenet
