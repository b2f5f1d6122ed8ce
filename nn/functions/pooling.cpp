#include "nn/functions/pooling.h"

#include "autograd/function_hook.h"
#include "autograd/function_node.h"
#include "core/ops/ops.h"

namespace chainer::functions {

namespace {
// X defined, floating (half included), 4-D (N, C, H, W).
void check_x(const char* op, const Variable& x) {
  if (!x.defined()) throw Error(str(op, ": x must be defined"));
  const DType dtype = x.data().dtype();
  if (!is_floating(dtype))
    throw Error(str(op, ": x has dtype ", dtype_name(dtype), "; expected float32, float64, float16 or bfloat16"));
  if (x.ndim() != 4)
    throw Error(str(op, ": x has shape ", shape_str(x.shape()), "; expected 4 dimensions (N, C, H, W)"));
}

// The window of Chainer's arguments, checked (ops::check_window_2d names the bad value).
Window2D window_of(const char* op, Pair ksize, std::optional<Pair> stride, Pair pad) {
  const Pair s = stride.value_or(ksize);
  const Window2D w{ksize.y, ksize.x, s.y, s.x, pad.y, pad.x};
  ops::check_window_2d(op, w);
  return w;
}

// The window of a pooling of X, after checking both (the output must not be empty).
Window2D pooling_window(const char* op, const Variable& x, Pair ksize, std::optional<Pair> stride, Pair pad,
                        bool cover_all) {
  check_x(op, x);
  const Window2D w = window_of(op, ksize, stride, pad);
  ops::pooling_2d_output_shape(op, x.shape(), w, cover_all);
  return w;
}

class MaxPooling2DNode : public FunctionNode {
 public:
  MaxPooling2DNode(Tensor indexes, Window2D window, Shape x_shape)
      : indexes_(std::move(indexes)), window_(window), x_shape_(std::move(x_shape)) {}
  std::string name() const override { return "MaxPooling2D"; }
  std::vector<Tensor> backward(const std::vector<Tensor>& gy) override {
    return {ops::max_pooling_2d_grad(gy[0], indexes_, window_, x_shape_)};
  }

 protected:
  void release_saved() override { indexes_ = Tensor(); }

 private:
  Tensor indexes_;
  Window2D window_;
  Shape x_shape_;
};

// Average pooling and unpooling: each one's gradient is the other's forward (window_sum_2d and
// window_spread_2d are transposes), so one node serves both.
class WindowNode : public FunctionNode {
 public:
  // SUMS: the forward was window_sum_2d (average pooling), so the gradient spreads back to an
  // array of X_SHAPE; else the gradient sums the windows.
  WindowNode(const char* name, bool sums, Window2D window, bool cover_all, double scale, Shape x_shape)
      : name_(name), sums_(sums), window_(window), cover_all_(cover_all), scale_(scale), x_shape_(std::move(x_shape)) {}
  std::string name() const override { return name_; }
  std::vector<Tensor> backward(const std::vector<Tensor>& gy) override {
    if (sums_) return {ops::window_spread_2d(gy[0], window_, x_shape_[2], x_shape_[3], cover_all_, scale_)};
    return {ops::window_sum_2d(gy[0], window_, cover_all_, scale_)};
  }

 private:
  const char* name_;
  bool sums_;
  Window2D window_;
  bool cover_all_;
  double scale_;
  Shape x_shape_;
};

// Chainer's get_deconv_outsize: the extent that a window K, stride S, pad P pools down to SIZE.
int64_t unpooled_size(int64_t size, int64_t k, int64_t s, int64_t p, bool cover_all) {
  return s * (size - 1) + k - 2 * p - (cover_all ? s - 1 : 0);
}
}  // namespace

Variable max_pooling_2d(const Variable& x, Pair ksize, std::optional<Pair> stride, Pair pad, bool cover_all) {
  ForwardHooks hooks("MaxPooling2D", x);
  const Window2D w = pooling_window("max_pooling_2d", x, ksize, stride, pad, cover_all);
  ops::MaxPooling2DResult r = ops::max_pooling_2d(x.data(), w, cover_all);
  if (!needs_recording({x})) return Variable(std::move(r.y));
  return record(std::make_shared<MaxPooling2DNode>(std::move(r.indexes), w, x.shape()), {x}, {r.y})[0];
}

Variable average_pooling_2d(const Variable& x, Pair ksize, std::optional<Pair> stride, Pair pad) {
  ForwardHooks hooks("AveragePooling2D", x);
  const Window2D w = pooling_window("average_pooling_2d", x, ksize, stride, pad, false);
  const double scale = 1.0 / double(w.kh * w.kw);
  Tensor y = ops::window_sum_2d(x.data(), w, false, scale);
  if (!needs_recording({x})) return Variable(std::move(y));
  return record(std::make_shared<WindowNode>("AveragePooling2D", true, w, false, scale, x.shape()), {x}, {y})[0];
}

Variable unpooling_2d(const Variable& x, Pair ksize, std::optional<Pair> stride, Pair pad,
                      std::optional<Pair> outsize, bool cover_all) {
  ForwardHooks hooks("Unpooling2D", x);
  const char* op = "unpooling_2d";
  check_x(op, x);
  const Shape& xs = x.shape();
  const Window2D w = window_of(op, ksize, stride, pad);
  const Pair out = outsize.value_or(
      Pair(unpooled_size(xs[2], w.kh, w.sy, w.ph, cover_all), unpooled_size(xs[3], w.kw, w.sx, w.pw, cover_all)));
  if (out.y < 1 || out.x < 1)
    throw Error(str(op, ": the output would be ", out.y, "x", out.x, " for x of shape ", shape_str(xs), " with ksize (",
                    w.kh, ", ", w.kw, "), stride (", w.sy, ", ", w.sx, "), pad (", w.ph, ", ", w.pw, ") and cover_all ",
                    cover_all ? "true" : "false", "; the height and width must be positive"));
  // The output pooled with the same window must give x back: Chainer's check of outsize.
  const int64_t pooled_h = ops::conv_outsize(out.y, w.kh, w.sy, w.ph, cover_all);
  const int64_t pooled_w = ops::conv_outsize(out.x, w.kw, w.sx, w.pw, cover_all);
  if (pooled_h != xs[2] || pooled_w != xs[3])
    throw Error(str(op, ": outsize (", out.y, ", ", out.x, ") pools back to ", pooled_h, "x", pooled_w,
                    " with ksize (", w.kh, ", ", w.kw, "), stride (", w.sy, ", ", w.sx, "), pad (", w.ph, ", ", w.pw,
                    ") and cover_all ", cover_all ? "true" : "false", ", but x is ", xs[2], "x", xs[3]));
  Tensor y = ops::window_spread_2d(x.data(), w, out.y, out.x, cover_all, 1.0);
  if (!needs_recording({x})) return Variable(std::move(y));
  return record(std::make_shared<WindowNode>("Unpooling2D", false, w, cover_all, 1.0, xs), {x}, {y})[0];
}

}  // namespace chainer::functions
