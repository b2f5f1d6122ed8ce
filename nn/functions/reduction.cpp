#include "nn/functions/reduction.h"

#include "autograd/function_node.h"
#include "core/ops.h"
#include "nn/functions/arithmetic.h"
#include "nn/functions/array.h"

namespace chainer::functions {

namespace {
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

Variable reduce(const char* name, const char* op, const Variable& x, std::optional<int64_t> axis, bool keepdims,
                bool mean) {
  if (!x.defined()) throw Error(str(op, ": the input is undefined"));
  const Tensor& xd = x.data();
  std::vector<int64_t> axes;
  if (axis) axes.push_back(normalize_axis(*axis, xd.ndim(), op));
  Tensor kept = ops::sum(xd, axes, true);
  double scale = 1.0;
  if (mean) {
    if (!is_floating(xd.dtype()))
      throw Error(str(op, ": dtype ", dtype_name(xd.dtype()), " is not supported (expected float32 or float64)"));
    const int64_t count = kept.numel() == 0 ? 0 : xd.numel() / kept.numel();
    scale = 1.0 / double(count);  // count 0 gives NaN, as numpy's mean of nothing
    ops::scale_(kept, scale);
  }
  Shape y_shape;
  if (keepdims) {
    y_shape = kept.shape();
  } else {
    for (int64_t d = 0; d < xd.ndim(); ++d)
      if (axis && d != axes[0]) y_shape.push_back(xd.size(d));
  }
  Tensor y = keepdims ? kept : kept.reshape(y_shape);
  if (!needs_recording({x})) return Variable(std::move(y));
  return record(std::make_shared<SumNode>(name, xd.shape(), kept.shape(), scale), {x}, {y})[0];
}
}  // namespace

Variable sum(const Variable& x, std::optional<int64_t> axis, bool keepdims) {
  return reduce("Sum", "sum", x, axis, keepdims, false);
}
Variable mean(const Variable& x, std::optional<int64_t> axis, bool keepdims) {
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

}  // namespace chainer::functions
