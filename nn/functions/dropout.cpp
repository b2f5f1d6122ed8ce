#include "nn/functions/dropout.h"

#include "autograd/function_hook.h"
#include "autograd/function_node.h"
#include "core/util/config.h"
#include "core/ops/ops.h"

namespace chainer::functions {

namespace {
class DropoutNode : public FunctionNode {
 public:
  explicit DropoutNode(Tensor mask) : mask_(std::move(mask)) {}
  std::string name() const override { return "Dropout"; }
  std::vector<Tensor> backward(const std::vector<Tensor>& gy) override { return {ops::mul(gy[0], mask_)}; }

 protected:
  void release_saved() override { mask_ = Tensor(); }

 private:
  Tensor mask_;  // 0 or 1 / (1 - ratio), the scale folded in
};
}  // namespace

Variable dropout(const Variable& x, double ratio, Generator* gen) {
  ForwardHooks hooks("Dropout", x);
  if (!(ratio >= 0.0 && ratio < 1.0)) throw Error(str("dropout: ratio ", ratio, " is outside [0, 1)"));
  if (!x.defined()) throw Error("dropout: the input is undefined");
  if (!config::train()) return x;
  Tensor mask = ops::dropout_mask(x.shape(), ratio, x.dtype(), x.data().device(), gen ? *gen : random::default_generator());
  Tensor y = ops::mul(x.data(), mask);
  if (!needs_recording({x})) return Variable(std::move(y));
  return record(std::make_shared<DropoutNode>(mask), {x}, {y})[0];
}

}  // namespace chainer::functions
