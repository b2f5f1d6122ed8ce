// The optimizer updates on the CPU, each fused into one pass over memory: the update is
// memory-bound, so reading param, grad and state once is what makes it fast.
#if defined(CHAINER_ISA_AVX2) || defined(CHAINER_ISA_AVX512)
#include <immintrin.h>
#endif

#include <cmath>

#include "core/cpu/kernels.h"
#include "core/util/parallel.h"
#include "core/ops/update_rules.h"

namespace chainer::cpu::CHAINER_ISA {

namespace {
constexpr int64_t kUpdateGrain = 1 << 14;  // elements per chunk of an optimizer step

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

// float32 in the vector families: sqrt(v) as v * rsqrt(v) and 1 / (sqrt(v) + eps) from the
// reciprocal estimate, each refined by Newton steps on FMAs (the result is within a few ulp of
// the exact step). Exact vsqrtps and vdivps share one slow divider unit: alone, with the cache
// cold, this loop is 2.3x faster than the exact one in AVX-512; in an epoch both wait on memory.
// AVX-512's estimates have 14 bits, and one step each reaches float's precision; AVX2's have 12,
// and take two.
void adam_range(float* p, const float* g, float* m, float* v, int64_t b, int64_t e, float b1, float b2, float lr,
                float eps, float eta, float wd) {
  int64_t i = b;
#if defined(CHAINER_ISA_AVX512)
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
#elif defined(CHAINER_ISA_AVX2)
  const __m256 vb1 = _mm256_set1_ps(b1), vb2 = _mm256_set1_ps(b2), step = _mm256_set1_ps(eta * lr),
               decay = _mm256_set1_ps(eta * wd), veps = _mm256_set1_ps(eps), half = _mm256_set1_ps(0.5f),
               three = _mm256_set1_ps(3.f), two = _mm256_set1_ps(2.f), zero = _mm256_setzero_ps();
  for (; i + 8 <= e; i += 8) {
    const __m256 gi = _mm256_loadu_ps(g + i);
    __m256 mi = _mm256_loadu_ps(m + i), vi = _mm256_loadu_ps(v + i), pi = _mm256_loadu_ps(p + i);
    mi = _mm256_fmadd_ps(vb1, _mm256_sub_ps(gi, mi), mi);
    vi = _mm256_fmadd_ps(vb2, _mm256_fmsub_ps(gi, gi, vi), vi);
    _mm256_storeu_ps(m + i, mi);
    _mm256_storeu_ps(v + i, vi);
    __m256 y = _mm256_rsqrt_ps(vi);  // y (3 - v y^2) / 2, twice; sqrt(0) stays 0 (rsqrt gives inf)
    y = _mm256_mul_ps(_mm256_mul_ps(half, y), _mm256_fnmadd_ps(_mm256_mul_ps(vi, y), y, three));
    y = _mm256_mul_ps(_mm256_mul_ps(half, y), _mm256_fnmadd_ps(_mm256_mul_ps(vi, y), y, three));
    const __m256 denom = _mm256_add_ps(_mm256_and_ps(_mm256_cmp_ps(vi, zero, _CMP_GT_OQ), _mm256_mul_ps(vi, y)), veps);
    __m256 r = _mm256_rcp_ps(denom);  // r (2 - d r), twice
    r = _mm256_mul_ps(r, _mm256_fnmadd_ps(denom, r, two));
    r = _mm256_mul_ps(r, _mm256_fnmadd_ps(denom, r, two));
    pi = _mm256_sub_ps(pi, _mm256_fmadd_ps(_mm256_mul_ps(step, mi), r, _mm256_mul_ps(decay, pi)));
    _mm256_storeu_ps(p + i, pi);
  }
#endif
  adam_exact<float>(p, g, m, v, i, e, b1, b2, lr, eps, eta, wd);
}

void adam_range(double* p, const double* g, double* m, double* v, int64_t b, int64_t e, double b1, double b2,
                double lr, double eps, double eta, double wd) {
  adam_exact<double>(p, g, m, v, b, e, b1, b2, lr, eps, eta, wd);
}

template <class T>
void adam(ParamTensors& t, const UpdateScalars& s) {
  T* const p = t.param.data<T>();
  const T* const g = t.grad.data<T>();
  T* const pm = t.state0.data<T>();
  T* const pv = t.state1.data<T>();
  const T b1 = T(1 - s.beta1), b2 = T(1 - s.beta2), lr = T(s.lr), eps = T(s.eps), eta = T(s.eta),
          wd = T(s.weight_decay_rate);
  parallel_for(t.param.numel(), kUpdateGrain, [=](int64_t b, int64_t e) { adam_range(p, g, pm, pv, b, e, b1, b2, lr, eps, eta, wd); });
}

// v = momentum * v - lr * g; p += v.
template <class T>
void momentum_sgd(ParamTensors& t, const UpdateScalars& s) {
  T* p = t.param.data<T>();
  const T* g = t.grad.data<T>();
  T* pv = t.state0.data<T>();
  const T mom = T(s.momentum), a = T(s.lr);
  parallel_for(t.param.numel(), kUpdateGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      pv[i] = mom * pv[i] - a * g[i];
      p[i] += pv[i];
    }
  });
}
// The rules of core/ops/update_rules.h: STEP(p, g, and the STATES state elements) for each element,
// in parallel ranges.
template <class T, int States, class Step>
void elementwise(ParamTensors& t, Step step) {
  T* const p = t.param.data<T>();
  const T* const g = t.grad.data<T>();
  T* const s0 = t.state0.data<T>();
  T* const s1 = States > 1 ? t.state1.data<T>() : nullptr;
  T* const s2 = States > 2 ? t.state2.data<T>() : nullptr;
  parallel_for(t.param.numel(), kUpdateGrain, [=](int64_t b, int64_t e) {
    _Pragma("GCC ivdep")  // the arrays never overlap
    for (int64_t i = b; i < e; ++i) {
      if constexpr (States == 1) step(p[i], g[i], s0[i]);
      else if constexpr (States == 2) step(p[i], g[i], s0[i], s1[i]);
      else step(p[i], g[i], s0[i], s1[i], s2[i]);
    }
  });
}

template <class T>
void other_rule(UpdateRule rule, ParamTensors& t, const UpdateScalars& s) {
  namespace R = update_rules;
  const T lr = T(s.lr), eps = T(s.eps);
  switch (rule) {
    case UpdateRule::AMSGrad: {
      const T b1 = T(1 - s.beta1), b2 = T(1 - s.beta2), eta = T(s.eta), wd = T(s.weight_decay_rate);
      elementwise<T, 3>(t, [=](T& p, T g, T& m, T& v, T& vhat) { R::ams_grad(p, g, m, v, vhat, b1, b2, lr, eps, eta, wd); });
      break;
    }
    case UpdateRule::AdaGrad:
      elementwise<T, 1>(t, [=](T& p, T g, T& h) { R::ada_grad(p, g, h, lr, eps); });
      break;
    case UpdateRule::RMSprop: {
      const T alpha = T(s.alpha), rest = T(1 - s.alpha);
      if (s.eps_inside_sqrt)
        elementwise<T, 1>(t, [=](T& p, T g, T& ms) { R::rmsprop(p, g, ms, lr, alpha, rest, eps, true); });
      else
        elementwise<T, 1>(t, [=](T& p, T g, T& ms) { R::rmsprop(p, g, ms, lr, alpha, rest, eps, false); });
      break;
    }
    case UpdateRule::AdaDelta: {
      const T rho = T(s.rho), rest = T(1 - s.rho);
      elementwise<T, 2>(t, [=](T& p, T g, T& msg, T& msdx) { R::ada_delta(p, g, msg, msdx, rho, rest, eps); });
      break;
    }
    case UpdateRule::NesterovAG: {
      const T mom = T(s.momentum), mom_sq = T(s.momentum * s.momentum), ahead = T((1 + s.momentum) * s.lr);
      elementwise<T, 1>(t, [=](T& p, T g, T& v) { R::nesterov_ag(p, g, v, lr, mom, mom_sq, ahead); });
      break;
    }
    case UpdateRule::RMSpropGraves: {
      const T alpha = T(s.alpha), rest = T(1 - s.alpha), mom = T(s.momentum);
      elementwise<T, 3>(t, [=](T& p, T g, T& n, T& gm, T& delta) {
        R::rmsprop_graves(p, g, n, gm, delta, lr, alpha, rest, mom, eps);
      });
      break;
    }
    case UpdateRule::SMORMS3:
      elementwise<T, 3>(t, [=](T& p, T g, T& mem, T& gm, T& g2) { R::smorms3(p, g, mem, gm, g2, lr, eps); });
      break;
    default:
      CHAINER_ASSERT(false, "update: a rule with its own loop reached other_rule");
  }
}
}  // namespace

void update(UpdateRule rule, std::vector<ParamTensors>& params, const UpdateScalarsFn& scalars) {
  for (size_t i = 0; i < params.size(); ++i) {
    ParamTensors& t = params[i];
    const UpdateScalars s = scalars(i);
    if (rule == UpdateRule::SGD) {
      axpy(t.param, -s.lr, t.grad);
      continue;
    }
    CHAINER_DISPATCH_FLOATING(t.param.dtype(), "update", [&] {
      if (rule == UpdateRule::Adam) adam<scalar_t>(t, s);
      else if (rule == UpdateRule::MomentumSGD) momentum_sgd<scalar_t>(t, s);
      else other_rule<scalar_t>(rule, t, s);
    });
  }
}

void clip_by_norm(std::vector<Tensor>& grads, double threshold) {
  Tensor sq = Tensor::empty({}, DType::Float64);
  sum_of_squares(grads, sq);
  const double norm = std::sqrt(*sq.data<double>());
  if (norm <= threshold) return;
  const double rate = threshold / norm;
  for (Tensor& g : grads) affine(g, rate, 0.0, g);
}

}  // namespace chainer::cpu::CHAINER_ISA
