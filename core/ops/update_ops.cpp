// Argument checks and device dispatch for core/ops/update_ops.h; the kernels are in core/cpu/update.cpp
// and core/cuda/update.cu.
#include "core/ops/update_ops.h"

#include "core/ops/kernels.h"

namespace chainer::ops {

namespace {
// Every tensor of every entry defined where RULE needs it, contiguous, of the parameter's shape
// and dtype, and on the first parameter's device. Returns that device.
Device check_params(const char* op, UpdateRule rule, const std::vector<ParamTensors>& params) {
  const Device device = params.empty() ? Device{} : params[0].param.device();
  const int states = update_rule_states(rule);
  for (const ParamTensors& t : params) {
    if (!t.param.defined()) throw Error(str(op, ": a parameter is undefined"));
    if (!t.param.is_contiguous()) throw Error(str(op, ": the parameter must be contiguous"));
    if (!is_floating(t.param.dtype()) || is_half(t.param.dtype()))
      throw Error(str(op, ": dtype ", dtype_name(t.param.dtype()), " is not supported (expected float32 or float64)"));
    if (t.param.device() != device)
      throw Error(str(op, ": parameters are on different devices (", device.str(), " and ", t.param.device().str(), ")"));
    const Tensor* others[] = {&t.grad, &t.state0, &t.state1, &t.state2};
    for (int k = 0; k < 1 + states; ++k) {
      const Tensor& o = *others[k];
      if (!o.defined() || o.shape() != t.param.shape() || o.dtype() != t.param.dtype() || !o.is_contiguous())
        throw Error(str(op, ": ", k == 0 ? "gradient" : "state", " of shape ", o.defined() ? shape_str(o.shape()) : "undefined",
                        " does not match the parameter of shape ", shape_str(t.param.shape())));
      if (o.device() != device)
        throw Error(str(op, ": the ", k == 0 ? "gradient" : "state", " is on ", o.device().str(),
                        " but the parameter is on ", device.str()));
    }
  }
  return device;
}
}  // namespace

void update_(UpdateRule rule, std::vector<ParamTensors>& params, const UpdateScalarsFn& scalars) {
  const char* op = update_rule_name(rule);
  const Device device = check_params(op, rule, params);
  if (params.empty()) return;
  kernels_for(device).update(rule, params, scalars);
}

// The functions below are kept by a captured CUDA graph and called at every replay, so they
// hold their values by copy.
UpdateScalarsFn adam_scalars(const AdamStep& step) {
  return [step](size_t) {
    return UpdateScalars{.lr = step.lr, .beta1 = step.beta1, .beta2 = step.beta2, .eps = step.eps, .eta = step.eta,
                         .weight_decay_rate = step.weight_decay_rate};
  };
}

UpdateScalarsFn momentum_sgd_scalars(double lr, double momentum) {
  return [lr, momentum](size_t) { return UpdateScalars{.lr = lr, .momentum = momentum}; };
}

void adam_update_(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const AdamStep& step) {
  std::vector<ParamTensors> one{{param, grad, m, v, Tensor()}};
  update_(UpdateRule::Adam, one, adam_scalars(step));
}

void momentum_sgd_update_(Tensor& param, const Tensor& grad, Tensor& v, double lr, double momentum) {
  std::vector<ParamTensors> one{{param, grad, v, Tensor(), Tensor()}};
  update_(UpdateRule::MomentumSGD, one, momentum_sgd_scalars(lr, momentum));
}

void clip_grads_by_norm_(std::vector<Tensor>& grads, double threshold) {
  if (grads.empty()) return;
  const Device device = grads[0].device();
  for (const Tensor& g : grads) {
    if (!g.defined() || !g.is_contiguous() || !is_floating(g.dtype()))
      throw Error("GradientClipping: gradients must be defined, contiguous float32 or float64 tensors");
    if (g.device() != device)
      throw Error(str("GradientClipping: gradients are on different devices (", device.str(), " and ", g.device().str(), ")"));
  }
  kernels_for(device).clip_by_norm(grads, threshold);
}

double sum_of_squares(const Tensor& a) {
  if (!a.defined()) throw Error("sum_of_squares: the tensor is undefined");
  if (!is_floating(a.dtype()))
    throw Error(str("sum_of_squares: dtype ", dtype_name(a.dtype()), " is not supported (expected float32 or float64)"));
  Tensor out = Tensor::empty({}, DType::Float64, a.device());
  kernels_for(a.device()).sum_of_squares({a}, out);
  return out.item_double();
}

}  // namespace chainer::ops
