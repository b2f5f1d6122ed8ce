/// @file
/// Deconvolution2D link, as chainer.links.Deconvolution2D: functions::deconvolution_2d with
/// filters W (in_channels, out_channels / groups, kh, kw) -- Chainer's layout, input channels
/// first -- drawn from LeCunNormal unless initialW says otherwise, and bias b (out_channels,),
/// zeros unless initial_bias says otherwise. Constructed with only out_channels and ksize, or
/// with in_channels = std::nullopt, the input channels are taken from the first input.
#pragma once
#include <optional>

#include "nn/functions/pair.h"
#include "nn/initializers.h"
#include "nn/link.h"

namespace chainer::links {

/// A 2-D transposed convolution layer (Chainer's `L.Deconvolution2D`).
class Deconvolution2D : public Link {
 public:
  /// Deconvolution2D(out_channels, ksize): the input channels are inferred at the first call.
  Deconvolution2D(int64_t out_channels, functions::Pair ksize);
  /// Chainer's full form; `in_channels = std::nullopt` infers it, as Chainer's None; OUTSIZE
  /// fixes the output extents (the keyword arguments dilate and groups come last).
  Deconvolution2D(std::optional<int64_t> in_channels, int64_t out_channels, functions::Pair ksize,
                  functions::Pair stride = 1, functions::Pair pad = 0, bool nobias = false,
                  std::optional<functions::Pair> outsize = std::nullopt, initializers::Initializer initialW = {},
                  initializers::Initializer initial_bias = {}, functions::Pair dilate = 1, int64_t groups = 1);

  /// The deconvolution of X (N, in_channels, H, W); the first call of a lazily sized link creates W.
  Variable forward(const Variable& x) override;
  /// Also checks a W loaded into a lazily sized link, and takes in_channels from it.
  void serialize(Serializer& s) override;

  int64_t in_channels() const { return in_channels_; }  ///< the input channels; 0 until known
  int64_t out_channels() const { return out_channels_; }  ///< the output channels
  functions::Pair ksize() const { return ksize_; }  ///< the kernel size (kh, kw)
  functions::Pair stride() const { return stride_; }  ///< the stride
  functions::Pair pad() const { return pad_; }  ///< the padding
  std::optional<functions::Pair> outsize() const { return outsize_; }  ///< the output extents, when fixed
  functions::Pair dilate() const { return dilate_; }  ///< the dilation
  int64_t groups() const { return groups_; }  ///< the channel groups
  /// The filters, (in_channels, out_channels / groups, kh, kw); undefined until in_channels is known.
  Variable& W() { return param("W"); }
  /// The bias, (out_channels,); null without one (nobias).
  Variable* b() { return nobias_ ? nullptr : &param("b"); }

 private:
  void initialize(int64_t in_channels);
  int64_t in_channels_ = 0, out_channels_;
  functions::Pair ksize_, stride_, pad_;
  std::optional<functions::Pair> outsize_;
  functions::Pair dilate_;
  int64_t groups_;
  bool nobias_;
  initializers::Initializer initialW_;
};

}  // namespace chainer::links
