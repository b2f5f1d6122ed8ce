#include "nn/functions/cast.h"

#include "autograd/function_hook.h"
#include "autograd/function_node.h"

namespace chainer::functions {

namespace {
class CastNode : public FunctionNode {
 public:
  explicit CastNode(DType from) : from_(from) {}
  std::string name() const override { return "Cast"; }
  std::vector<Tensor> backward(const std::vector<Tensor>& gy) override { return {gy[0].astype(from_)}; }

 private:
  DType from_;
};
}  // namespace

Variable cast(const Variable& x, DType dtype) {
  ForwardHooks hooks("Cast", x);
  if (!x.defined()) throw Error("cast: x must be defined");
  if (!is_floating(x.dtype()) || !is_floating(dtype))
    throw Error(str("cast: from ", dtype_name(x.dtype()), " to ", dtype_name(dtype),
                    " is not supported (expected floating dtypes: float32, float64, float16 or bfloat16)"));
  if (x.dtype() == dtype) return x;
  Tensor y = x.data().astype(dtype);
  if (!needs_recording({x})) return Variable(std::move(y));
  return record(std::make_shared<CastNode>(x.dtype()), {x}, {y})[0];
}

}  // namespace chainer::functions
