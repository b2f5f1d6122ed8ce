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
#include <string>
#include <utility>
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

// The options both CIFAR examples take besides CommonOptions, with the example's defaults.
struct CifarOptions : CommonOptions {
  explicit CifarOptions(int64_t epochs);
  std::string dataset = "cifar10";  // -d: cifar10, cifar100 or fashion-mnist
  double learnrate = 0.05;          // -l: MomentumSGD's
  std::string communicator;         // default: naive on CPUs, pure_nccl on GPUs
  int64_t n_class() const { return dataset == "cifar100" ? 100 : 10; }
  int64_t channels() const { return dataset == "fashion-mnist" ? 1 : 3; }  // of the images
  int64_t side() const { return dataset == "fashion-mnist" ? 28 : 32; }    // of the square images
};
// Their usage lines; LEARNRATE_HELP describes -l.
std::string cifar_usage(const char* learnrate_help);
// Reads the current option into O when it is one of CifarOptions' own; false otherwise.
bool read_cifar_option(Args& args, CifarOptions& o);
// Throws chainer::Error naming a -d/--dataset other than cifar10, cifar100 or fashion-mnist.
void check_cifar_dataset(const CifarOptions& o);
// The training and test sets O names, read from --data or their default places.
std::pair<chainer::datasets::DatasetPtr, chainer::datasets::DatasetPtr> read_cifar_dataset(const CifarOptions& o);

}  // namespace apps
