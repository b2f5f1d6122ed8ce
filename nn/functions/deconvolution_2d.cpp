#include "nn/functions/deconvolution_2d.h"

#include "autograd/function_hook.h"
#include "autograd/function_node.h"
#include "core/ops/ops.h"
#include "nn/autocast.h"

namespace chainer::functions {

namespace {
std::string pair_str(int64_t a, int64_t b) { return str("(", a, ", ", b, ")"); }

// The adjoint of convolution_2d: its backward is the convolution (for x) and the convolution's
// filter gradient with the roles of image and output swapped (for W).
class Deconvolution2DNode : public FunctionNode {
 public:
  Deconvolution2DNode(Tensor x, Tensor W, bool has_bias, ops::Conv2dParams params)
      : x_(std::move(x)), W_(std::move(W)), has_bias_(has_bias), params_(params) {}
  std::string name() const override { return "Deconvolution2D"; }

  std::vector<Tensor> backward(const std::vector<Tensor>& grads) override {
    const Tensor& gy = grads[0];
    std::vector<Tensor> g(has_bias_ ? 3 : 2);
    if (input_requires_grad(0)) g[0] = ops::convolution_2d(gy, W_, Tensor(), params_, x_.size(2), x_.size(3));
    if (input_requires_grad(1)) g[1] = ops::convolution_2d_grad_filter(gy, x_, W_.size(2), W_.size(3), params_);
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

Variable deconvolution_2d(const Variable& x_in, const Variable& W_in, const Variable& b_in, Pair stride, Pair pad,
                          std::optional<Pair> outsize, Pair dilate, int64_t groups) {
  // Mixed precision: a function of the half list (nn/autocast.h).
  const Variable x = autocast::for_half(x_in), W = autocast::for_half(W_in), b = autocast::for_half(b_in);
  ForwardHooks hooks("Deconvolution2D", x, W, b);
  const char* op = "deconvolution_2d";
  if (!x.defined() || !W.defined()) throw Error(str(op, ": x and W must be defined"));
  if (x.ndim() != 4)
    throw Error(str(op, ": x must be 4-D (batch, channels, height, width), got shape ", shape_str(x.shape())));
  if (W.ndim() != 4)
    throw Error(str(op, ": W must be 4-D (in_channels, out_channels / groups, kh, kw), got shape ",
                    shape_str(W.shape())));
  if (groups < 1) throw Error(str(op, ": groups ", groups, " must be positive"));
  if (stride.y < 1 || stride.x < 1) throw Error(str(op, ": stride ", pair_str(stride.y, stride.x), " must be positive"));
  if (dilate.y < 1 || dilate.x < 1) throw Error(str(op, ": dilate ", pair_str(dilate.y, dilate.x), " must be positive"));
  const Shape& xs = x.shape();
  const Shape& ws = W.shape();
  if (xs[1] != ws[0])
    throw Error(str(op, ": x has ", xs[1], " channels but W expects ", ws[0], " (W has shape ", shape_str(ws), ")"));
  if (ws[0] % groups != 0)
    throw Error(str(op, ": groups ", groups, " does not divide the ", ws[0], " channels of x"));
  const int64_t c_out = ws[1] * groups, kh = ws[2], kw = ws[3];
  int64_t out_h, out_w;
  if (outsize) {
    out_h = outsize->y, out_w = outsize->x;
    // Chainer's check: a convolution of the output gives back x's extents.
    const int64_t lo_h = ops::conv_outsize(out_h, kh, stride.y, pad.y, false, dilate.y);
    const int64_t hi_h = ops::conv_outsize(out_h, kh, stride.y, pad.y, true, dilate.y);
    const int64_t lo_w = ops::conv_outsize(out_w, kw, stride.x, pad.x, false, dilate.x);
    const int64_t hi_w = ops::conv_outsize(out_w, kw, stride.x, pad.x, true, dilate.x);
    if (out_h < 1 || out_w < 1 || xs[2] < lo_h || xs[2] > hi_h || xs[3] < lo_w || xs[3] > hi_w)
      throw Error(str(op, ": outsize ", pair_str(out_h, out_w), " is inconsistent with x of extents ",
                      pair_str(xs[2], xs[3]), ": a convolution of ", pair_str(out_h, out_w), " with kernel ",
                      pair_str(kh, kw), ", stride ", pair_str(stride.y, stride.x), ", pad ", pair_str(pad.y, pad.x),
                      " and dilate ", pair_str(dilate.y, dilate.x), " gives ", pair_str(lo_h, lo_w),
                      lo_h == hi_h && lo_w == hi_w ? std::string() : str(" to ", pair_str(hi_h, hi_w))));
  } else {
    out_h = ops::deconv_outsize(xs[2], kh, stride.y, pad.y, false, dilate.y);
    out_w = ops::deconv_outsize(xs[3], kw, stride.x, pad.x, false, dilate.x);
    if (out_h < 1 || out_w < 1)
      throw Error(str(op, ": the output size ", pair_str(out_h, out_w), " is not positive (x has shape ",
                      shape_str(xs), ", kernel ", pair_str(kh, kw), ", stride ", pair_str(stride.y, stride.x), ", pad ",
                      pair_str(pad.y, pad.x), ", dilate ", pair_str(dilate.y, dilate.x), ")"));
  }
  if (b.defined() && b.shape() != Shape{c_out})
    throw Error(str(op, ": b has shape ", shape_str(b.shape()), " but W gives ", c_out, " output channels (expected ",
                    shape_str({c_out}), ")"));
  const ops::Conv2dParams params{.sy = stride.y, .sx = stride.x, .ph = pad.y, .pw = pad.x, .dy = dilate.y,
                                 .dx = dilate.x, .groups = groups};
  Tensor y = ops::convolution_2d_grad_data(x.data(), W.data(), out_h, out_w, params);
  if (b.defined()) y = ops::add(y, b.data().reshape({1, c_out, 1, 1}));
  std::vector<Variable> inputs{x, W};
  if (b.defined()) inputs.push_back(b);
  if (!needs_recording(inputs)) return Variable(std::move(y));
  auto node = std::make_shared<Deconvolution2DNode>(x.data(), W.data(), b.defined(), params);
  return record(node, inputs, {y})[0];
}

}  // namespace chainer::functions
