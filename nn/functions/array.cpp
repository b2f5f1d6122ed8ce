#include "nn/functions/array.h"

#include "autograd/function_node.h"
#include "core/ops.h"

namespace chainer::functions {

namespace {
class ReshapeNode : public FunctionNode {
 public:
  explicit ReshapeNode(Shape x_shape) : x_shape_(std::move(x_shape)) {}
  std::string name() const override { return "Reshape"; }
  std::vector<Tensor> backward(const std::vector<Tensor>& gy) override { return {gy[0].reshape(x_shape_)}; }

 private:
  Shape x_shape_;
};

class TransposeNode : public FunctionNode {
 public:
  explicit TransposeNode(std::vector<int64_t> inverse) : inverse_(std::move(inverse)) {}
  std::string name() const override { return "Transpose"; }
  std::vector<Tensor> backward(const std::vector<Tensor>& gy) override {
    return {gy[0].transpose(inverse_).contiguous()};
  }

 private:
  std::vector<int64_t> inverse_;
};

// Concat and stack: input i is the slice [offsets[i], offsets[i] + extents[i]) of the output
// along AXIS; stack's slices have extent 1 and drop that axis again.
class JoinNode : public FunctionNode {
 public:
  JoinNode(bool stack, int64_t axis, std::vector<int64_t> extents, std::vector<Shape> shapes)
      : stack_(stack), axis_(axis), extents_(std::move(extents)), shapes_(std::move(shapes)) {}
  std::string name() const override { return stack_ ? "Stack" : "Concat"; }
  std::vector<Tensor> backward(const std::vector<Tensor>& gy) override {
    std::vector<Tensor> g(extents_.size());
    int64_t at = 0;
    for (size_t i = 0; i < extents_.size(); ++i) {
      if (input_requires_grad(i)) g[i] = gy[0].narrow(axis_, at, extents_[i]).contiguous().reshape(shapes_[i]);
      at += extents_[i];
    }
    return g;
  }

 private:
  bool stack_;
  int64_t axis_;
  std::vector<int64_t> extents_;
  std::vector<Shape> shapes_;
};

Variable join(bool stack, const std::vector<Variable>& xs, int64_t axis) {
  const char* op = stack ? "stack" : "concat";
  std::vector<Tensor> ts;
  ts.reserve(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    if (!xs[i].defined()) throw Error(str(op, ": variable ", i, " is undefined"));
    ts.push_back(xs[i].data());
  }
  Tensor y = stack ? ops::stack(ts, axis) : ops::concat(ts, axis);  // checks shapes and axis
  if (!needs_recording(xs)) return Variable(std::move(y));
  const int64_t ax = normalize_axis(axis, y.ndim(), op);
  std::vector<int64_t> extents;
  std::vector<Shape> shapes;
  for (const Tensor& t : ts) {
    extents.push_back(stack ? 1 : t.size(ax));
    shapes.push_back(t.shape());
  }
  return record(std::make_shared<JoinNode>(stack, ax, extents, shapes), xs, {y})[0];
}
}  // namespace

Variable reshape(const Variable& x, const Shape& shape) {
  if (!x.defined()) throw Error("reshape: the input is undefined");
  Tensor y = x.data().reshape(shape);
  if (!needs_recording({x})) return Variable(std::move(y));
  return record(std::make_shared<ReshapeNode>(x.shape()), {x}, {y})[0];
}

Variable transpose(const Variable& x, const std::vector<int64_t>& axes) {
  if (!x.defined()) throw Error("transpose: the input is undefined");
  Tensor y = x.data().transpose(axes).contiguous();  // checks the axes
  if (!needs_recording({x})) return Variable(std::move(y));
  const int64_t nd = x.ndim();
  std::vector<int64_t> inverse(static_cast<size_t>(nd));
  for (int64_t i = 0; i < nd; ++i) {
    const int64_t a = axes.empty() ? nd - 1 - i : normalize_axis(axes[size_t(i)], nd, "transpose");
    inverse[size_t(a)] = i;
  }
  return record(std::make_shared<TransposeNode>(inverse), {x}, {y})[0];
}

Variable concat(const std::vector<Variable>& xs, int64_t axis) { return join(false, xs, axis); }
Variable stack(const std::vector<Variable>& xs, int64_t axis) { return join(true, xs, axis); }

}  // namespace chainer::functions
