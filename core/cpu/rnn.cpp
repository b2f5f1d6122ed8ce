// Recurrent cells: the fused LSTM and GRU steps and their gradients, one pass over the batch's
// units each (the formulas are core/ops/elementwise_formulas.h's, shared with core/cuda/rnn.cu,
// with float32's sigmoid and tanh from core/cpu/vector_math.h so that the loops vectorize).
#include "core/cpu/kernels.h"
#include "core/cpu/vector_math.h"
#include "core/ops/elementwise_formulas.h"
#include "core/util/parallel.h"

namespace chainer::cpu::CHAINER_ISA {

namespace {
// The cells' sigmoid and tanh: vector_math's, which loops over units vectorize.
struct VectorMath {
  template <class T>
  static T sigmoid(T x) {
    return vector_math::sigmoid(x);
  }
  template <class T>
  static T tanh(T x) {
    return vector_math::tanh(x);
  }
};
}  // namespace

void lstm(const Tensor& x, const Tensor& c_prev, Tensor& c, Tensor& h) {
  const int64_t batch = c.size(0), units = c.size(1);
  const Tensor cp = c_prev.contiguous();
  CHAINER_DISPATCH_FLOATING(x.dtype(), "lstm", [&] {
    using T = scalar_t;
    const T* px = x.data<T>();
    const T* pc = cp.data<T>();
    T* oc = c.data<T>();
    T* oh = h.data<T>();
    parallel_for(batch, row_grain(4 * units), [&](int64_t s, int64_t e) {
      for (int64_t b = s; b < e; ++b)
        for (int64_t u = 0; u < units; ++u) {
          const T* g = px + (b * units + u) * 4;
          const int64_t k = b * units + u;
          formulas::lstm_cell<T, VectorMath>(g[0], g[1], g[2], g[3], pc[k], oc[k], oh[k]);
        }
    });
  });
}

void lstm_grad(const Tensor& x, const Tensor& c_prev, const Tensor& c, const Tensor& gc, const Tensor& gh, Tensor& gx,
               Tensor& gc_prev) {
  const int64_t batch = c.size(0), units = c.size(1);
  const Tensor cp = c_prev.contiguous(), cc = c.contiguous();
  // Zeros for an undefined gradient rather than a test per element: a conditional load keeps the
  // compiler from vectorizing the loop (it was an eighth of a seq2seq step).
  const Tensor gcc = gc.defined() ? gc.contiguous() : Tensor::zeros(c.shape(), c.dtype());
  const Tensor ghc = gh.defined() ? gh.contiguous() : Tensor::zeros(c.shape(), c.dtype());
  CHAINER_DISPATCH_FLOATING(x.dtype(), "lstm", [&] {
    using T = scalar_t;
    const T* px = x.data<T>();
    const T* pcp = cp.data<T>();
    const T* pc = cc.data<T>();
    const T* pgc = gcc.data<T>();
    const T* pgh = ghc.data<T>();
    T* ogx = gx.data<T>();
    T* ogc = gc_prev.data<T>();
    parallel_for(batch, row_grain(4 * units), [&](int64_t s, int64_t e) {
      for (int64_t b = s; b < e; ++b)
        for (int64_t u = 0; u < units; ++u) {
          const int64_t k = b * units + u;
          const T* g = px + 4 * k;
          formulas::lstm_cell_grad<T, VectorMath>(g[0], g[1], g[2], g[3], pcp[k], pc[k], pgc[k], pgh[k], ogx + 4 * k,
                                                  ogc[k]);
        }
    });
  });
}

void gru(const Tensor& xg, const Tensor& hg, const Tensor& h, Tensor& y) {
  const int64_t batch = y.size(0), units = y.size(1);
  const Tensor hc = h.contiguous();
  CHAINER_DISPATCH_FLOATING(xg.dtype(), "gru", [&] {
    using T = scalar_t;
    const T* px = xg.data<T>();
    const T* ph = hg.data<T>();
    const T* pp = hc.data<T>();
    T* py = y.data<T>();
    parallel_for(batch, row_grain(6 * units), [&](int64_t s, int64_t e) {
      for (int64_t k = s * units; k < e * units; ++k) {
        const T* x = px + 3 * k;
        const T* g = ph + 3 * k;
        py[k] = formulas::gru_cell<T, VectorMath>(x[0], x[1], x[2], g[0], g[1], g[2], pp[k]);
      }
    });
  });
}

void gru_grad(const Tensor& xg, const Tensor& hg, const Tensor& h, const Tensor& gy, Tensor& gxg, Tensor& ghg,
              Tensor& gh) {
  const int64_t batch = gh.size(0), units = gh.size(1);
  const Tensor hc = h.contiguous(), gyc = gy.contiguous();
  CHAINER_DISPATCH_FLOATING(xg.dtype(), "gru", [&] {
    using T = scalar_t;
    const T* px = xg.data<T>();
    const T* ph = hg.data<T>();
    const T* pp = hc.data<T>();
    const T* pg = gyc.data<T>();
    T* ox = gxg.data<T>();
    T* oh = ghg.data<T>();
    T* op = gh.data<T>();
    parallel_for(batch, row_grain(6 * units), [&](int64_t s, int64_t e) {
      for (int64_t k = s * units; k < e * units; ++k) {
        const T* x = px + 3 * k;
        const T* g = ph + 3 * k;
        formulas::gru_cell_grad<T, VectorMath>(x[0], x[1], x[2], g[0], g[1], g[2], pp[k], pg[k], ox + 3 * k,
                                               oh + 3 * k, op[k]);
      }
    });
  });
}

}  // namespace chainer::cpu::CHAINER_ISA
