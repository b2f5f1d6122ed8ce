// Optimizer updates on CUDA: every parameter of a step in one launch (a launch per parameter
// costs more than the update of a small one). The tensors' addresses travel as kernel
// parameters, the per-parameter scalars through step_scalars (core/ops/kernels.h: a replayed graph
// reads this step's learning rate).
#include "core/cuda/common.cuh"
#include "core/cuda/kernels.h"
#include "core/ops/update_rules.h"

namespace chainer::cuda {

namespace {

// Up to kMaxTensors parameters per launch: their pointers must fit the 4 KiB of kernel parameters.
constexpr int kMaxTensors = 48;

template <class T>
struct TensorList {
  T* param[kMaxTensors];
  const T* grad[kMaxTensors];
  T* state0[kMaxTensors];
  T* state1[kMaxTensors];
  T* state2[kMaxTensors];
  int64_t numel[kMaxTensors];
};

// The scalars of one parameter as the kernel reads them (UpdateScalars, in device memory).
struct Scalars {
  double lr, beta1, beta2, eps, eta, weight_decay_rate, momentum, alpha, rho;
  bool eps_inside_sqrt;
};

// blockIdx.y picks the parameter, the x blocks stride over its elements; the same element
// formulas as core/cpu/update.cpp (core/ops/update_rules.h for the rules after Adam). One kernel per
// rule, so each carries only its own code.
template <class T, UpdateRule R>
__global__ void update_kernel(TensorList<T> list, const Scalars* scalars) {
  namespace E = update_rules;
  const int t = blockIdx.y;
  const int64_t n = list.numel[t];
  const Scalars s = scalars[t];
  T* p = list.param[t];
  const T* g = list.grad[t];
  T* s0 = list.state0[t];
  T* s1 = list.state1[t];
  T* s2 = list.state2[t];
  const T lr = T(s.lr), eps = T(s.eps);
  CHAINER_GRID_STRIDE_LOOP(i, n) {
    if constexpr (R == UpdateRule::SGD) {
      p[i] += T(-s.lr) * g[i];
    } else if constexpr (R == UpdateRule::MomentumSGD) {
      T* v = s0;
      v[i] = T(s.momentum) * v[i] - T(s.lr) * g[i];
      p[i] += v[i];
    } else if constexpr (R == UpdateRule::Adam) {
      T* m = s0;
      T* v = s1;
      const T gi = g[i];
      const T mi = m[i] + T(1 - s.beta1) * (gi - m[i]);
      const T vi = v[i] + T(1 - s.beta2) * (gi * gi - v[i]);
      m[i] = mi;
      v[i] = vi;
      p[i] -= T(s.eta) * (T(s.lr) * mi / (sqrt(vi) + T(s.eps)) + T(s.weight_decay_rate) * p[i]);
    } else if constexpr (R == UpdateRule::AMSGrad) {
      E::ams_grad(p[i], g[i], s0[i], s1[i], s2[i], T(1 - s.beta1), T(1 - s.beta2), lr, eps, T(s.eta),
                  T(s.weight_decay_rate));
    } else if constexpr (R == UpdateRule::AdaGrad) {
      E::ada_grad(p[i], g[i], s0[i], lr, eps);
    } else if constexpr (R == UpdateRule::RMSprop) {
      E::rmsprop(p[i], g[i], s0[i], lr, T(s.alpha), T(1 - s.alpha), eps, s.eps_inside_sqrt);
    } else if constexpr (R == UpdateRule::AdaDelta) {
      E::ada_delta(p[i], g[i], s0[i], s1[i], T(s.rho), T(1 - s.rho), eps);
    } else if constexpr (R == UpdateRule::NesterovAG) {
      E::nesterov_ag(p[i], g[i], s0[i], lr, T(s.momentum), T(s.momentum * s.momentum), T((1 + s.momentum) * s.lr));
    } else if constexpr (R == UpdateRule::RMSpropGraves) {
      E::rmsprop_graves(p[i], g[i], s0[i], s1[i], s2[i], lr, T(s.alpha), T(1 - s.alpha), T(s.momentum), eps);
    } else {
      static_assert(R == UpdateRule::SMORMS3);
      E::smorms3(p[i], g[i], s0[i], s1[i], s2[i], lr, eps);
    }
  }
}

// The kernel of RULE, for a launch.
template <class T>
auto kernel_for(UpdateRule rule) -> void (*)(TensorList<T>, const Scalars*) {
  switch (rule) {
    case UpdateRule::SGD: return update_kernel<T, UpdateRule::SGD>;
    case UpdateRule::MomentumSGD: return update_kernel<T, UpdateRule::MomentumSGD>;
    case UpdateRule::Adam: return update_kernel<T, UpdateRule::Adam>;
    case UpdateRule::AMSGrad: return update_kernel<T, UpdateRule::AMSGrad>;
    case UpdateRule::AdaGrad: return update_kernel<T, UpdateRule::AdaGrad>;
    case UpdateRule::RMSprop: return update_kernel<T, UpdateRule::RMSprop>;
    case UpdateRule::AdaDelta: return update_kernel<T, UpdateRule::AdaDelta>;
    case UpdateRule::NesterovAG: return update_kernel<T, UpdateRule::NesterovAG>;
    case UpdateRule::RMSpropGraves: return update_kernel<T, UpdateRule::RMSpropGraves>;
    case UpdateRule::SMORMS3: return update_kernel<T, UpdateRule::SMORMS3>;
  }
  CHAINER_ASSERT(false, "update: unknown rule");
  return nullptr;
}

template <class T>
void launch(UpdateRule rule, std::vector<ParamTensors>& params, const std::vector<size_t>& which,
            const UpdateScalarsFn& fn) {
  TensorList<T> list{};
  int64_t largest = 0;
  for (size_t j = 0; j < which.size(); ++j) {
    ParamTensors& pt = params[which[j]];
    list.param[j] = pt.param.data<T>();
    list.grad[j] = pt.grad.data<T>();
    list.state0[j] = pt.state0.defined() ? pt.state0.data<T>() : nullptr;
    list.state1[j] = pt.state1.defined() ? pt.state1.data<T>() : nullptr;
    list.state2[j] = pt.state2.defined() ? pt.state2.data<T>() : nullptr;
    list.numel[j] = pt.param.numel();
    largest = std::max(largest, list.numel[j]);
  }
  if (largest == 0) return;
  const void* scalars = step_scalars(which.size() * sizeof(Scalars), [fn, which](void* host) {
    Scalars* out = static_cast<Scalars*>(host);
    for (size_t j = 0; j < which.size(); ++j) {
      const UpdateScalars s = fn(which[j]);
      out[j] = {s.lr, s.beta1, s.beta2, s.eps, s.eta, s.weight_decay_rate, s.momentum, s.alpha, s.rho, s.eps_inside_sqrt};
    }
  });
  const dim3 grid(std::min<unsigned>(blocks_for(largest), 1024), unsigned(which.size()));
  kernel_for<T>(rule)<<<grid, kThreads, 0, compute_stream()>>>(list, static_cast<const Scalars*>(scalars));
  CHAINER_CUDA_CHECK_LAUNCH(update_kernel);
}

// g *= min(1, threshold / sqrt(*sum_sq)), decided on the device.
template <class T>
__global__ void clip_kernel(T* g, int64_t n, const double* sum_sq, double threshold) {
  const double norm = sqrt(*sum_sq);
  if (norm <= threshold) return;
  const T rate = T(threshold / norm);
  CHAINER_GRID_STRIDE_LOOP(i, n) g[i] = g[i] * rate;
}

}  // namespace

void update(UpdateRule rule, std::vector<ParamTensors>& params, const UpdateScalarsFn& scalars) {
  // One launch per dtype and per kMaxTensors parameters.
  for (DType dtype : {DType::Float32, DType::Float64}) {
    std::vector<size_t> which;
    auto flush = [&] {
      if (which.empty()) return;
      if (dtype == DType::Float32) launch<float>(rule, params, which, scalars);
      else launch<double>(rule, params, which, scalars);
      which.clear();
    };
    for (size_t i = 0; i < params.size(); ++i) {
      if (params[i].param.dtype() != dtype) continue;
      which.push_back(i);
      if (which.size() == size_t(kMaxTensors)) flush();
    }
    flush();
  }
}

void clip_by_norm(std::vector<Tensor>& grads, double threshold) {
  Tensor sum_sq = Tensor::empty({}, DType::Float64, Device::cuda(current_device_index()));
  sum_of_squares(grads, sum_sq);
  for (Tensor& g : grads) {
    if (g.numel() == 0) continue;
    CHAINER_DISPATCH_FLOATING(g.dtype(), "GradientClipping", [&] {
      clip_kernel<scalar_t><<<blocks_for(g.numel()), kThreads, 0, compute_stream()>>>(
          g.data<scalar_t>(), g.numel(), sum_sq.data<double>(), threshold);
      CHAINER_CUDA_CHECK_LAUNCH(clip_kernel);
    });
  }
}

}  // namespace chainer::cuda
