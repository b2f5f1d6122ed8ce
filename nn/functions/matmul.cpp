#include "nn/functions/matmul.h"

#include "autograd/function_node.h"
#include "core/ops/ops.h"

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
}  // namespace

Variable matmul(const Variable& a, const Variable& b, bool transa, bool transb) {
  if (!a.defined() || !b.defined()) throw Error("matmul: an operand is undefined");
  Tensor y = ops::matmul(a.data(), b.data(), transa, transb);
  if (!needs_recording({a, b})) return Variable(std::move(y));
  return record(std::make_shared<MatMulNode>(a.data(), b.data(), transa, transb), {a, b}, {y})[0];
}

}  // namespace chainer::functions
