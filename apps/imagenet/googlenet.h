// GoogLeNet as the ImageNet example's googlenet.py: convolutions with local response
// normalization, nine Inception modules, a 7x7 average, dropout (0.4) and the main classifier
// (loss3_fc), and two auxiliary classifiers after inc4a and inc4d (5x5 average with stride 3, a
// 1x1 convolution, two fully connected layers). Training loss: loss3 + 0.3 * (loss1 + loss2), as
// the example; the accuracy is the main head's. predict(x) computes the main head only.
// 224x224 images.
#pragma once
#include "apps/imagenet/model.h"

namespace apps::imagenet {

// The example's GoogLeNet.
class GoogLeNet : public AuxiliaryHeadsModel {
 public:
  static constexpr const char* kArch = "googlenet";  // make_model's name
  static constexpr int64_t kInsize = 224;            // the input size, fixed by the heads' inputs
  explicit GoogLeNet(int64_t n_class = 1000);

 private:
  chainer::Variable heads(const chainer::Variable& x, std::vector<chainer::Variable>* aux) override;
  std::shared_ptr<chainer::links::Convolution2D> conv1, conv2_reduce, conv2;
  std::shared_ptr<chainer::links::Inception> inc3a, inc3b, inc4a, inc4b, inc4c, inc4d, inc4e, inc5a, inc5b;
  std::shared_ptr<chainer::links::Linear> loss3_fc;
  std::shared_ptr<chainer::links::Convolution2D> loss1_conv, loss2_conv;
  std::shared_ptr<chainer::links::Linear> loss1_fc1, loss1_fc2, loss2_fc1, loss2_fc2;
};

}  // namespace apps::imagenet
