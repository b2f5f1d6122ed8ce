#include "nn/functions/reduction.h"

#include "autograd/function_hook.h"
#include "autograd/function_node.h"
#include "core/ops/ops.h"
#include "nn/functions/arithmetic.h"
#include "nn/functions/array.h"

namespace chainer::functions {

std::vector<int64_t> Axes::resolve(int64_t ndim, const char* op) const {
  std::vector<int64_t> out;
  if (all_) {
    for (int64_t d = 0; d < ndim; ++d) out.push_back(d);
    return out;
  }
  std::vector<bool> named(size_t(ndim), false);
  for (int64_t ax : axes_) {
    const int64_t d = normalize_axis(ax, ndim, op);
    if (named[size_t(d)]) throw Error(chainer::str(op, ": axes ", str(), " name axis ", d, " twice"));
    named[size_t(d)] = true;
  }
  for (int64_t d = 0; d < ndim; ++d)
    if (named[size_t(d)]) out.push_back(d);
  return out;
}

std::string Axes::str() const {
  if (all_) return "None";
  if (axes_.size() == 1) return std::to_string(axes_[0]);
  return shape_str(axes_);
}

namespace {
void require_float(const char* op, const Variable& x) {
  if (!x.defined()) throw Error(str(op, ": the input is undefined"));
  if (!is_floating(x.dtype()))
    throw Error(str(op, ": dtype ", dtype_name(x.dtype()),
                    " is not supported (expected a floating dtype: float32, float64, float16 or bfloat16)"));
}

// The shape after reducing AXES (sorted) of SHAPE: with extent 1 (KEEPDIMS) or dropped.
Shape reduced_shape(const Shape& shape, const std::vector<int64_t>& axes, bool keepdims) {
  Shape out;
  size_t k = 0;
  for (int64_t d = 0; d < int64_t(shape.size()); ++d) {
    const bool reduced = k < axes.size() && axes[k] == d;
    k += reduced;
    if (!reduced) out.push_back(shape[size_t(d)]);
    else if (keepdims) out.push_back(1);
  }
  return out;
}

// Sum (SCALE = 1) or mean (SCALE = 1/count): backward spreads the gradient back over the
// reduced axes.
class SumNode : public FunctionNode {
 public:
  SumNode(const char* name, Shape x_shape, Shape kept_shape, double scale)
      : name_(name), x_shape_(std::move(x_shape)), kept_shape_(std::move(kept_shape)), scale_(scale) {}
  std::string name() const override { return name_; }
  std::vector<Tensor> backward(const std::vector<Tensor>& gy) override {
    Tensor g = gy[0].reshape(kept_shape_);
    if (scale_ != 1.0) g = ops::mul_scalar(g, scale_);  // on the small side, before broadcasting
    return {ops::broadcast_to(g, x_shape_)};
  }

 private:
  const char* name_;
  Shape x_shape_, kept_shape_;
  double scale_;
};

Variable reduce(const char* name, const char* op, const Variable& x, const Axes& axis, bool keepdims, bool mean) {
  ForwardHooks hooks(name, x);
  if (!x.defined()) throw Error(str(op, ": the input is undefined"));
  const Tensor& xd = x.data();
  const std::vector<int64_t> axes = axis.resolve(xd.ndim(), op);
  // No axis to reduce (Chainer's axis=(), or a 0-d array): the values themselves.
  Tensor kept = axes.empty() ? xd.clone() : ops::sum(xd, axes, true);
  double scale = 1.0;
  if (mean) {
    if (!is_floating(xd.dtype()))
      throw Error(str(op, ": dtype ", dtype_name(xd.dtype()), " is not supported (expected float32 or float64)"));
    const int64_t count = kept.numel() == 0 ? 0 : xd.numel() / kept.numel();
    scale = 1.0 / double(count);  // count 0 gives NaN, as numpy's mean of nothing
    ops::scale_(kept, scale);
  }
  Tensor y = keepdims ? kept : kept.reshape(reduced_shape(xd.shape(), axes, false));
  if (!needs_recording({x})) return Variable(std::move(y));
  return record(std::make_shared<SumNode>(name, xd.shape(), kept.shape(), scale), {x}, {y})[0];
}

// Max or min: the gradient goes to every element equal to the result (Chainer's SelectorBase).
// Saves x and the result with the reduced axes kept.
class SelectorNode : public FunctionNode {
 public:
  SelectorNode(const char* name, Tensor x, Tensor y_kept)
      : name_(name), x_(std::move(x)), y_kept_(std::move(y_kept)) {}
  std::string name() const override { return name_; }
  std::vector<Tensor> backward(const std::vector<Tensor>& gy) override {
    const Tensor g = gy[0].reshape(y_kept_.shape());
    return {ops::where(ops::equal(x_, y_kept_), g, Tensor::zeros({}, g.dtype(), g.device()))};
  }

 protected:
  void release_saved() override { x_ = y_kept_ = Tensor(); }

 private:
  const char* name_;
  Tensor x_, y_kept_;
};

Variable select(const char* name, const char* op, bool is_max, const Variable& x, const Axes& axis, bool keepdims) {
  ForwardHooks hooks(name, x);
  require_float(op, x);
  const Tensor& xd = x.data();
  const std::vector<int64_t> axes = axis.resolve(xd.ndim(), op);
  for (int64_t d : axes)
    if (xd.size(d) == 0)
      throw Error(str(op, ": cannot reduce axis ", d, " of extent 0 (shape ", shape_str(xd.shape()), ")"));
  Tensor kept = axes.empty() ? xd.clone() : is_max ? ops::amax(xd, axes, true) : ops::amin(xd, axes, true);
  Tensor y = keepdims ? kept : kept.reshape(reduced_shape(xd.shape(), axes, false));
  if (!needs_recording({x})) return Variable(std::move(y));
  return record(std::make_shared<SelectorNode>(name, xd, kept), {x}, {y})[0];
}

Variable index_of(const char* op, bool is_max, const Variable& x, std::optional<int64_t> axis) {
  ForwardHooks hooks(is_max ? "ArgMax" : "ArgMin", x);
  require_float(op, x);
  Tensor xd = x.data();
  if (!axis) xd = xd.contiguous().reshape({-1});
  const int64_t ax = axis ? normalize_axis(*axis, xd.ndim(), op) : 0;
  if (xd.size(ax) == 0)
    throw Error(str(op, ": cannot reduce axis ", ax, " of extent 0 (shape ", shape_str(x.shape()), ")"));
  return Variable(is_max ? ops::argmax(xd, ax) : ops::argmin(xd, ax));
}

// Saves x and y with the reduced axes kept: gx = gy * exp(x - y).
class LogSumExpNode : public FunctionNode {
 public:
  LogSumExpNode(Tensor x, Tensor y_kept) : x_(std::move(x)), y_kept_(std::move(y_kept)) {}
  std::string name() const override { return "LogSumExp"; }
  std::vector<Tensor> backward(const std::vector<Tensor>& gy) override {
    return {ops::mul(ops::exp(ops::sub(x_, y_kept_)), gy[0].reshape(y_kept_.shape()))};
  }

 protected:
  void release_saved() override { x_ = y_kept_ = Tensor(); }

 private:
  Tensor x_, y_kept_;
};
}  // namespace

Variable sum(const Variable& x, const Axes& axis, bool keepdims) {
  return reduce("Sum", "sum", x, axis, keepdims, false);
}
Variable mean(const Variable& x, const Axes& axis, bool keepdims) {
  return reduce("Mean", "mean", x, axis, keepdims, true);
}

Variable average(const Variable& x, std::optional<int64_t> axis, const Variable& weights, bool keepdims) {
  if (!weights.defined()) return mean(x, axis, keepdims);
  if (!x.defined()) throw Error("average: the input is undefined");
  Variable w = weights;
  if (axis) {
    const int64_t ax = normalize_axis(*axis, x.ndim(), "average");
    if (weights.shape() != Shape{x.shape()[size_t(ax)]})
      throw Error(str("average: weights have shape ", shape_str(weights.shape()), " but x has shape ",
                      shape_str(x.shape()), " and axis is ", *axis, " (expected ",
                      shape_str({x.shape()[size_t(ax)]}), ")"));
    Shape w_shape(size_t(x.ndim()), 1);
    w_shape[size_t(ax)] = x.shape()[size_t(ax)];
    w = reshape(weights, w_shape);  // broadcasts against x in the product
  } else if (weights.shape() != x.shape()) {
    throw Error(str("average: weights have shape ", shape_str(weights.shape()), " but x has shape ",
                    shape_str(x.shape()), " (without an axis they must be equal)"));
  }
  return div(sum(mul(x, w), axis, keepdims), sum(weights));
}

Variable max(const Variable& x, const Axes& axis, bool keepdims) {
  return select("Max", "max", true, x, axis, keepdims);
}
Variable min(const Variable& x, const Axes& axis, bool keepdims) {
  return select("Min", "min", false, x, axis, keepdims);
}
Variable argmax(const Variable& x, std::optional<int64_t> axis) { return index_of("argmax", true, x, axis); }
Variable argmin(const Variable& x, std::optional<int64_t> axis) { return index_of("argmin", false, x, axis); }

Variable logsumexp(const Variable& x, const Axes& axis) {
  ForwardHooks hooks("LogSumExp", x);
  require_float("logsumexp", x);
  const Tensor& xd = x.data();
  const std::vector<int64_t> axes = axis.resolve(xd.ndim(), "logsumexp");
  Tensor kept;
  if (axes.empty()) {
    kept = xd.clone();  // the log of one exp
  } else {
    for (int64_t d : axes)
      if (xd.size(d) == 0)
        throw Error(str("logsumexp: cannot reduce axis ", d, " of extent 0 (shape ", shape_str(xd.shape()), ")"));
    const Tensor m = ops::amax(xd, axes, true);
    kept = ops::add(ops::log(ops::sum(ops::exp(ops::sub(xd, m)), axes, true)), m);
  }
  Tensor y = kept.reshape(reduced_shape(xd.shape(), axes, false));
  if (!needs_recording({x})) return Variable(std::move(y));
  return record(std::make_shared<LogSumExpNode>(xd, kept), {x}, {y})[0];
}

}  // namespace chainer::functions
