#include "core/update_ops.h"

#include <cmath>
#include <vector>

#include "core/parallel.h"

namespace chainer::ops {

namespace {
constexpr int64_t kGrain = 1 << 14;

void check_same(const char* op, const Tensor& param, std::initializer_list<const Tensor*> others) {
  if (!param.device().is_cpu()) throw Error(str(op, ": device ", param.device().str(), " is not supported"));
  if (!param.is_contiguous()) throw Error(str(op, ": the parameter must be contiguous"));
  for (const Tensor* t : others) {
    if (!t->defined() || t->shape() != param.shape() || t->dtype() != param.dtype() || !t->is_contiguous())
      throw Error(str(op, ": state or gradient of shape ", t->defined() ? shape_str(t->shape()) : "undefined",
                      " does not match the parameter of shape ", shape_str(param.shape())));
  }
}
}  // namespace

void adam_update_(Tensor& param, const Tensor& grad, Tensor& m, Tensor& v, const AdamStep& s) {
  check_same("adam", param, {&grad, &m, &v});
  CHAINER_DISPATCH_FLOATING(param.dtype(), "adam", [&] {
    using T = scalar_t;
    T* const p = param.data<T>();
    const T* const g = grad.data<T>();
    T* const pm = m.data<T>();
    T* const pv = v.data<T>();
    const T b1 = T(1 - s.beta1), b2 = T(1 - s.beta2), lr = T(s.lr), eps = T(s.eps), eta = T(s.eta),
            wd = T(s.weight_decay_rate);
    parallel_for(param.numel(), kGrain, [=](int64_t b, int64_t e) {
      // Restrict-qualified locals and ivdep: the four arrays never overlap, and saying so is
      // what lets the compiler vectorize the loop (sqrt and division included).
      T* __restrict pp = p;
      const T* __restrict gg = g;
      T* __restrict mm = pm;
      T* __restrict vv = pv;
      _Pragma("GCC ivdep")
      for (int64_t i = b; i < e; ++i) {
        const T gi = gg[i];
        const T mi = mm[i] + b1 * (gi - mm[i]);
        const T vi = vv[i] + b2 * (gi * gi - vv[i]);
        mm[i] = mi;
        vv[i] = vi;
        pp[i] -= eta * (lr * mi / (std::sqrt(vi) + eps) + wd * pp[i]);
      }
    });
  });
}

void momentum_sgd_update_(Tensor& param, const Tensor& grad, Tensor& v, double lr, double momentum) {
  check_same("momentum_sgd", param, {&grad, &v});
  CHAINER_DISPATCH_FLOATING(param.dtype(), "momentum_sgd", [&] {
    using T = scalar_t;
    T* p = param.data<T>();
    const T* g = grad.data<T>();
    T* pv = v.data<T>();
    const T mom = T(momentum), a = T(lr);
    parallel_for(param.numel(), kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        pv[i] = mom * pv[i] - a * g[i];
        p[i] += pv[i];
      }
    });
  });
}

double sum_of_squares(const Tensor& a) {
  if (!a.device().is_cpu()) throw Error(str("sum_of_squares: device ", a.device().str(), " is not supported"));
  return CHAINER_DISPATCH_FLOATING(a.dtype(), "sum_of_squares", [&] {
    std::vector<double> v = a.to_vector<double>();
    double s = 0;
    for (double x : v) s += x * x;
    return s;
  });
}

}  // namespace chainer::ops
