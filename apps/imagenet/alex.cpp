#include "apps/imagenet/alex.h"

namespace apps::imagenet {

namespace F = chainer::functions;
namespace L = chainer::links;
using chainer::Variable;

Alex::Alex(int64_t n_class)
    : ImageNetModel(kArch, n_class, kInsize, /*size_agnostic=*/false),
      conv1(add_link("conv1", std::make_shared<L::Convolution2D>(std::nullopt, 96, 11, 4))),
      conv2(add_link("conv2", std::make_shared<L::Convolution2D>(std::nullopt, 256, 5, 1, 2))),
      conv3(add_link("conv3", std::make_shared<L::Convolution2D>(std::nullopt, 384, 3, 1, 1))),
      conv4(add_link("conv4", std::make_shared<L::Convolution2D>(std::nullopt, 384, 3, 1, 1))),
      conv5(add_link("conv5", std::make_shared<L::Convolution2D>(std::nullopt, 256, 3, 1, 1))),
      fc6(add_link("fc6", std::make_shared<L::Linear>(std::nullopt, 4096))),
      fc7(add_link("fc7", std::make_shared<L::Linear>(std::nullopt, 4096))),
      fc8(add_link("fc8", std::make_shared<L::Linear>(std::nullopt, n_class))) {}

Variable Alex::predict(const Variable& x) {
  check_input(x);
  Variable h = F::max_pooling_2d(F::local_response_normalization(F::relu((*conv1)(x))), 3, 2);
  h = F::max_pooling_2d(F::local_response_normalization(F::relu((*conv2)(h))), 3, 2);
  h = F::relu((*conv3)(h));
  h = F::relu((*conv4)(h));
  h = F::max_pooling_2d(F::relu((*conv5)(h)), 3, 2);
  h = F::dropout(F::relu((*fc6)(h)));
  h = F::dropout(F::relu((*fc7)(h)));
  return (*fc8)(h);
}

}  // namespace apps::imagenet
