#include "nn/links/inceptionbn.h"

#include "core/util/error.h"
#include "nn/functions.h"

namespace chainer::links {
namespace {

std::shared_ptr<Convolution2D> conv(std::optional<int64_t> in, int64_t out, int64_t ksize, int64_t stride,
                                    int64_t pad, const initializers::Initializer& init) {
  return std::make_shared<Convolution2D>(in, out, ksize, stride, pad, /*nobias=*/true, init);
}

std::shared_ptr<BatchNormalization> bn(int64_t size, DType dtype) {
  BatchNormalizationLinkOptions options;
  options.dtype = dtype;
  return std::make_shared<BatchNormalization>(size, options);
}

// Checks the arguments before any link is built, with Chainer's conditions.
const std::string& checked_pooltype(const std::string& pooltype, int64_t out1, std::optional<int64_t> proj_pool,
                                    int64_t stride) {
  if (pooltype != "max" && pooltype != "avg")
    throw Error(str("InceptionBN: pooltype must be 'max' or 'avg', got '", pooltype, "'"));
  if (stride < 1) throw Error(str("InceptionBN: stride must be positive, got ", stride));
  if (out1 < 0) throw Error(str("InceptionBN: out1 must be 0 (no 1x1 path) or positive, got ", out1));
  if (out1 > 0 && stride != 1)
    throw Error(str("InceptionBN: a 1x1 path (out1 = ", out1, ") needs stride 1, got stride ", stride));
  if (out1 > 0 && !proj_pool)
    throw Error(str("InceptionBN: a 1x1 path (out1 = ", out1, ") needs a pooling projection (proj_pool)"));
  return pooltype;
}

}  // namespace

InceptionBN::InceptionBN(std::optional<int64_t> in_channels, int64_t out1, int64_t proj3_, int64_t out3,
                         int64_t proj33_, int64_t out33, const std::string& pooltype,
                         std::optional<int64_t> proj_pool, int64_t stride, initializers::Initializer conv_init,
                         DType dtype)
    : out1_(out1), proj_pool_(proj_pool), stride_(stride),
      pooltype_(checked_pooltype(pooltype, out1, proj_pool, stride)) {
  proj3 = add_link("proj3", conv(in_channels, proj3_, 1, 1, 0, conv_init));
  conv3 = add_link("conv3", conv(proj3_, out3, 3, stride, 1, conv_init));
  proj33 = add_link("proj33", conv(in_channels, proj33_, 1, 1, 0, conv_init));
  conv33a = add_link("conv33a", conv(proj33_, out33, 3, 1, 1, conv_init));
  conv33b = add_link("conv33b", conv(out33, out33, 3, stride, 1, conv_init));
  proj3n = add_link("proj3n", bn(proj3_, dtype));
  conv3n = add_link("conv3n", bn(out3, dtype));
  proj33n = add_link("proj33n", bn(proj33_, dtype));
  conv33an = add_link("conv33an", bn(out33, dtype));
  conv33bn = add_link("conv33bn", bn(out33, dtype));
  if (out1 > 0) {
    conv1 = add_link("conv1", conv(in_channels, out1, 1, stride, 0, conv_init));
    conv1n = add_link("conv1n", bn(out1, dtype));
  }
  if (proj_pool) {
    poolp = add_link("poolp", conv(in_channels, *proj_pool, 1, 1, 0, conv_init));
    poolpn = add_link("poolpn", bn(*proj_pool, dtype));
  }
}

Variable InceptionBN::forward(const Variable& x) {
  namespace F = functions;
  std::vector<Variable> outs;
  if (out1_ > 0) outs.push_back(F::relu((*conv1n)((*conv1)(x))));
  Variable h3 = F::relu((*proj3n)((*proj3)(x)));
  outs.push_back(F::relu((*conv3n)((*conv3)(h3))));
  Variable h33 = F::relu((*proj33n)((*proj33)(x)));
  h33 = F::relu((*conv33an)((*conv33a)(h33)));
  outs.push_back(F::relu((*conv33bn)((*conv33b)(h33))));
  Variable p = pooltype_ == "max" ? F::max_pooling_2d(x, 3, stride_, 1, /*cover_all=*/false)
                                  : F::average_pooling_2d(x, 3, stride_, 1);
  if (proj_pool_) p = F::relu((*poolpn)((*poolp)(p)));
  outs.push_back(p);
  return F::concat(outs, 1);
}

}  // namespace chainer::links
