#include "nn/links/inception.h"

#include "nn/functions.h"

namespace chainer::links {

Inception::Inception(std::optional<int64_t> in_channels, int64_t out1, int64_t proj3_, int64_t out3, int64_t proj5_,
                     int64_t out5, int64_t proj_pool)
    : conv1(add_link("conv1", std::make_shared<Convolution2D>(in_channels, out1, 1))),
      proj3(add_link("proj3", std::make_shared<Convolution2D>(in_channels, proj3_, 1))),
      conv3(add_link("conv3", std::make_shared<Convolution2D>(proj3_, out3, 3, 1, 1))),
      proj5(add_link("proj5", std::make_shared<Convolution2D>(in_channels, proj5_, 1))),
      conv5(add_link("conv5", std::make_shared<Convolution2D>(proj5_, out5, 5, 1, 2))),
      projp(add_link("projp", std::make_shared<Convolution2D>(in_channels, proj_pool, 1))) {}

Variable Inception::forward(const Variable& x) {
  namespace F = functions;
  Variable out1 = (*conv1)(x);
  Variable out3 = (*conv3)(F::relu((*proj3)(x)));
  Variable out5 = (*conv5)(F::relu((*proj5)(x)));
  Variable pool = (*projp)(F::max_pooling_2d(x, 3, 1, 1));
  return F::relu(F::concat({out1, out3, out5, pool}, 1));
}

}  // namespace chainer::links
