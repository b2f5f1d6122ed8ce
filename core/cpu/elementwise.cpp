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

// D[i] = S[i] for N elements; between float32 and a 16-bit type by this family's vector loops
// (convert.cpp).
template <class D, class S>
void convert_dense(const S* s, D* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = D(s[i]);
}
void convert_dense(const float* s, float16* d, int64_t n) { narrow_half(s, d, n); }
void convert_dense(const float* s, bfloat16* d, int64_t n) { narrow_half(s, d, n); }
void convert_dense(const float16* s, float* d, int64_t n) { widen_half(s, d, n); }
void convert_dense(const bfloat16* s, float* d, int64_t n) { widen_half(s, d, n); }

// Half elements are computed in chunks: a chunk of each operand widened to float32 in a buffer on
// the stack, the float32 loop of the formula, the results narrowed back. So a half kernel reads
// and writes half (no float32 tensor is made) and keeps the vectorized loop of float32.
constexpr int64_t kChunk = 256;

// The N elements of T at P as compute_t<T>: P itself, or BUFFER holding them widened.
template <class T>
const compute_t<T>* load_chunk(const T* p, int64_t n, compute_t<T>* buffer) {
  if constexpr (is_16bit<T>) {
    convert_dense(p, buffer, n);
    return buffer;
  } else {
    return p;
  }
}

// OUT[i] = F(A[i], B[i]) for I in [S, E): dense operands of T, OUT of O; F on compute_t<T>.
template <class T, class O, class F>
void dense_binary(const T* pa, const T* pb, O* po, int64_t s, int64_t e, const F& f) {
  const F fn = f;  // a local copy: a parameter of F read through a reference might alias PO
  if constexpr (!is_16bit<T> && !is_16bit<O>) {
    for (int64_t i = s; i < e; ++i) po[i] = fn(pa[i], pb[i]);  // and would keep the loop scalar
  } else {
    using C = compute_t<T>;
    using R = compute_t<O>;
    alignas(64) C ba[kChunk], bb[kChunk];
    alignas(64) R br[kChunk];
    for (int64_t c0 = s; c0 < e; c0 += kChunk) {
      const int64_t len = std::min(kChunk, e - c0);
      const C* xa = load_chunk(pa + c0, len, ba);
      const C* xb = load_chunk(pb + c0, len, bb);
      R* r = is_16bit<O> ? br : reinterpret_cast<R*>(po + c0);
      for (int64_t i = 0; i < len; ++i) r[i] = fn(xa[i], xb[i]);
      if constexpr (is_16bit<O>) convert_dense(br, po + c0, len);
    }
  }
}

// OUT[i] = F(A[i]) for I in [S, E): A dense, of T, OUT of O; F on compute_t<T>; as dense_binary.
template <class T, class O, class F>
void dense_unary(const T* pa, O* po, int64_t s, int64_t e, const F& f) {
  const F fn = f;  // as in dense_binary: a local copy lets the loop vectorize
  if constexpr (!is_16bit<T> && !is_16bit<O>) {
    for (int64_t i = s; i < e; ++i) po[i] = fn(pa[i]);
  } else {
    using C = compute_t<T>;
    using R = compute_t<O>;
    alignas(64) C ba[kChunk];
    alignas(64) R br[kChunk];
    for (int64_t c0 = s; c0 < e; c0 += kChunk) {
      const int64_t len = std::min(kChunk, e - c0);
      const C* xa = load_chunk(pa + c0, len, ba);
      R* r = is_16bit<O> ? br : reinterpret_cast<R*>(po + c0);
      for (int64_t i = 0; i < len; ++i) r[i] = fn(xa[i]);
      if constexpr (is_16bit<O>) convert_dense(br, po + c0, len);
    }
  }
}

// Strides of A seen through the broadcast to OUT's shape (0 on broadcast axes).
std::vector<int64_t> broadcast_strides(const Tensor& a, const Shape& out) {
  const int64_t nd = int64_t(out.size()), shift = nd - a.ndim();
  std::vector<int64_t> s(size_t(nd), 0);
  for (int64_t d = 0; d < a.ndim(); ++d) s[size_t(d + shift)] = a.shape()[size_t(d)] == 1 ? 0 : a.strides()[size_t(d)];
  return s;
}

// OUT (of element type O) = F(A, B) with A and B (of T) broadcast to OUT's shape; F computes in
// compute_t<T> (float for the half types).
template <class T, class O = T, class F>
void binary_kernel(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  using C = compute_t<T>;
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  O* po = out.data<O>();
  const int64_t n = out.numel();
  if (a.shape() == out.shape() && b.shape() == out.shape() && a.is_contiguous() && b.is_contiguous()) {
    parallel_for(n, kGrain, [&](int64_t s, int64_t e) { dense_binary(pa, pb, po, s, e, f); });
    return;
  }
  // B one value (a 0-d scalar: x / scale, x * 2): one pass at the dense rate, where the row
  // broadcast below would run rows of one element.
  if (a.shape() == out.shape() && a.is_contiguous() && b.numel() == 1) {
    const C bv = C(b.contiguous().data<T>()[0]);
    const auto with_b = [f, bv](C x) { return f(x, bv); };
    parallel_for(n, kGrain, [&](int64_t s, int64_t e) { dense_unary(pa, po, s, e, with_b); });
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
      for (int64_t r = s; r < e; ++r) dense_binary(pa + r * m, pb, po + r * m, 0, m, f);
    });
    return;
  }
  auto sa = broadcast_strides(a, out.shape()), sb = broadcast_strides(b, out.shape());
  const Shape& shape = out.shape();
  const int64_t nd = out.ndim();
  std::vector<int64_t> idx(size_t(nd), 0);
  int64_t oa = 0, ob = 0;
  for (int64_t k = 0; k < n; ++k) {
    po[k] = O(f(C(pa[oa]), C(pb[ob])));
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

// OUT = F(A) elementwise, F on compute_t<T>.
template <class T, class F>
void map_kernel(const Tensor& a, Tensor& out, F f) {
  Tensor ac = a.contiguous();
  const T* pa = ac.data<T>();
  T* po = out.data<T>();
  parallel_for(out.numel(), kGrain, [&](int64_t s, int64_t e) { dense_unary(pa, po, s, e, f); });
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
  CHAINER_DISPATCH_ALL_AND_16BIT(out.dtype(), "binary", [&] {
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
  CHAINER_DISPATCH_ALL_AND_16BIT(out.dtype(), "broadcast_to", [&] {
    using T = scalar_t;
    const T* pa = a.data<T>();
    T* po = out.data<T>();
    int64_t k = 0;
    for_each_offset(out.shape(), broadcast_strides(a, out.shape()), [&](int64_t o) { po[k++] = pa[o]; });
  });
}

void unary(UnaryOp op, const Tensor& a, Tensor& out) {
  CHAINER_DISPATCH_FLOATING_AND_HALF(out.dtype(), "unary", [&] {
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
  CHAINER_DISPATCH_FLOATING_AND_HALF(out.dtype(), "affine", [&] {
    using T = scalar_t;
    using C = compute_t<T>;
    map_kernel<T>(a, out, formulas::Affine<C>{C(mul), C(add)});
  });
}

void activation_grad(GradOp op, const Tensor& y, const Tensor& gy, Tensor& out) {
  CHAINER_DISPATCH_FLOATING_AND_HALF(out.dtype(), "activation_grad", [&] {
    using T = scalar_t;
    switch (op) {
      case GradOp::Relu: return binary_kernel<T>(y, gy, out, formulas::ActivationGrad<GradOp::Relu>{});
      case GradOp::Sigmoid: return binary_kernel<T>(y, gy, out, formulas::ActivationGrad<GradOp::Sigmoid>{});
      case GradOp::Tanh: return binary_kernel<T>(y, gy, out, formulas::ActivationGrad<GradOp::Tanh>{});
    }
  });
}

void parametric_activation(ParametricOp op, const Tensor& x, double p, Tensor& out) {
  CHAINER_DISPATCH_FLOATING_AND_HALF(out.dtype(), "parametric_activation", [&] {
    using T = scalar_t;
    using C = compute_t<T>;
    const C c = C(p), inv = C(1 / p);
    switch (op) {
      case ParametricOp::LeakyRelu:
        return map_kernel<T>(x, out, formulas::Parametric<ParametricOp::LeakyRelu, C>{c, inv});
      case ParametricOp::Elu: return map_kernel<T>(x, out, formulas::Parametric<ParametricOp::Elu, C>{c, inv});
      case ParametricOp::Softplus:
        return map_kernel<T>(x, out, formulas::Parametric<ParametricOp::Softplus, C>{c, inv});
    }
  });
}

void parametric_activation_grad(ParametricOp op, const Tensor& x, const Tensor& gy, double p, Tensor& gx) {
  CHAINER_DISPATCH_FLOATING_AND_HALF(gx.dtype(), "parametric_activation_grad", [&] {
    using T = scalar_t;
    using C = compute_t<T>;
    const C c = C(p);
    switch (op) {
      case ParametricOp::LeakyRelu:
        return binary_kernel<T>(x, gy, gx, formulas::ParametricGrad<ParametricOp::LeakyRelu, C>{c});
      case ParametricOp::Elu: return binary_kernel<T>(x, gy, gx, formulas::ParametricGrad<ParametricOp::Elu, C>{c});
      case ParametricOp::Softplus:
        return binary_kernel<T>(x, gy, gx, formulas::ParametricGrad<ParametricOp::Softplus, C>{c});
    }
  });
}

void axpy(Tensor& y, double alpha, const Tensor& x) {
  CHAINER_DISPATCH_FLOATING_AND_HALF(y.dtype(), "axpy", [&] {
    using T = scalar_t;
    using C = compute_t<T>;
    Tensor xc = x.contiguous();
    const T* px = xc.data<T>();
    T* py = y.data<T>();
    const formulas::Axpy<C> f{C(alpha)};
    parallel_for(y.numel(), kGrain, [&](int64_t s, int64_t e) { dense_binary(py, px, py, s, e, f); });
  });
}

void compare(CompareOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  CHAINER_DISPATCH_ALL_AND_16BIT(a.dtype(), "compare", [&] {
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
  CHAINER_DISPATCH_ALL_AND_16BIT(out.dtype(), "where", [&] {
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
  CHAINER_DISPATCH_FLOATING_AND_HALF(out.dtype(), "clip", [&] {
    using T = scalar_t;
    using C = compute_t<T>;
    map_kernel<T>(a, out, formulas::Clip<C>{C(lo), C(hi)});
  });
}

namespace {
// ROW (LEN elements, at column J0 of the output) += the bias PB (null: none), then ReLU.
template <class C>
void bias_epilogue(C* row, const C* pb, bool relu, int64_t j0, int64_t len) {
  if (pb && relu) {
    for (int64_t j = 0; j < len; ++j) row[j] = std::max(row[j] + pb[j0 + j], C(0));
  } else if (pb) {
    for (int64_t j = 0; j < len; ++j) row[j] += pb[j0 + j];
  } else if (relu) {
    for (int64_t j = 0; j < len; ++j) row[j] = std::max(row[j], C(0));
  }
}

template <class T>
void add_bias_rows(Tensor& y, const Tensor& b, bool relu) {
  using C = compute_t<T>;
  T* py = y.data<T>();
  const int64_t rows = y.size(0), cols = y.size(1);
  const Tensor bc = b.defined() ? b.contiguous() : Tensor();
  std::vector<C> bias;  // the half types' bias, widened once
  const C* pb = nullptr;
  if (bc.defined()) {
    if constexpr (is_16bit<T>) {
      bias.resize(size_t(cols));
      convert_dense(bc.data<T>(), bias.data(), cols);
      pb = bias.data();
    } else {
      pb = bc.data<T>();
    }
  }
  parallel_for(rows, row_grain(cols), [&](int64_t s, int64_t e) {
    for (int64_t r = s; r < e; ++r) {
      T* row = py + r * cols;
      if constexpr (is_16bit<T>) {
        alignas(64) float buffer[kChunk];
        for (int64_t j0 = 0; j0 < cols; j0 += kChunk) {
          const int64_t len = std::min(kChunk, cols - j0);
          convert_dense(row + j0, buffer, len);
          bias_epilogue(buffer, pb, relu, j0, len);
          convert_dense(buffer, row + j0, len);
        }
      } else {
        bias_epilogue(row, pb, relu, 0, cols);
      }
    }
  });
}
}  // namespace

// The linear layer's epilogue: the bias added to every row, then ReLU when asked.
void add_bias(Tensor& y, const Tensor& b, bool relu) {
  CHAINER_DISPATCH_FLOATING_AND_HALF(y.dtype(), "add_bias", [&] { add_bias_rows<scalar_t>(y, b, relu); });
}

}  // namespace chainer::cpu::CHAINER_ISA
