#include "nn/functions/array.h"

#include <algorithm>

#include "autograd/function_hook.h"
#include "autograd/function_node.h"
#include "core/ops/ops.h"

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

class BroadcastToNode : public FunctionNode {
 public:
  explicit BroadcastToNode(Shape x_shape) : x_shape_(std::move(x_shape)) {}
  std::string name() const override { return "BroadcastTo"; }
  std::vector<Tensor> backward(const std::vector<Tensor>& gy) override { return {ops::sum_to(gy[0], x_shape_)}; }

 private:
  Shape x_shape_;
};

// The pieces of split_axis tile AXIS in order, so backward joins their gradients (zeros for
// unused pieces, given by the engine).
class SplitAxisNode : public FunctionNode {
 public:
  explicit SplitAxisNode(int64_t axis) : axis_(axis) {}
  std::string name() const override { return "SplitAxis"; }
  std::vector<Tensor> backward(const std::vector<Tensor>& gy) override { return {ops::concat(gy, axis_)}; }

 private:
  int64_t axis_;
};

// Piece i of X along AXIS is [starts[i], starts[i] + lengths[i]); the pieces tile the axis.
std::vector<Variable> split(const Variable& x, int64_t axis, const std::vector<int64_t>& starts,
                            const std::vector<int64_t>& lengths) {
  ForwardHooks hooks("SplitAxis", x);
  std::vector<Tensor> ys;
  for (size_t i = 0; i < starts.size(); ++i) ys.push_back(x.data().narrow(axis, starts[i], lengths[i]).contiguous());
  if (!needs_recording({x})) return wrap_outputs(std::move(ys));
  return record(std::make_shared<SplitAxisNode>(axis), {x}, std::move(ys));
}

Variable join(bool stack, const std::vector<Variable>& xs, int64_t axis) {
  ForwardHooks hooks(stack ? "Stack" : "Concat", xs);
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
  ForwardHooks hooks("Reshape", x);
  if (!x.defined()) throw Error("reshape: the input is undefined");
  Tensor y = x.data().reshape(shape);
  if (!needs_recording({x})) return Variable(std::move(y));
  return record(std::make_shared<ReshapeNode>(x.shape()), {x}, {y})[0];
}

Variable flatten(const Variable& x) {
  if (!x.defined()) throw Error("flatten: the input is undefined");
  return reshape(x, {x.data().numel()});
}

Variable transpose(const Variable& x, const std::vector<int64_t>& axes) {
  ForwardHooks hooks("Transpose", x);
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

Variable broadcast_to(const Variable& x, const Shape& shape) {
  ForwardHooks hooks("BroadcastTo", x);
  if (!x.defined()) throw Error("broadcast_to: the input is undefined");
  Tensor y = ops::broadcast_to(x.data(), shape);  // checks the shapes
  if (!needs_recording({x})) return Variable(std::move(y));
  return record(std::make_shared<BroadcastToNode>(x.shape()), {x}, {y})[0];
}

Variable expand_dims(const Variable& x, int64_t axis) {
  if (!x.defined()) throw Error("expand_dims: the input is undefined");
  const int64_t nd = x.ndim();
  if (axis < -nd - 1 || axis > nd)
    throw Error(str("expand_dims: axis ", axis, " is out of range for an array of ", nd, " dimensions (expected ",
                    -nd - 1, " <= axis <= ", nd, ")"));
  const int64_t ax = axis < 0 ? axis + nd + 1 : axis;
  Shape shape = x.shape();
  shape.insert(shape.begin() + ax, 1);
  return reshape(x, shape);
}

Variable squeeze(const Variable& x) {
  if (!x.defined()) throw Error("squeeze: the input is undefined");
  Shape shape;
  for (int64_t d : x.shape())
    if (d != 1) shape.push_back(d);
  return reshape(x, shape);
}

Variable squeeze(const Variable& x, int64_t axis) { return squeeze(x, std::vector<int64_t>{axis}); }

Variable squeeze(const Variable& x, const std::vector<int64_t>& axes) {
  if (!x.defined()) throw Error("squeeze: the input is undefined");
  std::vector<bool> drop(size_t(x.ndim()), false);
  for (int64_t axis : axes) {
    const int64_t ax = normalize_axis(axis, x.ndim(), "squeeze");
    if (drop[size_t(ax)]) throw Error(str("squeeze: axes ", shape_str(axes), " name axis ", ax, " twice"));
    if (x.shape()[size_t(ax)] != 1)
      throw Error(str("squeeze: axis ", axis, " has extent ", x.shape()[size_t(ax)], " in shape ", shape_str(x.shape()),
                      " (expected 1)"));
    drop[size_t(ax)] = true;
  }
  Shape shape;
  for (int64_t d = 0; d < x.ndim(); ++d)
    if (!drop[size_t(d)]) shape.push_back(x.shape()[size_t(d)]);
  return reshape(x, shape);
}

Variable squeeze(const Variable& x, std::initializer_list<int64_t> axes) {
  return squeeze(x, std::vector<int64_t>(axes));
}

std::vector<Variable> separate(const Variable& x, int64_t axis) {
  if (!x.defined()) throw Error("separate: the input is undefined");
  if (x.ndim() == 0) throw Error("separate: cannot separate a 0-dimensional array");
  const int64_t ax = normalize_axis(axis, x.ndim(), "separate");
  const int64_t extent = x.shape()[size_t(ax)];
  if (extent == 0) return {};
  std::vector<Variable> out;
  for (const Variable& piece : split_axis(x, extent, ax)) out.push_back(squeeze(piece, {ax}));
  return out;
}

std::vector<Variable> split_axis(const Variable& x, int64_t sections, int64_t axis) {
  if (!x.defined()) throw Error("split_axis: the input is undefined");
  const int64_t ax = normalize_axis(axis, x.ndim(), "split_axis");
  const int64_t extent = x.shape()[size_t(ax)];
  if (sections <= 0) throw Error(str("split_axis: sections must be positive, got ", sections));
  if (extent % sections != 0)
    throw Error(str("split_axis: axis ", axis, " of extent ", extent, " cannot be split into ", sections,
                    " equal sections"));
  std::vector<int64_t> starts, lengths;
  for (int64_t i = 0; i < sections; ++i) {
    starts.push_back(i * (extent / sections));
    lengths.push_back(extent / sections);
  }
  return split(x, ax, starts, lengths);
}

std::vector<Variable> split_axis(const Variable& x, const std::vector<int64_t>& indices, int64_t axis) {
  if (!x.defined()) throw Error("split_axis: the input is undefined");
  const int64_t ax = normalize_axis(axis, x.ndim(), "split_axis");
  const int64_t extent = x.shape()[size_t(ax)];
  if (!indices.empty() && indices.back() > extent)
    throw Error(str("split_axis: the last split index ", indices.back(), " exceeds the extent ", extent, " of axis ",
                    axis));
  // Python's slice bounds: negative counts from the end, then clamped to [0, extent]. numpy
  // would make overlapping pieces of decreasing points; Chainer asks for sorted ones (its
  // gradient joins the pieces), and so does this.
  auto bound = [&](int64_t i) { return std::clamp(i < 0 ? i + extent : i, int64_t(0), extent); };
  std::vector<int64_t> starts, lengths;
  int64_t at = 0;
  for (size_t i = 0; i <= indices.size(); ++i) {
    const int64_t end = i < indices.size() ? bound(indices[i]) : extent;
    if (end < at)
      throw Error(str("split_axis: split indices ", shape_str(indices), " are not sorted (index ", indices[i],
                      " is at ", end, " of axis ", axis, ", before the previous split at ", at, ")"));
    starts.push_back(at);
    lengths.push_back(end - at);
    at = end;
  }
  return split(x, ax, starts, lengths);
}

std::vector<Variable> split_axis(const Variable& x, std::initializer_list<int64_t> indices, int64_t axis) {
  return split_axis(x, std::vector<int64_t>(indices), axis);
}

}  // namespace chainer::functions
