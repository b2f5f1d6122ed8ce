#include "nn/links/mlp_convolution_2d.h"

#include <string>

#include "core/util/error.h"
#include "nn/functions.h"

namespace chainer::links {

MLPConvolution2D::MLPConvolution2D(std::optional<int64_t> in_channels, const std::vector<int64_t>& out_channels,
                                   functions::Pair ksize, functions::Pair stride, functions::Pair pad,
                                   Activation activation, initializers::Initializer conv_init,
                                   initializers::Initializer bias_init)
    : activation_(activation ? std::move(activation)
                             : Activation([](const Variable& x) { return functions::relu(x); })) {
  if (out_channels.empty()) throw Error("MLPConvolution2D: out_channels must list at least one layer, got none");
  std::optional<int64_t> in = in_channels;
  for (size_t i = 0; i < out_channels.size(); ++i) {
    auto layer = i == 0 ? std::make_shared<Convolution2D>(in, out_channels[i], ksize, stride, pad, false, conv_init,
                                                          bias_init)
                        : std::make_shared<Convolution2D>(in, out_channels[i], 1, 1, 0, false, conv_init, bias_init);
    layers_.push_back(add_link(std::to_string(i), layer));
    in = out_channels[i];
  }
}

Variable MLPConvolution2D::forward(const Variable& x) {
  Variable h = x;
  for (size_t i = 0; i + 1 < layers_.size(); ++i) h = activation_((*layers_[i])(h));
  return (*layers_.back())(h);
}

}  // namespace chainer::links
