#include "distributed/functions/pseudo_connect.h"

#include "autograd/function_hook.h"
#include "autograd/function_node.h"

namespace chainermn::functions {

using chainer::Error;
using chainer::str;
using chainer::Tensor;

namespace {

// Inputs: the delegate, then the actual variables; outputs: the actual variables' values.
class PseudoConnectNode : public chainer::FunctionNode {
 public:
  PseudoConnectNode(const Variable& delegate, const std::vector<Variable>& actual)
      : delegate_shape_(delegate.shape()), delegate_dtype_(delegate.dtype()), delegate_device_(delegate.data().device()) {
    for (const Variable& a : actual) actual_dtypes_.push_back(a.dtype());
  }
  std::string name() const override { return "PseudoConnect"; }

  std::vector<Tensor> backward(const std::vector<Tensor>& gys) override {
    std::vector<Tensor> gx(gys.size() + 1);
    if (input_requires_grad(0)) gx[0] = Tensor::zeros(delegate_shape_, delegate_dtype_, delegate_device_);
    for (size_t i = 0; i < gys.size(); ++i) {
      if (!input_requires_grad(i + 1)) continue;
      // The engine makes zeros in one dtype for the gradients of unused outputs; the actual
      // variables may differ in dtype.
      gx[i + 1] = gys[i].dtype() == actual_dtypes_[i] ? gys[i] : gys[i].astype(actual_dtypes_[i]);
    }
    return gx;
  }

 private:
  chainer::Shape delegate_shape_;
  chainer::DType delegate_dtype_;
  chainer::Device delegate_device_;
  std::vector<chainer::DType> actual_dtypes_;
};

}  // namespace

std::vector<Variable> pseudo_connect(const Variable& delegate, const std::vector<Variable>& actual) {
  chainer::ForwardHooks hooks("PseudoConnect", delegate, actual);
  for (size_t i = 0; i < actual.size(); ++i)
    if (!actual[i].defined()) throw Error(str("chainermn::functions::pseudo_connect: actual variable ", i, " is undefined"));
  if (actual.empty() && delegate.defined())
    throw Error("chainermn::functions::pseudo_connect: no actual variable to connect the delegate to (its backward "
                "would never run)");
  if (!delegate.defined()) return actual;
  std::vector<Variable> inputs{delegate};
  inputs.insert(inputs.end(), actual.begin(), actual.end());
  std::vector<Tensor> values;
  for (const Variable& a : actual) values.push_back(a.data());
  if (!chainer::needs_recording(inputs)) return chainer::wrap_outputs(std::move(values));
  return chainer::record(std::make_shared<PseudoConnectNode>(delegate, actual), inputs, std::move(values));
}

Variable pseudo_connect(const Variable& delegate, const Variable& actual) {
  return pseudo_connect(delegate, std::vector<Variable>{actual})[0];
}

}  // namespace chainermn::functions
