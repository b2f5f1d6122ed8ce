#include "apps/imagenet/googlenet.h"

namespace apps::imagenet {

namespace F = chainer::functions;
namespace L = chainer::links;
using chainer::Variable;

namespace {

std::shared_ptr<L::Inception> inception(int64_t out1, int64_t proj3, int64_t out3, int64_t proj5, int64_t out5,
                                        int64_t proj_pool) {
  return std::make_shared<L::Inception>(std::nullopt, out1, proj3, out3, proj5, out5, proj_pool);
}

std::shared_ptr<L::Convolution2D> conv(int64_t out, int64_t ksize, int64_t stride = 1, int64_t pad = 0) {
  return std::make_shared<L::Convolution2D>(std::nullopt, out, ksize, stride, pad);
}

std::shared_ptr<L::Linear> linear(int64_t out) { return std::make_shared<L::Linear>(std::nullopt, out); }

}  // namespace

GoogLeNet::GoogLeNet(int64_t n_class)
    : AuxiliaryHeadsModel(kArch, n_class, kInsize, /*size_agnostic=*/false),
      conv1(add_link("conv1", conv(64, 7, 2, 3))),
      conv2_reduce(add_link("conv2_reduce", conv(64, 1))),
      conv2(add_link("conv2", conv(192, 3, 1, 1))),
      inc3a(add_link("inc3a", inception(64, 96, 128, 16, 32, 32))),
      inc3b(add_link("inc3b", inception(128, 128, 192, 32, 96, 64))),
      inc4a(add_link("inc4a", inception(192, 96, 208, 16, 48, 64))),
      inc4b(add_link("inc4b", inception(160, 112, 224, 24, 64, 64))),
      inc4c(add_link("inc4c", inception(128, 128, 256, 24, 64, 64))),
      inc4d(add_link("inc4d", inception(112, 144, 288, 32, 64, 64))),
      inc4e(add_link("inc4e", inception(256, 160, 320, 32, 128, 128))),
      inc5a(add_link("inc5a", inception(256, 160, 320, 32, 128, 128))),
      inc5b(add_link("inc5b", inception(384, 192, 384, 48, 128, 128))),
      loss3_fc(add_link("loss3_fc", linear(n_class))),
      loss1_conv(add_link("loss1_conv", conv(128, 1))),
      loss2_conv(add_link("loss2_conv", conv(128, 1))),
      loss1_fc1(add_link("loss1_fc1", linear(1024))),
      loss1_fc2(add_link("loss1_fc2", linear(n_class))),
      loss2_fc1(add_link("loss2_fc1", linear(1024))),
      loss2_fc2(add_link("loss2_fc2", linear(n_class))) {}

Variable GoogLeNet::heads(const Variable& x, std::vector<Variable>* aux) {
  check_input(x);
  Variable h = F::relu((*conv1)(x));
  h = F::local_response_normalization(F::max_pooling_2d(h, 3, 2), 5);
  h = F::relu((*conv2_reduce)(h));
  h = F::relu((*conv2)(h));
  h = F::max_pooling_2d(F::local_response_normalization(h, 5), 3, 2);

  h = (*inc3a)(h);
  h = (*inc3b)(h);
  h = F::max_pooling_2d(h, 3, 2);
  h = (*inc4a)(h);
  if (aux) {
    Variable l = F::average_pooling_2d(h, 5, 3);
    l = F::relu((*loss1_conv)(l));
    l = F::relu((*loss1_fc1)(l));
    aux->push_back((*loss1_fc2)(l));
  }

  h = (*inc4b)(h);
  h = (*inc4c)(h);
  h = (*inc4d)(h);
  if (aux) {
    Variable l = F::average_pooling_2d(h, 5, 3);
    l = F::relu((*loss2_conv)(l));
    l = F::relu((*loss2_fc1)(l));
    aux->push_back((*loss2_fc2)(l));
  }

  h = (*inc4e)(h);
  h = F::max_pooling_2d(h, 3, 2);
  h = (*inc5a)(h);
  h = (*inc5b)(h);
  h = F::average_pooling_2d(h, 7, 1);
  return (*loss3_fc)(F::dropout(h, 0.4));
}

}  // namespace apps::imagenet
