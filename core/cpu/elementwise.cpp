#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "core/cpu/kernels.h"
#include "core/ops/elementwise_formulas.h"
#include "core/util/parallel.h"

namespace chainer::cpu::CHAINER_ISA {

namespace {
template <class T>
constexpr bool is_16bit = std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;

// D[i] = S[i] for N elements; between float32 and a 16-bit type by the vectorized loops of
// core/tensor/float16.h.
template <class D, class S>
void convert_dense(const S* s, D* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = D(s[i]);
}
void convert_dense(const float* s, float16* d, int64_t n) { narrow(s, d, n); }
void convert_dense(const float* s, bfloat16* d, int64_t n) { narrow(s, d, n); }
void convert_dense(const float16* s, float* d, int64_t n) { widen(s, d, n); }
void convert_dense(const bfloat16* s, float* d, int64_t n) { widen(s, d, n); }

// Strides of A seen through the broadcast to OUT's shape (0 on broadcast axes).
std::vector<int64_t> broadcast_strides(const Tensor& a, const Shape& out) {
  const int64_t nd = int64_t(out.size()), shift = nd - a.ndim();
  std::vector<int64_t> s(size_t(nd), 0);
  for (int64_t d = 0; d < a.ndim(); ++d) s[size_t(d + shift)] = a.shape()[size_t(d)] == 1 ? 0 : a.strides()[size_t(d)];
  return s;
}

// OUT (of element type O) = F(A, B) with A and B (of T) broadcast to OUT's shape.
template <class T, class O = T, class F>
void binary_kernel(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  O* po = out.data<O>();
  const int64_t n = out.numel();
  if (a.shape() == out.shape() && b.shape() == out.shape() && a.is_contiguous() && b.is_contiguous()) {
    parallel_for(n, kGrain, [&](int64_t s, int64_t e) {
      const F fn = f;  // a local copy: a parameter of F read through a reference might alias PO
      for (int64_t i = s; i < e; ++i) po[i] = fn(pa[i], pb[i]);  // and would keep the loop scalar
    });
    return;
  }
  // A row broadcast (b is the last axes of out, contiguous), the hot case of bias addition.
  if (a.shape() == out.shape() && a.is_contiguous() && b.is_contiguous() && b.numel() > 0 &&
      n % b.numel() == 0 && broadcast_strides(b, out.shape()) == [&] {
        auto s = contiguous_strides(out.shape());
        int64_t lead = out.ndim() - b.ndim();
        for (int64_t d = 0; d < lead; ++d) s[size_t(d)] = 0;
        return s;
      }()) {
    const int64_t m = b.numel(), rows = n / m;
    parallel_for(rows, std::max<int64_t>(1, kGrain / m), [&](int64_t s, int64_t e) {
      const F fn = f;
      for (int64_t r = s; r < e; ++r)
        for (int64_t j = 0; j < m; ++j) po[r * m + j] = fn(pa[r * m + j], pb[j]);
    });
    return;
  }
  auto sa = broadcast_strides(a, out.shape()), sb = broadcast_strides(b, out.shape());
  const Shape& shape = out.shape();
  const int64_t nd = out.ndim();
  std::vector<int64_t> idx(size_t(nd), 0);
  int64_t oa = 0, ob = 0;
  for (int64_t k = 0; k < n; ++k) {
    po[k] = f(pa[oa], pb[ob]);
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++idx[size_t(d)] < shape[size_t(d)]) {
        oa += sa[size_t(d)];
        ob += sb[size_t(d)];
        break;
      }
      oa -= sa[size_t(d)] * (shape[size_t(d)] - 1);
      ob -= sb[size_t(d)] * (shape[size_t(d)] - 1);
      idx[size_t(d)] = 0;
    }
  }
}

template <class T, class F>
void map_kernel(const Tensor& a, Tensor& out, F f) {
  Tensor ac = a.contiguous();
  const T* pa = ac.data<T>();
  T* po = out.data<T>();
  parallel_for(out.numel(), kGrain, [&](int64_t s, int64_t e) {
    const F fn = f;  // as in binary_kernel: a local copy lets the loop vectorize
    for (int64_t i = s; i < e; ++i) po[i] = fn(pa[i]);
  });
}

}  // namespace

void fill(Tensor& out, double value) {
  CHAINER_DISPATCH_ALL_AND_16BIT(out.dtype(), "fill", [&] {
    const scalar_t v = scalar_t(value);
    scalar_t* p = static_cast<scalar_t*>(out.storage()->data()) + out.offset();
    if (out.is_contiguous()) {
      std::fill(p, p + out.numel(), v);
    } else {
      for_each_offset(out.shape(), out.strides(), [&](int64_t o) { p[o] = v; });
    }
  });
}

void copy(const Tensor& src, Tensor& dst) {
  if (src.dtype() == dst.dtype() && dst.is_contiguous() && src.is_contiguous()) {
    if (dst.raw_data() != src.raw_data()) std::memmove(dst.raw_data(), src.raw_data(), dst.nbytes());
    return;
  }
  CHAINER_DISPATCH_ALL_AND_16BIT(dst.dtype(), "copy", [&] {
    using dst_t = scalar_t;
    dst_t* d = static_cast<dst_t*>(dst.storage()->data()) + dst.offset();
    CHAINER_DISPATCH_ALL_AND_16BIT(src.dtype(), "copy", [&] {
      const scalar_t* s = static_cast<const scalar_t*>(src.storage()->data()) + src.offset();
      // Conversions to and from the 16-bit types are arithmetic, not a byte copy: between dense
      // tensors (packing gradients for the wire) they run over the team. Decided at compile
      // time, so the other pairs keep their loop as it was.
      if constexpr (is_16bit<dst_t> || is_16bit<scalar_t>) {
        if (dst.is_contiguous() && src.is_contiguous()) {
          parallel_for(dst.numel(), kGrain, [&](int64_t b, int64_t e) {
            convert_dense(s + b, d + b, e - b);
          });
          return;
        }
      }
      if (dst.is_contiguous()) {  // the common case (clone, contiguous): no table of destination offsets
        int64_t k = 0;
        for_each_offset(src.shape(), src.strides(), [&](int64_t o) { d[k++] = dst_t(s[o]); });
        return;
      }
      std::vector<int64_t> doff;
      doff.reserve(size_t(dst.numel()));
      for_each_offset(dst.shape(), dst.strides(), [&](int64_t o) { doff.push_back(o); });
      size_t k = 0;
      for_each_offset(src.shape(), src.strides(), [&](int64_t o) { d[doff[k++]] = dst_t(s[o]); });
    });
  });
}

void take_rows(const Tensor& src, const std::vector<int64_t>& rows, Tensor& out) {
  const Tensor s = src.contiguous();
  const size_t row_bytes = size_t(shape_numel(Shape(src.shape().begin() + 1, src.shape().end()))) * src.itemsize();
  if (row_bytes == 0) return;
  const char* from = static_cast<const char*>(s.raw_data());
  char* to = static_cast<char*>(out.raw_data());
  for (size_t j = 0; j < rows.size(); ++j) std::memcpy(to + j * row_bytes, from + size_t(rows[j]) * row_bytes, row_bytes);
}

void accumulate(Tensor& acc, const Tensor& value) {
  *acc.data<double>() += value.item_double();
}

void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  CHAINER_DISPATCH_ALL(out.dtype(), "binary", [&] {
    using T = scalar_t;
    switch (op) {
      case BinaryOp::Add: return binary_kernel<T>(a, b, out, formulas::Binary<BinaryOp::Add>{});
      case BinaryOp::Sub: return binary_kernel<T>(a, b, out, formulas::Binary<BinaryOp::Sub>{});
      case BinaryOp::Mul: return binary_kernel<T>(a, b, out, formulas::Binary<BinaryOp::Mul>{});
      case BinaryOp::Div: return binary_kernel<T>(a, b, out, formulas::Binary<BinaryOp::Div>{});
      case BinaryOp::Maximum: return binary_kernel<T>(a, b, out, formulas::Binary<BinaryOp::Maximum>{});
      case BinaryOp::Minimum: return binary_kernel<T>(a, b, out, formulas::Binary<BinaryOp::Minimum>{});
    }
  });
}

void broadcast_copy(const Tensor& a, Tensor& out) {
  CHAINER_DISPATCH_ALL(out.dtype(), "broadcast_to", [&] {
    using T = scalar_t;
    const T* pa = a.data<T>();
    T* po = out.data<T>();
    int64_t k = 0;
    for_each_offset(out.shape(), broadcast_strides(a, out.shape()), [&](int64_t o) { po[k++] = pa[o]; });
  });
}

void unary(UnaryOp op, const Tensor& a, Tensor& out) {
  CHAINER_DISPATCH_FLOATING(out.dtype(), "unary", [&] {
    using T = scalar_t;
    switch (op) {
      case UnaryOp::Neg: return map_kernel<T>(a, out, formulas::Unary<UnaryOp::Neg>{});
      case UnaryOp::Exp: return map_kernel<T>(a, out, formulas::Unary<UnaryOp::Exp>{});
      case UnaryOp::Log: return map_kernel<T>(a, out, formulas::Unary<UnaryOp::Log>{});
      case UnaryOp::Sqrt: return map_kernel<T>(a, out, formulas::Unary<UnaryOp::Sqrt>{});
      case UnaryOp::Square: return map_kernel<T>(a, out, formulas::Unary<UnaryOp::Square>{});
      case UnaryOp::Relu: return map_kernel<T>(a, out, formulas::Unary<UnaryOp::Relu>{});
      case UnaryOp::Sigmoid:
        return map_kernel<T>(a, out, formulas::Unary<UnaryOp::Sigmoid>{});
      case UnaryOp::Tanh: return map_kernel<T>(a, out, formulas::Unary<UnaryOp::Tanh>{});
      case UnaryOp::Abs: return map_kernel<T>(a, out, formulas::Unary<UnaryOp::Abs>{});
      case UnaryOp::Sign:
        return map_kernel<T>(a, out, formulas::Unary<UnaryOp::Sign>{});
    }
  });
}

void affine(const Tensor& a, double mul, double add, Tensor& out) {
  CHAINER_DISPATCH_FLOATING(out.dtype(), "affine", [&] {
    using T = scalar_t;
    const T m = T(mul), c = T(add);
    map_kernel<T>(a, out, formulas::Affine<T>{m, c});
  });
}

void activation_grad(GradOp op, const Tensor& y, const Tensor& gy, Tensor& out) {
  CHAINER_DISPATCH_FLOATING(out.dtype(), "activation_grad", [&] {
    using T = scalar_t;
    switch (op) {
      case GradOp::Relu: return binary_kernel<T>(y, gy, out, formulas::ActivationGrad<GradOp::Relu>{});
      case GradOp::Sigmoid: return binary_kernel<T>(y, gy, out, formulas::ActivationGrad<GradOp::Sigmoid>{});
      case GradOp::Tanh: return binary_kernel<T>(y, gy, out, formulas::ActivationGrad<GradOp::Tanh>{});
    }
  });
}

void parametric_activation(ParametricOp op, const Tensor& x, double p, Tensor& out) {
  CHAINER_DISPATCH_FLOATING(out.dtype(), "parametric_activation", [&] {
    using T = scalar_t;
    const T c = T(p), inv = T(1 / p);
    switch (op) {
      case ParametricOp::LeakyRelu:
        return map_kernel<T>(x, out, formulas::Parametric<ParametricOp::LeakyRelu, T>{c, inv});
      case ParametricOp::Elu: return map_kernel<T>(x, out, formulas::Parametric<ParametricOp::Elu, T>{c, inv});
      case ParametricOp::Softplus:
        return map_kernel<T>(x, out, formulas::Parametric<ParametricOp::Softplus, T>{c, inv});
    }
  });
}

void parametric_activation_grad(ParametricOp op, const Tensor& x, const Tensor& gy, double p, Tensor& gx) {
  CHAINER_DISPATCH_FLOATING(gx.dtype(), "parametric_activation_grad", [&] {
    using T = scalar_t;
    const T c = T(p);
    switch (op) {
      case ParametricOp::LeakyRelu:
        return binary_kernel<T>(x, gy, gx, formulas::ParametricGrad<ParametricOp::LeakyRelu, T>{c});
      case ParametricOp::Elu: return binary_kernel<T>(x, gy, gx, formulas::ParametricGrad<ParametricOp::Elu, T>{c});
      case ParametricOp::Softplus:
        return binary_kernel<T>(x, gy, gx, formulas::ParametricGrad<ParametricOp::Softplus, T>{c});
    }
  });
}

void axpy(Tensor& y, double alpha, const Tensor& x) {
  CHAINER_DISPATCH_FLOATING(y.dtype(), "axpy", [&] {
    using T = scalar_t;
    Tensor xc = x.contiguous();
    const T* px = xc.data<T>();
    T* py = y.data<T>();
    const T a = T(alpha);
    parallel_for(y.numel(), kGrain, [&](int64_t s, int64_t e) {
      const formulas::Axpy<T> f{a};
      for (int64_t i = s; i < e; ++i) py[i] = f(py[i], px[i]);
    });
  });
}

void compare(CompareOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  CHAINER_DISPATCH_ALL(a.dtype(), "compare", [&] {
    using T = scalar_t;
    switch (op) {
      case CompareOp::Equal: return binary_kernel<T, uint8_t>(a, b, out, formulas::Compare<CompareOp::Equal>{});
      case CompareOp::NotEqual: return binary_kernel<T, uint8_t>(a, b, out, formulas::Compare<CompareOp::NotEqual>{});
      case CompareOp::Less: return binary_kernel<T, uint8_t>(a, b, out, formulas::Compare<CompareOp::Less>{});
      case CompareOp::LessEqual: return binary_kernel<T, uint8_t>(a, b, out, formulas::Compare<CompareOp::LessEqual>{});
      case CompareOp::Greater: return binary_kernel<T, uint8_t>(a, b, out, formulas::Compare<CompareOp::Greater>{});
      case CompareOp::GreaterEqual:
        return binary_kernel<T, uint8_t>(a, b, out, formulas::Compare<CompareOp::GreaterEqual>{});
    }
  });
}

void where(const Tensor& cond, const Tensor& a, const Tensor& b, Tensor& out) {
  CHAINER_DISPATCH_ALL(out.dtype(), "where", [&] {
    using T = scalar_t;
    const uint8_t* pc = cond.data<uint8_t>();
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* po = out.data<T>();
    const Shape& shape = out.shape();
    const int64_t n = out.numel();
    auto dense = [&](const Tensor& t) { return t.shape() == shape && t.is_contiguous(); };
    if (dense(cond) && dense(a) && dense(b)) {
      parallel_for(n, kGrain, [&](int64_t s, int64_t e) {
        for (int64_t i = s; i < e; ++i) po[i] = pc[i] ? pa[i] : pb[i];
      });
      return;
    }
    // The odometer of binary_kernel, over three operands.
    const auto sc = broadcast_strides(cond, shape), sa = broadcast_strides(a, shape), sb = broadcast_strides(b, shape);
    const int64_t nd = out.ndim();
    std::vector<int64_t> idx(size_t(nd), 0);
    int64_t oc = 0, oa = 0, ob = 0;
    for (int64_t k = 0; k < n; ++k) {
      po[k] = pc[oc] ? pa[oa] : pb[ob];
      for (int64_t d = nd - 1; d >= 0; --d) {
        const size_t u = size_t(d);
        if (++idx[u] < shape[u]) {
          oc += sc[u], oa += sa[u], ob += sb[u];
          break;
        }
        oc -= sc[u] * (shape[u] - 1), oa -= sa[u] * (shape[u] - 1), ob -= sb[u] * (shape[u] - 1);
        idx[u] = 0;
      }
    }
  });
}

void clip(const Tensor& a, double lo, double hi, Tensor& out) {
  CHAINER_DISPATCH_FLOATING(out.dtype(), "clip", [&] {
    using T = scalar_t;
    const T l = T(lo), h = T(hi);
    map_kernel<T>(a, out, formulas::Clip<T>{l, h});
  });
}

// The linear layer's epilogue: the bias added to every row, then ReLU when asked.
void add_bias(Tensor& y, const Tensor& b, bool relu) {
  CHAINER_DISPATCH_FLOATING(y.dtype(), "add_bias", [&] {
    using T = scalar_t;
    T* py = y.data<T>();
    const int64_t rows = y.size(0), cols = y.size(1);
    const Tensor bc = b.defined() ? b.contiguous() : Tensor();
    const T* pb = bc.defined() ? bc.data<T>() : nullptr;
    parallel_for(rows, row_grain(cols), [&](int64_t s, int64_t e) {
      for (int64_t r = s; r < e; ++r) {
        T* row = py + r * cols;
        if (pb && relu) {
          for (int64_t j = 0; j < cols; ++j) row[j] = std::max(row[j] + pb[j], T(0));
        } else if (pb) {
          for (int64_t j = 0; j < cols; ++j) row[j] += pb[j];
        } else if (relu) {
          for (int64_t j = 0; j < cols; ++j) row[j] = std::max(row[j], T(0));
        }
      }
    });
  });
}

}  // namespace chainer::cpu::CHAINER_ISA
