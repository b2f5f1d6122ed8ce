#include "nn/functions/matmul.h"

#include <algorithm>

#include "autograd/function_hook.h"
#include "autograd/function_node.h"
#include "core/ops/ops.h"
#include "nn/autocast.h"
#include "nn/functions/array.h"

namespace chainer::functions {

namespace {
class MatMulNode : public FunctionNode {
 public:
  MatMulNode(Tensor a, Tensor b, bool ta, bool tb) : a_(std::move(a)), b_(std::move(b)), ta_(ta), tb_(tb) {}
  std::string name() const override { return "MatMul"; }

  // With A = op(a), B = op(b): gA = gy B^T and gB = A^T gy, transposed back where op transposed;
  // each case is one GEMM with the right flags, no explicit transposes.
  std::vector<Tensor> backward(const std::vector<Tensor>& grads) override {
    const Tensor& gy = grads[0];
    std::vector<Tensor> g(2);
    if (input_requires_grad(0)) g[0] = ta_ ? ops::matmul(b_, gy, tb_, true) : ops::matmul(gy, b_, false, !tb_);
    if (input_requires_grad(1)) g[1] = tb_ ? ops::matmul(gy, a_, true, ta_) : ops::matmul(a_, gy, !ta_, false);
    return g;
  }

 protected:
  void release_saved() override { a_ = b_ = Tensor(); }

 private:
  Tensor a_, b_;
  bool ta_, tb_;
};

// The same over a batch: a and b 3-D with one batch size, the product batched_matmul's.
class BatchedMatMulNode : public FunctionNode {
 public:
  BatchedMatMulNode(Tensor a, Tensor b, bool ta, bool tb) : a_(std::move(a)), b_(std::move(b)), ta_(ta), tb_(tb) {}
  std::string name() const override { return "MatMul"; }

  std::vector<Tensor> backward(const std::vector<Tensor>& grads) override {
    const Tensor& gy = grads[0];
    std::vector<Tensor> g(2);
    if (input_requires_grad(0))
      g[0] = ta_ ? ops::batched_matmul(b_, gy, tb_, true) : ops::batched_matmul(gy, b_, false, !tb_);
    if (input_requires_grad(1))
      g[1] = tb_ ? ops::batched_matmul(gy, a_, true, ta_) : ops::batched_matmul(a_, gy, !ta_, false);
    return g;
  }

 protected:
  void release_saved() override { a_ = b_ = Tensor(); }

 private:
  Tensor a_, b_;
  bool ta_, tb_;
};

Variable matmul_2d(const Variable& a, const Variable& b, bool transa, bool transb) {
  ForwardHooks hooks("MatMul", a, b);
  Tensor y = ops::matmul(a.data(), b.data(), transa, transb);
  if (!needs_recording({a, b})) return Variable(std::move(y));
  return record(std::make_shared<MatMulNode>(a.data(), b.data(), transa, transb), {a, b}, {y})[0];
}

Variable matmul_3d(const Variable& a, const Variable& b, bool transa, bool transb) {
  ForwardHooks hooks("MatMul", a, b);
  Tensor y = ops::batched_matmul(a.data(), b.data(), transa, transb);
  if (!needs_recording({a, b})) return Variable(std::move(y));
  return record(std::make_shared<BatchedMatMulNode>(a.data(), b.data(), transa, transb), {a, b}, {y})[0];
}

std::string shapes(const Variable& a, const Variable& b) {
  return str(shape_str(a.shape()), " and ", shape_str(b.shape()));
}
}  // namespace

Variable matmul(const Variable& a_in, const Variable& b_in, bool transa, bool transb) {
  // Mixed precision: a function of the half list (nn/autocast.h).
  const Variable a = autocast::for_half(a_in), b = autocast::for_half(b_in);
  if (!a.defined() || !b.defined()) throw Error("matmul: an operand is undefined");
  if (a.ndim() == 0 || b.ndim() == 0) throw Error(str("matmul: 0-dimensional operand (shapes ", shapes(a, b), ")"));
  if (a.ndim() == 2 && b.ndim() == 2) return matmul_2d(a, b, transa, transb);
  // Vectors become matrices, their axis dropped from the result at the end.
  const bool a_vector = a.ndim() == 1, b_vector = b.ndim() == 1;
  Variable A = a_vector ? reshape(a, {1, a.shape()[0]}) : a, B = b_vector ? reshape(b, {b.shape()[0], 1}) : b;
  if (a_vector) transa = false;
  if (b_vector) transb = false;
  // The leading axes, broadcast as numpy does (from the right; 1 stretches).
  const Shape sa(A.shape().begin(), A.shape().end() - 2), sb(B.shape().begin(), B.shape().end() - 2);
  const size_t nd = std::max(sa.size(), sb.size());
  Shape batch(nd);
  for (size_t i = 0; i < nd; ++i) {
    const int64_t da = i < nd - sa.size() ? 1 : sa[i - (nd - sa.size())];
    const int64_t db = i < nd - sb.size() ? 1 : sb[i - (nd - sb.size())];
    if (da != db && da != 1 && db != 1)
      throw Error(str("matmul: the leading axes of shapes ", shapes(a, b), " do not broadcast"));
    batch[i] = std::max(da, db);
  }
  const int64_t count = shape_numel(batch);
  const auto stacked = [&](const Variable& v) {
    Shape full = batch;
    full.insert(full.end(), v.shape().end() - 2, v.shape().end());
    Variable w = v.shape() == full ? v : broadcast_to(v, full);
    return reshape(w, {count, full[nd], full[nd + 1]});
  };
  Variable y = matmul_3d(stacked(A), stacked(B), transa, transb);
  Shape out = batch;
  if (!a_vector) out.push_back(y.shape()[1]);
  if (!b_vector) out.push_back(y.shape()[2]);
  return reshape(y, out);
}

Variable batch_matmul(const Variable& a_in, const Variable& b_in, bool transa, bool transb) {
  // Mixed precision: a function of the half list (nn/autocast.h).
  const Variable a = autocast::for_half(a_in), b = autocast::for_half(b_in);
  if (!a.defined() || !b.defined()) throw Error("batch_matmul: an operand is undefined");
  if (a.ndim() < 2 || b.ndim() < 2)
    throw Error(str("batch_matmul: expected batches of at least 2 axes, got shapes ", shapes(a, b)));
  if (a.shape()[0] != b.shape()[0])
    throw Error(str("batch_matmul: batches of ", a.shape()[0], " and ", b.shape()[0], " matrices (shapes ", shapes(a, b),
                    ")"));
  const auto as_batch = [](const Variable& v) { return reshape(v, {v.shape()[0], v.shape()[1], -1}); };
  return matmul_3d(as_batch(a), as_batch(b), transa, transb);
}

}  // namespace chainer::functions
