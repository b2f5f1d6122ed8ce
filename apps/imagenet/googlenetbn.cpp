#include "apps/imagenet/googlenetbn.h"

namespace apps::imagenet {

namespace F = chainer::functions;
namespace L = chainer::links;
using chainer::Variable;

namespace {

std::shared_ptr<L::InceptionBN> inception(int64_t out1, int64_t proj3, int64_t out3, int64_t proj33, int64_t out33,
                                          const std::string& pooltype, std::optional<int64_t> proj_pool,
                                          int64_t stride = 1) {
  return std::make_shared<L::InceptionBN>(std::nullopt, out1, proj3, out3, proj33, out33, pooltype, proj_pool, stride);
}

// L.Convolution2D(None, out, ksize, stride, pad, nobias=True).
std::shared_ptr<L::Convolution2D> conv(int64_t out, int64_t ksize, int64_t stride = 1, int64_t pad = 0) {
  return std::make_shared<L::Convolution2D>(std::nullopt, out, ksize, stride, pad, /*nobias=*/true);
}

std::shared_ptr<L::BatchNormalization> bn(int64_t size) { return std::make_shared<L::BatchNormalization>(size); }

}  // namespace

GoogLeNetBN::GoogLeNetBN(int64_t n_class)
    : AuxiliaryHeadsModel(kArch, n_class, kInsize, /*size_agnostic=*/false),
      conv1(add_link("conv1", conv(64, 7, 2, 3))),
      conv2(add_link("conv2", conv(192, 3, 1, 1))),
      norm1(add_link("norm1", bn(64))),
      norm2(add_link("norm2", bn(192))),
      inc3a(add_link("inc3a", inception(64, 64, 64, 64, 96, "avg", 32))),
      inc3b(add_link("inc3b", inception(64, 64, 96, 64, 96, "avg", 64))),
      inc3c(add_link("inc3c", inception(0, 128, 160, 64, 96, "max", std::nullopt, 2))),
      inc4a(add_link("inc4a", inception(224, 64, 96, 96, 128, "avg", 128))),
      inc4b(add_link("inc4b", inception(192, 96, 128, 96, 128, "avg", 128))),
      inc4c(add_link("inc4c", inception(160, 128, 160, 128, 160, "avg", 128))),
      inc4d(add_link("inc4d", inception(96, 128, 192, 160, 192, "avg", 128))),
      inc4e(add_link("inc4e", inception(0, 128, 192, 192, 256, "max", std::nullopt, 2))),
      inc5a(add_link("inc5a", inception(352, 192, 320, 160, 224, "avg", 128))),
      inc5b(add_link("inc5b", inception(352, 192, 320, 192, 224, "max", 128))),
      out(add_link("out", std::make_shared<L::Linear>(std::nullopt, n_class))),
      conva(add_link("conva", conv(128, 1))),
      convb(add_link("convb", conv(128, 1))),
      norma(add_link("norma", bn(128))),
      norma2(add_link("norma2", bn(1024))),
      normb(add_link("normb", bn(128))),
      normb2(add_link("normb2", bn(1024))),
      lina(add_link("lina", std::make_shared<L::Linear>(std::nullopt, 1024, /*nobias=*/true))),
      outa(add_link("outa", std::make_shared<L::Linear>(std::nullopt, n_class))),
      linb(add_link("linb", std::make_shared<L::Linear>(std::nullopt, 1024, /*nobias=*/true))),
      outb(add_link("outb", std::make_shared<L::Linear>(std::nullopt, n_class))) {}

Variable GoogLeNetBN::heads(const Variable& x, std::vector<Variable>* aux) {
  check_input(x);
  Variable h = F::max_pooling_2d(F::relu((*norm1)((*conv1)(x))), 3, 2, 1);
  h = F::max_pooling_2d(F::relu((*norm2)((*conv2)(h))), 3, 2, 1);

  h = (*inc3a)(h);
  h = (*inc3b)(h);
  h = (*inc3c)(h);
  h = (*inc4a)(h);
  if (aux) {
    Variable a = F::average_pooling_2d(h, 5, 3);
    a = F::relu((*norma)((*conva)(a)));
    a = F::relu((*norma2)((*lina)(a)));
    aux->push_back((*outa)(a));
  }

  h = (*inc4b)(h);
  h = (*inc4c)(h);
  h = (*inc4d)(h);
  if (aux) {
    Variable b = F::average_pooling_2d(h, 5, 3);
    b = F::relu((*normb)((*convb)(b)));
    b = F::relu((*normb2)((*linb)(b)));
    aux->push_back((*outb)(b));
  }

  h = (*inc4e)(h);
  h = (*inc5a)(h);
  h = F::average_pooling_2d((*inc5b)(h), 7);
  return (*out)(h);
}

}  // namespace apps::imagenet
