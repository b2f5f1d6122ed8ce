#include "apps/imagenet/resnet50.h"

#include <cmath>
#include <string>

namespace apps::imagenet {

namespace F = chainer::functions;
namespace L = chainer::links;
using chainer::Variable;

namespace {


// The example's L.Convolution2D(in, out, ksize, stride, pad, initialW=HeNormal(), nobias=True, groups).
std::shared_ptr<L::Convolution2D> conv(int64_t in, int64_t out, int64_t ksize, int64_t stride, int64_t pad,
                                       int64_t groups = 1) {
  return std::make_shared<L::Convolution2D>(in, out, ksize, stride, pad, /*nobias=*/true, he_normal(),
                                            chainer::initializers::Initializer{}, 1, groups);
}

std::shared_ptr<L::BatchNormalization> bn(int64_t size) { return std::make_shared<L::BatchNormalization>(size); }

}  // namespace

BottleNeckA::BottleNeckA(int64_t in_size, int64_t ch, int64_t out_size, int64_t stride, int64_t groups,
                         bool downsample_fb) {
  const int64_t stride_1x1 = downsample_fb ? stride : 1, stride_3x3 = downsample_fb ? 1 : stride;
  conv1 = add_link("conv1", conv(in_size, ch, 1, stride_1x1, 0));
  bn1 = add_link("bn1", bn(ch));
  conv2 = add_link("conv2", conv(ch, ch, 3, stride_3x3, 1, groups));
  bn2 = add_link("bn2", bn(ch));
  conv3 = add_link("conv3", conv(ch, out_size, 1, 1, 0));
  bn3 = add_link("bn3", bn(out_size));
  conv4 = add_link("conv4", conv(in_size, out_size, 1, stride, 0));
  bn4 = add_link("bn4", bn(out_size));
}

Variable BottleNeckA::forward(const Variable& x) {
  Variable h1 = F::relu((*bn1)((*conv1)(x)));
  h1 = F::relu((*bn2)((*conv2)(h1)));
  h1 = (*bn3)((*conv3)(h1));
  Variable h2 = (*bn4)((*conv4)(x));
  return F::relu(h1 + h2);
}

BottleNeckB::BottleNeckB(int64_t in_size, int64_t ch, int64_t groups) {
  conv1 = add_link("conv1", conv(in_size, ch, 1, 1, 0));
  bn1 = add_link("bn1", bn(ch));
  conv2 = add_link("conv2", conv(ch, ch, 3, 1, 1, groups));
  bn2 = add_link("bn2", bn(ch));
  conv3 = add_link("conv3", conv(ch, in_size, 1, 1, 0));
  bn3 = add_link("bn3", bn(in_size));
}

Variable BottleNeckB::forward(const Variable& x) {
  Variable h = F::relu((*bn1)((*conv1)(x)));
  h = F::relu((*bn2)((*conv2)(h)));
  h = (*bn3)((*conv3)(h));
  return F::relu(h + x);
}

Block::Block(int64_t layer, int64_t in_size, int64_t ch, int64_t out_size, int64_t stride, int64_t groups,
             bool downsample_fb) {
  blocks_.push_back(add_link("0", std::make_shared<BottleNeckA>(in_size, ch, out_size, stride, groups, downsample_fb)));
  for (int64_t i = 1; i < layer; ++i)
    blocks_.push_back(add_link(std::to_string(i), std::make_shared<BottleNeckB>(out_size, ch, groups)));
}

Variable Block::forward(const Variable& x) {
  Variable h = x;
  for (const auto& block : blocks_) h = (*block)(h);
  return h;
}

ResNet50::ResNet50(int64_t n_class, int64_t insize)
    : ImageNetModel(kArch, n_class, insize, /*size_agnostic=*/true),
      conv1(add_link("conv1", std::make_shared<L::Convolution2D>(3, 64, 7, 2, 3, /*nobias=*/false, he_normal()))),
      bn1(add_link("bn1", bn(64))),
      res2(add_link("res2", std::make_shared<Block>(3, 64, 64, 256, 1))),
      res3(add_link("res3", std::make_shared<Block>(4, 256, 128, 512))),
      res4(add_link("res4", std::make_shared<Block>(6, 512, 256, 1024))),
      res5(add_link("res5", std::make_shared<Block>(3, 1024, 512, 2048))),
      fc(add_link("fc", std::make_shared<L::Linear>(2048, n_class))) {}

Variable ResNet50::predict(const Variable& x) {
  check_input(x);
  Variable h = (*bn1)((*conv1)(x));
  h = F::max_pooling_2d(F::relu(h), 3, 2);
  h = (*res2)(h);
  h = (*res3)(h);
  h = (*res4)(h);
  h = (*res5)(h);
  h = F::average_pooling_2d(h, {h.shape()[2], h.shape()[3]}, 1);
  return (*fc)(h);
}

}  // namespace apps::imagenet
