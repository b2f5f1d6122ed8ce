#include "nn/functions/convolution_2d.h"

#include "autograd/function_hook.h"
#include "autograd/function_node.h"
#include "core/ops/ops.h"
#include "nn/autocast.h"
#include "nn/functions/array.h"

namespace chainer::functions {

namespace {
class Convolution2DNode : public FunctionNode {
 public:
  Convolution2DNode(Tensor x, Tensor W, bool has_bias, ops::Conv2dParams params)
      : x_(std::move(x)), W_(std::move(W)), has_bias_(has_bias), params_(params) {}
  std::string name() const override { return "Convolution2D"; }

  std::vector<Tensor> backward(const std::vector<Tensor>& grads) override {
    const Tensor& gy = grads[0];
    std::vector<Tensor> g(has_bias_ ? 3 : 2);
    // The first layer's input is data: its gradient, a col2im pass, is skipped.
    if (input_requires_grad(0)) g[0] = ops::convolution_2d_grad_data(gy, W_, x_.size(2), x_.size(3), params_);
    if (input_requires_grad(1)) g[1] = ops::convolution_2d_grad_filter(x_, gy, W_.size(2), W_.size(3), params_);
    if (has_bias_ && input_requires_grad(2)) g[2] = ops::sum(gy, {0, 2, 3});
    return g;
  }

 protected:
  void release_saved() override { x_ = W_ = Tensor(); }

 private:
  Tensor x_, W_;
  bool has_bias_;
  ops::Conv2dParams params_;
};
}  // namespace

Variable convolution_2d(const Variable& x_in, const Variable& W_in, const Variable& b_in, Pair stride, Pair pad,
                        bool cover_all, Pair dilate, int64_t groups) {
  // Mixed precision: a function of the half list (nn/autocast.h).
  const Variable x = autocast::for_half(x_in), W = autocast::for_half(W_in), b = autocast::for_half(b_in);
  ForwardHooks hooks("Convolution2D", x, W, b);
  if (!x.defined() || !W.defined()) throw Error("convolution_2d: x and W must be defined");
  const ops::Conv2dParams params{.sy = stride.y, .sx = stride.x, .ph = pad.y, .pw = pad.x, .dy = dilate.y,
                                 .dx = dilate.x, .groups = groups, .cover_all = cover_all};
  Tensor y = ops::convolution_2d(x.data(), W.data(), b.defined() ? b.data() : Tensor(), params);
  std::vector<Variable> inputs{x, W};
  if (b.defined()) inputs.push_back(b);
  if (!needs_recording(inputs)) return Variable(std::move(y));
  auto node = std::make_shared<Convolution2DNode>(x.data(), W.data(), b.defined(), params);
  return record(node, inputs, {y})[0];
}

Variable depthwise_convolution_2d(const Variable& x_in, const Variable& W_in, const Variable& b_in, Pair stride,
                                  Pair pad) {
  // Mixed precision: a function of the half list (nn/autocast.h).
  const Variable x = autocast::for_half(x_in), W = autocast::for_half(W_in), b = autocast::for_half(b_in);
  if (!x.defined() || !W.defined()) throw Error("depthwise_convolution_2d: x and W must be defined");
  if (W.ndim() != 4)
    throw Error(str("depthwise_convolution_2d: W must be 4-D (channel_multiplier, in_channels, kh, kw), got shape ",
                    shape_str(W.shape())));
  if (x.ndim() != 4)
    throw Error(str("depthwise_convolution_2d: x must be 4-D (batch, channels, height, width), got shape ",
                    shape_str(x.shape())));
  const int64_t multiplier = W.shape()[0], channels = W.shape()[1];
  if (x.shape()[1] != channels)
    throw Error(str("depthwise_convolution_2d: x has ", x.shape()[1], " channels but W expects ", channels,
                    " (W has shape ", shape_str(W.shape()), ")"));
  // (m, c, kh, kw) -> (c, m, kh, kw) -> (c * m, 1, kh, kw): output channel c * m + j.
  const Variable filters = reshape(transpose(W, {1, 0, 2, 3}), {channels * multiplier, 1, W.shape()[2], W.shape()[3]});
  return convolution_2d(x, filters, b, stride, pad, false, 1, channels);
}

}  // namespace chainer::functions
