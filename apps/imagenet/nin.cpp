#include "apps/imagenet/nin.h"

#include <cmath>

namespace apps::imagenet {

namespace F = chainer::functions;
namespace L = chainer::links;
using chainer::Variable;

namespace {


std::shared_ptr<L::MLPConvolution2D> mlpconv(std::vector<int64_t> out_channels, int64_t ksize, int64_t stride,
                                             int64_t pad) {
  return std::make_shared<L::MLPConvolution2D>(std::nullopt, out_channels, ksize, stride, pad,
                                               L::MLPConvolution2D::Activation{}, he_normal());
}

}  // namespace

NIN::NIN(int64_t n_class, int64_t insize)
    : ImageNetModel(kArch, n_class, insize, /*size_agnostic=*/true),
      mlpconv1(add_link("mlpconv1", mlpconv({96, 96, 96}, 11, 4, 0))),
      mlpconv2(add_link("mlpconv2", mlpconv({256, 256, 256}, 5, 1, 2))),
      mlpconv3(add_link("mlpconv3", mlpconv({384, 384, 384}, 3, 1, 1))),
      mlpconv4(add_link("mlpconv4", mlpconv({1024, 1024, n_class}, 3, 1, 1))) {}

Variable NIN::predict(const Variable& x) {
  check_input(x);
  Variable h = F::max_pooling_2d(F::relu((*mlpconv1)(x)), 3, 2);
  h = F::max_pooling_2d(F::relu((*mlpconv2)(h)), 3, 2);
  h = F::max_pooling_2d(F::relu((*mlpconv3)(h)), 3, 2);
  h = (*mlpconv4)(F::dropout(h));
  h = F::average_pooling_2d(h, {h.shape()[2], h.shape()[3]});
  return F::reshape(h, {x.shape()[0], n_class()});
}

}  // namespace apps::imagenet
