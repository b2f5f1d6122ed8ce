// Network in Network as the ImageNet example's nin.py: four mlpconv layers (MLPConvolution2D,
// He-initialized), max pooling after the first three, dropout before the last, whose n_class
// channels are averaged over the image: the example's average_pooling_2d(h, 6) at its 227x227
// input, a global average at any other size, so the model runs on small images too.
#pragma once
#include "apps/imagenet/model.h"

namespace apps::imagenet {

// The example's NIN.
class NIN : public ImageNetModel {
 public:
  static constexpr const char* kArch = "nin";  // make_model's name
  static constexpr int64_t kInsize = 227;      // the example's input size
  // A model for N_CLASS classes whose data pipeline crops INSIZE pixels (any size from 39 up:
  // below it the last max pooling gets a 1x1 map and has no output).
  explicit NIN(int64_t n_class = 1000, int64_t insize = kInsize);
  chainer::Variable predict(const chainer::Variable& x) override;

 private:
  std::shared_ptr<chainer::links::MLPConvolution2D> mlpconv1, mlpconv2, mlpconv3, mlpconv4;
};

}  // namespace apps::imagenet
