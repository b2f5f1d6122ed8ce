// AlexNet as the ImageNet example's alex.py: single-GPU AlexNet, without the original's split of
// the channels over two GPUs. Five convolutions (ReLU, local response normalization and max
// pooling after the first two, pooling after the fifth) and three fully connected layers with
// dropout; 227x227 images.
#pragma once
#include "apps/imagenet/model.h"

namespace apps::imagenet {

// The example's Alex.
class Alex : public ImageNetModel {
 public:
  static constexpr const char* kArch = "alex";  // make_model's name
  static constexpr int64_t kInsize = 227;       // the input size, fixed by fc6's input
  explicit Alex(int64_t n_class = 1000);
  chainer::Variable predict(const chainer::Variable& x) override;

 private:
  std::shared_ptr<chainer::links::Convolution2D> conv1, conv2, conv3, conv4, conv5;
  std::shared_ptr<chainer::links::Linear> fc6, fc7, fc8;
};

}  // namespace apps::imagenet
