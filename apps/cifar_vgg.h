// The VGG-style network of ChainerMN's CIFAR examples (examples/cifar/models/VGG.py, and
// parallel_convolution/VGG.py built of ParallelConvolution2D): thirteen Blocks (3x3 convolution
// without bias, batch normalization, ReLU) in five stages of 64, 128, 256, 512 and 512 channels,
// dropout between the blocks of a stage and a 2x2 max pooling after each, then dropout, a
// 512-unit linear layer with batch normalization and ReLU, dropout and the classifier. The links
// carry Chainer's names (block1_1/conv, block1_1/bn, ..., fc1, bn_fc1, fc2).
//
// Made for 32x32 images (CIFAR: five poolings leave 1x1); 28x28 Fashion-MNIST works unchanged,
// since max pooling covers the whole input as Chainer's does by default (cover_all): 28 -> 14 ->
// 7 -> 4 -> 2 -> 1.
#pragma once
#include <chainer.h>

#include <functional>
#include <memory>
#include <vector>

#include "app_common.h"

namespace apps {

// A convolution, batch normalization, ReLU block (VGG.py's Block).
class VGGBlock : public chainer::Chain {
 public:
  // CONV's output normalized over OUT_CHANNELS channels (a ParallelConvolution2D's whole output,
  // gathered from every rank).
  VGGBlock(std::shared_ptr<chainer::links::Convolution2D> conv, int64_t out_channels);
  chainer::Variable forward(const chainer::Variable& x) override;
  const std::shared_ptr<chainer::links::Convolution2D>& conv() const { return conv_; }

 private:
  std::shared_ptr<chainer::links::Convolution2D> conv_;
  std::shared_ptr<chainer::links::BatchNormalization> bn_;
};

class VGG : public chainer::Chain {
 public:
  // Makes the convolution of one block: IN channels to OUT, 3x3, pad 1, no bias.
  using ConvFactory = std::function<std::shared_ptr<chainer::links::Convolution2D>(int64_t in, int64_t out)>;
  // N_CLASS_LABELS classes from IN_CHANNELS-channel images (3 for CIFAR, 1 for Fashion-MNIST);
  // CONV makes each block's convolution (default: Convolution2D).
  VGG(int64_t n_class_labels, int64_t in_channels, const ConvFactory& conv = {});
  chainer::Variable forward(const chainer::Variable& x) override;
  const std::vector<std::shared_ptr<VGGBlock>>& blocks() const { return blocks_; }

 private:
  std::vector<std::shared_ptr<VGGBlock>> blocks_;
  std::shared_ptr<chainer::links::Linear> fc1_, fc2_;
  std::shared_ptr<chainer::links::BatchNormalization> bn_fc1_;
};

// What the network needs at least, trained in float32 with MomentumSGD on SIZE x SIZE images of
// IN_CHANNELS channels: its parameters with their gradients and momenta, and per example the
// input and every block's output with its gradient.
DenseCost vgg_cost(int64_t n_class_labels, int64_t in_channels, int64_t size);

}  // namespace apps
