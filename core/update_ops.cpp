#include "core/update_ops.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

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
// Adam's element update, exactly as written (sqrt and division): float64, and the tails.
template <class T>
void adam_exact(T* __restrict p, const T* __restrict g, T* __restrict m, T* __restrict v, int64_t b, int64_t e,
                T b1, T b2, T lr, T eps, T eta, T wd) {
  _Pragma("GCC ivdep")  // restrict and ivdep: the four arrays never overlap, so it vectorizes
  for (int64_t i = b; i < e; ++i) {
    const T gi = g[i];
    const T mi = m[i] + b1 * (gi - m[i]);
    const T vi = v[i] + b2 * (gi * gi - v[i]);
    m[i] = mi;
    v[i] = vi;
    p[i] -= eta * (lr * mi / (std::sqrt(vi) + eps) + wd * p[i]);
  }
}

// float32 with AVX-512: sqrt(v) as v * rsqrt(v) and 1 / (sqrt(v) + eps) from the reciprocal
// estimate, each refined by one Newton step on FMAs (the result is within a few ulp of the
// exact step). Exact vsqrtps and vdivps share one slow divider unit: alone, with the cache
// cold, this loop is 2.3x faster than the exact one; in an epoch both wait on memory.
void adam_range(float* p, const float* g, float* m, float* v, int64_t b, int64_t e, float b1, float b2, float lr,
                float eps, float eta, float wd) {
  int64_t i = b;
#if defined(__AVX512F__)
  const __m512 vb1 = _mm512_set1_ps(b1), vb2 = _mm512_set1_ps(b2), step = _mm512_set1_ps(eta * lr),
               decay = _mm512_set1_ps(eta * wd), veps = _mm512_set1_ps(eps), half = _mm512_set1_ps(0.5f),
               three = _mm512_set1_ps(3.f), two = _mm512_set1_ps(2.f), zero = _mm512_setzero_ps();
  for (; i + 16 <= e; i += 16) {
    const __m512 gi = _mm512_loadu_ps(g + i);
    __m512 mi = _mm512_loadu_ps(m + i), vi = _mm512_loadu_ps(v + i), pi = _mm512_loadu_ps(p + i);
    mi = _mm512_fmadd_ps(vb1, _mm512_sub_ps(gi, mi), mi);
    vi = _mm512_fmadd_ps(vb2, _mm512_fmsub_ps(gi, gi, vi), vi);
    _mm512_storeu_ps(m + i, mi);
    _mm512_storeu_ps(v + i, vi);
    // (maskz forms: the plain ones trip a false "uninitialized" warning in GCC 12's headers)
    __m512 y = _mm512_maskz_rsqrt14_ps(0xffff, vi);  // y (3 - v y^2) / 2; sqrt(0) stays 0 (rsqrt gives inf)
    y = _mm512_mul_ps(_mm512_mul_ps(half, y), _mm512_fnmadd_ps(_mm512_mul_ps(vi, y), y, three));
    const __m512 denom = _mm512_add_ps(_mm512_maskz_mul_ps(_mm512_cmp_ps_mask(vi, zero, _CMP_GT_OQ), vi, y), veps);
    __m512 r = _mm512_maskz_rcp14_ps(0xffff, denom);  // r (2 - d r)
    r = _mm512_mul_ps(r, _mm512_fnmadd_ps(denom, r, two));
    pi = _mm512_sub_ps(pi, _mm512_fmadd_ps(_mm512_mul_ps(step, mi), r, _mm512_mul_ps(decay, pi)));
    _mm512_storeu_ps(p + i, pi);
  }
#endif
  adam_exact<float>(p, g, m, v, i, e, b1, b2, lr, eps, eta, wd);
}

void adam_range(double* p, const double* g, double* m, double* v, int64_t b, int64_t e, double b1, double b2,
                double lr, double eps, double eta, double wd) {
  adam_exact<double>(p, g, m, v, b, e, b1, b2, lr, eps, eta, wd);
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
      adam_range(p, g, pm, pv, b, e, b1, b2, lr, eps, eta, wd);
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
