// GoogLeNet with batch normalization as the ImageNet example's googlenetbn.py: convolutions
// without bias, each followed by BatchNormalization; ten InceptionBN modules (inc3c and inc4e
// stride 2); a 7x7 average and the main classifier (out); two auxiliary classifiers after inc4a
// and inc4d (5x5 average with stride 3, a 1x1 convolution and a fully connected layer, each with
// BatchNormalization, then the classifier). Training loss: loss3 + 0.3 * (loss1 + loss2), as the
// example; the accuracy is the main head's. predict(x) computes the main head only.
// 224x224 images.
#pragma once
#include "apps/imagenet/model.h"

namespace apps::imagenet {

// The example's GoogLeNetBN.
class GoogLeNetBN : public AuxiliaryHeadsModel {
 public:
  static constexpr const char* kArch = "googlenetbn";  // make_model's name
  static constexpr int64_t kInsize = 224;              // the input size, fixed by the heads' inputs
  explicit GoogLeNetBN(int64_t n_class = 1000);

 private:
  chainer::Variable heads(const chainer::Variable& x, std::vector<chainer::Variable>* aux) override;
  std::shared_ptr<chainer::links::Convolution2D> conv1, conv2;
  std::shared_ptr<chainer::links::BatchNormalization> norm1, norm2;
  std::shared_ptr<chainer::links::InceptionBN> inc3a, inc3b, inc3c, inc4a, inc4b, inc4c, inc4d, inc4e, inc5a, inc5b;
  std::shared_ptr<chainer::links::Linear> out;
  std::shared_ptr<chainer::links::Convolution2D> conva, convb;
  std::shared_ptr<chainer::links::BatchNormalization> norma, norma2, normb, normb2;
  std::shared_ptr<chainer::links::Linear> lina, outa, linb, outb;
};

}  // namespace apps::imagenet
