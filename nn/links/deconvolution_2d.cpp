#include "nn/links/deconvolution_2d.h"

#include "nn/functions/deconvolution_2d.h"

namespace chainer::links {

Deconvolution2D::Deconvolution2D(int64_t out_channels, functions::Pair ksize)
    : Deconvolution2D(std::nullopt, out_channels, ksize) {}

Deconvolution2D::Deconvolution2D(std::optional<int64_t> in_channels, int64_t out_channels, functions::Pair ksize,
                                 functions::Pair stride, functions::Pair pad, bool nobias,
                                 std::optional<functions::Pair> outsize, initializers::Initializer initialW,
                                 initializers::Initializer initial_bias, functions::Pair dilate, int64_t groups)
    : out_channels_(out_channels), ksize_(ksize), stride_(stride), pad_(pad), outsize_(outsize), dilate_(dilate),
      groups_(groups), nobias_(nobias), initialW_(std::move(initialW)) {
  if (out_channels <= 0) throw Error(str("Deconvolution2D: out_channels must be positive, got ", out_channels));
  if (ksize.y <= 0 || ksize.x <= 0)
    throw Error(str("Deconvolution2D: ksize must be positive, got (", ksize.y, ", ", ksize.x, ")"));
  if (groups <= 0) throw Error(str("Deconvolution2D: groups must be positive, got ", groups));
  if (out_channels % groups != 0)
    throw Error(str("Deconvolution2D: groups ", groups, " does not divide out_channels ", out_channels));
  add_param("W");
  if (!nobias) {
    add_param("b", initial_bias ? initial_bias({out_channels}, "Deconvolution2D: initial_bias")
                                : Tensor::zeros({out_channels}));
  }
  if (in_channels) {
    if (*in_channels <= 0) throw Error(str("Deconvolution2D: in_channels must be positive, got ", *in_channels));
    initialize(*in_channels);
  }
}

void Deconvolution2D::initialize(int64_t in_channels) {
  if (in_channels % groups_ != 0)
    throw Error(str("Deconvolution2D: groups ", groups_, " does not divide in_channels ", in_channels));
  const Shape shape{in_channels, out_channels_ / groups_, ksize_.y, ksize_.x};
  // Drawn on the host, so a model initialized on a GPU starts from the same weights as on the CPU.
  W().set_data(
      initial_value(initialW_ ? initialW_(shape, "Deconvolution2D: initialW") : initializers::lecun_normal(shape)));
  in_channels_ = in_channels;
}

void Deconvolution2D::serialize(Serializer& s) {
  Link::serialize(s);
  if (!s.is_reader() || !W().data().defined()) return;
  const Shape& shape = W().data().shape();
  const bool fits = shape.size() == 4 && shape[1] * groups_ == out_channels_ && shape[2] == ksize_.y &&
                    shape[3] == ksize_.x && (in_channels_ == 0 || shape[0] == in_channels_);
  if (!fits)
    throw Error(str("Deconvolution2D: the loaded W '", s.prefix(), "W' has shape ", shape_str(shape),
                    " but this link is (", in_channels_ ? std::to_string(in_channels_) : std::string("any"), ", ",
                    out_channels_ / groups_, ", ", ksize_.y, ", ", ksize_.x, ")"));
  in_channels_ = shape[0];
}

Variable Deconvolution2D::forward(const Variable& x) {
  if (!W().data().defined()) {
    if (x.ndim() != 4)
      throw Error(str("Deconvolution2D: the input must be 4-D (batch, channels, height, width), got shape ",
                      shape_str(x.shape())));
    initialize(x.shape()[1]);
  }
  return functions::deconvolution_2d(x, W(), nobias_ ? Variable() : *b(), stride_, pad_, outsize_, dilate_, groups_);
}

}  // namespace chainer::links
