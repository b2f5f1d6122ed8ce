#include "nn/functions/get_item.h"

#include <algorithm>

#include "autograd/function_hook.h"
#include "autograd/function_node.h"
#include "core/ops/ops.h"

namespace chainer::functions {

namespace {

// The basic part of an index (integers, slices, newaxis, ellipsis) as a recipe for a strided
// view of any tensor of x's shape: forward applies it to x, backward to the zero gradient.
struct ViewPlan {
  struct Axis {
    int64_t source = -1;  // x's axis, or -1 for newaxis
    int64_t start = 0, step = 1, length = 1;
  };
  std::vector<Axis> axes;                               // the view's axes
  std::vector<std::pair<int64_t, int64_t>> selections;  // (x's axis, index) of the integer entries

  Shape shape() const {
    Shape s;
    for (const Axis& a : axes) s.push_back(a.length);
    return s;
  }
  Tensor apply(const Tensor& t) const {
    int64_t offset = t.offset();
    for (const auto& [axis, index] : selections) offset += index * t.strides()[size_t(axis)];
    std::vector<int64_t> strides;
    for (const Axis& a : axes) {
      if (a.source < 0) {
        strides.push_back(0);
        continue;
      }
      const int64_t stride = t.strides()[size_t(a.source)];
      if (a.length > 0) offset += a.start * stride;
      strides.push_back(a.step * stride);
    }
    return t.as_strided(shape(), strides, offset);
  }
};

// Python's slice.indices(extent): the first entry, the step and the number of entries.
ViewPlan::Axis slice_axis(const Slice& s, int64_t source, int64_t extent) {
  const int64_t step = s.step.value_or(1);
  if (step == 0) throw Error("get_item: slice step cannot be zero");
  const int64_t lower = step < 0 ? -1 : 0, upper = step < 0 ? extent - 1 : extent;
  auto bound = [&](const std::optional<int64_t>& v, int64_t fallback) {
    if (!v) return fallback;
    const int64_t b = *v < 0 ? *v + extent : *v;
    return std::clamp(b, lower, upper);
  };
  const int64_t start = bound(s.start, step < 0 ? upper : lower), stop = bound(s.stop, step < 0 ? lower : upper);
  int64_t length = 0;
  if (step > 0 && start < stop) length = (stop - start - 1) / step + 1;
  if (step < 0 && stop < start) length = (start - stop - 1) / -step + 1;
  return {source, start, step, length};
}

// The whole index, resolved against x's shape.
struct Plan {
  ViewPlan view;
  Tensor indices;          // the integer array (int64, on x's device), or undefined
  int64_t array_axis = 0;  // the view's axis it indexes
  bool array_first = false;  // its axes go first (numpy, when integers and the array are apart)
};

Plan resolve(const Tensor& x, const std::vector<Index>& slices) {
  const int64_t nd = x.ndim();
  int64_t consumed = 0, ellipses = 0, arrays = 0;
  for (const Index& s : slices) {
    const Index::Kind k = s.kind();
    consumed += k == Index::Kind::Integer || k == Index::Kind::Slice || k == Index::Kind::Array;
    ellipses += k == Index::Kind::Ellipsis;
    arrays += k == Index::Kind::Array;
  }
  if (ellipses > 1) throw Error("get_item: an index can only have a single ellipsis");
  if (consumed > nd)
    throw Error(str("get_item: too many indices for an array of shape ", shape_str(x.shape()), ": ", consumed,
                    " axes indexed"));
  if (arrays > 1)
    throw Error(str("get_item: ", arrays, " integer arrays in one index; only one is supported (index with one array "
                    "at a time)"));
  Plan plan;
  // Numpy places the array's axes where its block of integer and array entries is, or first
  // when that block is interrupted by another entry (its mapping iterator's `consec`).
  int64_t first_advanced = -1, last_advanced = -1, advanced = 0;
  int64_t axis = 0;
  for (size_t i = 0; i < slices.size(); ++i) {
    const Index& s = slices[i];
    switch (s.kind()) {
      case Index::Kind::Integer: {
        const int64_t extent = x.shape()[size_t(axis)];
        int64_t index = s.integer();
        if (index < -extent || index >= extent)
          throw Error(str("get_item: index ", index, " is out of bounds for axis ", axis, " with size ", extent));
        if (index < 0) index += extent;
        plan.view.selections.push_back({axis++, index});
        break;
      }
      case Index::Kind::Slice:
        plan.view.axes.push_back(slice_axis(s.slice(), axis, x.shape()[size_t(axis)]));
        ++axis;
        break;
      case Index::Kind::NewAxis: plan.view.axes.push_back({}); break;
      case Index::Kind::Ellipsis:
        for (int64_t n = nd - consumed; n > 0; --n, ++axis)
          plan.view.axes.push_back({axis, 0, 1, x.shape()[size_t(axis)]});
        break;
      case Index::Kind::Array: {
        const Tensor& a = s.array();
        if (!a.defined()) throw Error("get_item: an index array is undefined");
        if (is_floating(a.dtype()))
          throw Error(str("get_item: index arrays must have an integer dtype, got ", dtype_name(a.dtype())));
        const int64_t extent = x.shape()[size_t(axis)];
        Tensor idx = a.dtype() == DType::Int64 ? a.contiguous() : a.astype(DType::Int64);
        if (x.device().is_cpu()) idx = idx.to(x.device());
        if (idx.device().is_cpu()) {  // indices on a GPU are checked by the kernel
          const int64_t* p = idx.data<int64_t>();
          for (int64_t j = 0; j < idx.numel(); ++j)
            if (p[j] < -extent || p[j] >= extent)
              throw Error(str("get_item: index ", p[j], " is out of bounds for axis ", axis, " with size ", extent));
        }
        plan.indices = idx.to(x.device());  // once, not at every backward
        plan.array_axis = int64_t(plan.view.axes.size());
        plan.view.axes.push_back({axis, 0, 1, extent});
        ++axis;
        break;
      }
    }
    const bool is_advanced = s.kind() == Index::Kind::Integer || s.kind() == Index::Kind::Array;
    if (is_advanced) {
      if (first_advanced < 0) first_advanced = int64_t(i);
      last_advanced = int64_t(i);
      ++advanced;
    }
  }
  for (; axis < nd; ++axis) plan.view.axes.push_back({axis, 0, 1, x.shape()[size_t(axis)]});  // the implicit `...`
  plan.array_first = plan.indices.defined() && last_advanced - first_advanced + 1 != advanced;
  return plan;
}

// The permutation that moves axes [k, k + m) of an N-d tensor to the front.
std::vector<int64_t> front_permutation(int64_t n, int64_t k, int64_t m) {
  std::vector<int64_t> p;
  for (int64_t i = k; i < k + m; ++i) p.push_back(i);
  for (int64_t i = 0; i < n; ++i)
    if (i < k || i >= k + m) p.push_back(i);
  return p;
}

std::vector<int64_t> inverse(const std::vector<int64_t>& p) {
  std::vector<int64_t> q(p.size());
  for (size_t i = 0; i < p.size(); ++i) q[size_t(p[i])] = int64_t(i);
  return q;
}

class GetItemNode : public FunctionNode {
 public:
  GetItemNode(Plan plan, Shape x_shape) : plan_(std::move(plan)), x_shape_(std::move(x_shape)) {}
  std::string name() const override { return "GetItem"; }
  std::vector<Tensor> backward(const std::vector<Tensor>& gy) override {
    Tensor gx = Tensor::zeros(x_shape_, gy[0].dtype(), gy[0].device());
    Tensor view = plan_.view.apply(gx);
    if (!plan_.indices.defined()) {
      view.copy_(gy[0]);
      return {gx};
    }
    Tensor g = gy[0];
    if (plan_.array_first) {
      const int64_t m = plan_.indices.ndim();
      g = g.transpose(inverse(front_permutation(g.ndim(), plan_.array_axis, m)));
    }
    if (view.is_contiguous()) {
      ops::scatter_add_(view, plan_.indices, plan_.array_axis, g);
    } else {
      Tensor buffer = Tensor::zeros(view.shape(), gx.dtype(), gx.device());
      ops::scatter_add_(buffer, plan_.indices, plan_.array_axis, g);
      view.copy_(buffer);
    }
    return {gx};
  }

 protected:
  void release_saved() override { plan_.indices = Tensor(); }

 private:
  Plan plan_;
  Shape x_shape_;
};

}  // namespace

Variable get_item(const Variable& x, const std::vector<Index>& slices) {
  ForwardHooks hooks("GetItem", x);
  if (!x.defined()) throw Error("get_item: the input is undefined");
  Plan plan = resolve(x.data(), slices);
  const Tensor view = plan.view.apply(x.data());
  Tensor y;
  if (!plan.indices.defined()) {
    y = view.contiguous();
  } else {
    y = ops::take(view, plan.indices, plan.array_axis);
    if (plan.array_first)
      y = y.transpose(front_permutation(y.ndim(), plan.array_axis, plan.indices.ndim())).contiguous();
  }
  if (!needs_recording({x})) return Variable(std::move(y));
  return record(std::make_shared<GetItemNode>(std::move(plan), x.shape()), {x}, {y})[0];
}

Variable get_item(const Variable& x, std::initializer_list<Index> slices) {
  return get_item(x, std::vector<Index>(slices));
}

Variable get_item(const Variable& x, const Index& index) { return get_item(x, std::vector<Index>{index}); }

}  // namespace chainer::functions
