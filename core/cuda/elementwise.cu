// Elementwise kernels: every op is one map kernel, out[i] = f(in[i]...) over the row-major
// index i of OUT, instantiated per functor and per way of reading an operand (an accessor).
// Dense and Tiled operands index with one load; only Strided pays for Layout::offset's integer
// divisions, so the shapes of a training step (same-shape operands, a bias row over a batch)
// never take it. Results follow core/cpu/elementwise.cpp formula for formula; in float16 and
// bfloat16 the formulas run on float and each result is rounded once (core/cuda/half.cuh).
#include <algorithm>
#include <type_traits>

#include "core/cuda/common.cuh"
#include "core/cuda/half.cuh"
#include "core/cuda/kernels.h"
#include "core/ops/elementwise_formulas.h"

// The kernels that take every dtype (the memory kernels fill, copy, take_rows and broadcast_to;
// binary, compare and where) take the half types as CUDA's __half and __nv_bfloat16.
#define CHAINER_DISPATCH_MEMORY(DTYPE, OPNAME, ...) CHAINER_DISPATCH_ALL_AND_CUDA_HALF(DTYPE, OPNAME, __VA_ARGS__)

namespace chainer::cuda {

Layout layout_of(const Tensor& t) { return broadcast_layout(t, t.shape()); }

Layout broadcast_layout(const Tensor& t, const Shape& out_shape) {
  if (out_shape.size() > size_t(kMaxDims))
    throw Error(str("CUDA kernels support at most ", kMaxDims, " dimensions, got shape ", shape_str(out_shape)));
  CHAINER_ASSERT(t.ndim() <= int64_t(out_shape.size()), "shape ", shape_str(t.shape()), " has more dimensions than ",
                 shape_str(out_shape));
  Layout l;
  l.nd = int(out_shape.size());
  const int64_t shift = l.nd - t.ndim();
  for (int d = 0; d < l.nd; ++d) {
    l.shape[d] = out_shape[size_t(d)];
    l.strides[d] = d < shift || t.shape()[size_t(d - shift)] == 1 ? 0 : t.strides()[size_t(d - shift)];
  }
  return l;
}

namespace {

// ---- Accessors: element i of an operand in the row-major order of the output ----

template <class T>
struct Dense {
  T* p;
  __device__ T& operator[](int64_t i) const { return p[i]; }
};
// An operand whose broadcast to the output repeats it whole along the leading axes.
template <class T>
struct Tiled {
  T* p;
  int64_t period;
  __device__ T& operator[](int64_t i) const { return p[i % period]; }
};
template <class T>
struct Strided {
  T* p;
  Layout layout;
  __device__ T& operator[](int64_t i) const { return p[layout.offset(i)]; }
};
// Whole rows of a contiguous source picked by ROWS: element i is in output row i / row_elems.
template <class T>
struct RowGather {
  T* p;
  const int64_t* rows;
  int64_t row_elems;
  __device__ T& operator[](int64_t i) const {
    const int64_t r = i / row_elems;
    return p[rows[r] * row_elems + (i - r * row_elems)];
  }
};

bool dense_as(const Tensor& t, const Shape& shape) { return t.is_contiguous() && t.shape() == shape; }

// T's broadcast to SHAPE is T itself repeated: T is contiguous and, past its leading extents
// of 1, has the trailing extents of SHAPE (a bias (C) or (1, C) over (N, C), a scalar).
bool tiles(const Tensor& t, const Shape& shape) {
  if (!t.is_contiguous()) return false;
  const auto first = std::find_if(t.shape().begin(), t.shape().end(), [](int64_t e) { return e != 1; });
  const size_t k = size_t(t.shape().end() - first);
  return k <= shape.size() && std::equal(first, t.shape().end(), shape.end() - int64_t(k));
}

// ---- The one kernel ----

// In-place use (out and an input the same memory) is safe: each element is read and then
// written by the same thread at the same index.
template <class F, class Out, class... In>
__global__ void map_kernel(int64_t n, F f, Out out, In... in) {
  CHAINER_GRID_STRIDE_LOOP(i, n) out[i] = f(in[i]...);
}

template <class F, class Out, class... In>
void launch_map(int64_t n, F f, Out out, In... in) {
  if (n == 0) return;  // a grid of 0 blocks is a launch error
  map_kernel<F, Out, In...><<<blocks_for(n), kThreads, 0, compute_stream()>>>(n, f, out, in...);
  CHAINER_CUDA_CHECK_LAUNCH(map_kernel);
}

// F on half operands: each operand loaded as a float, F computed in float, its result rounded
// once to O. The CPU's half kernels compute the same way (core/cpu/elementwise.cpp).
template <class O, class F>
struct InCompute {
  F f;
  template <class... A>
  __device__ O operator()(A... a) const {
    return convert<O>(f(load(a)...));
  }
};
// F as the map kernel calls it for operands of T and an output of O: InCompute for the half
// types, F itself for the others.
template <class T, class O, class F>
auto computing(F f) {
  if constexpr (is_16bit<T> || is_16bit<O>) return InCompute<O, F>{f};
  else return f;
}

// OUT (contiguous, of element type O) = F(A, B) with A and B broadcast to OUT's shape; F computes
// in compute_t<T>.
template <class T, class O = T, class F>
void map2(F formula, const Tensor& a, const Tensor& b, Tensor& out) {
  const auto f = computing<T, O>(formula);
  const Shape& shape = out.shape();
  const Dense<O> o{elements<O>(out)};
  const T* pa = elements<T>(a);
  const T* pb = elements<T>(b);
  const int64_t n = out.numel();
  if (dense_as(a, shape) && dense_as(b, shape)) return launch_map(n, f, o, Dense<const T>{pa}, Dense<const T>{pb});
  if (dense_as(a, shape) && tiles(b, shape))
    return launch_map(n, f, o, Dense<const T>{pa}, Tiled<const T>{pb, b.numel()});
  launch_map(n, f, o, Strided<const T>{pa, broadcast_layout(a, shape)}, Strided<const T>{pb, broadcast_layout(b, shape)});
}

// OUT (contiguous) = F(A), A of OUT's shape; F computes in compute_t<T>.
template <class T, class F>
void map1(F formula, const Tensor& a, Tensor& out) {
  const auto f = computing<T, T>(formula);
  const Dense<T> o{elements<T>(out)};
  if (a.is_contiguous()) return launch_map(out.numel(), f, o, Dense<const T>{elements<T>(a)});
  launch_map(out.numel(), f, o, Strided<const T>{elements<T>(a), layout_of(a)});
}

// ---- Functors ----

template <class T>
struct Constant {
  T value;
  __device__ T operator()() const { return value; }
};

template <class D>
struct Convert {
  template <class S>
  __device__ D operator()(S x) const { return convert<D>(x); }
};

// FILL's VALUE as a T, on the host: the 16-bit types from core/tensor/float16.h's conversions (the same
// rounding as CUDA's), passed to the kernel as their bits.
template <class T>
T host_value(double value) {
  if constexpr (std::is_same_v<T, __half>) return __half(__half_raw{chainer::float16(value).bits});
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __nv_bfloat16(__nv_bfloat16_raw{chainer::bfloat16(value).bits});
  else return T(value);
}

struct Select {
  template <class T>
  __device__ T operator()(uint8_t c, T x, T y) const { return c ? x : y; }
};

struct AddAsDouble {
  template <class T>
  __device__ double operator()(double acc, T v) const { return acc + double(load(v)); }
};

// The linear layer's epilogue: the bias added to every row, then ReLU when asked (in float for
// the half types, rounded once).
template <class T>
__global__ void add_bias_kernel(T* y, const T* b, int64_t n, int64_t cols, bool relu) {
  using C = compute_t<T>;
  CHAINER_GRID_STRIDE_LOOP(i, n) {
    C v = load(y[i]);
    if (b) v += load(b[i % cols]);
    if (relu && v < C(0)) v = C(0);  // std::max(v, 0) as the CPU: NaN stays NaN
    y[i] = convert<T>(v);
  }
}

}  // namespace

// ---- Memory ----

void fill(Tensor& out, double value) {
  CHAINER_DISPATCH_MEMORY(out.dtype(), "fill", [&] {
    using T = scalar_t;
    const Constant<T> f{host_value<T>(value)};
    // A non-contiguous OUT is a view: only its own elements may be written.
    if (out.is_contiguous()) return launch_map(out.numel(), f, Dense<T>{elements<T>(out)});
    launch_map(out.numel(), f, Strided<T>{elements<T>(out), layout_of(out)});
  });
}

void copy(const Tensor& src, Tensor& dst) {
  if (dst.numel() == 0) return;
  if (src.dtype() == dst.dtype() && src.is_contiguous() && dst.is_contiguous()) {
    if (src.raw_data() != dst.raw_data())
      CHAINER_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), dst.nbytes(), cudaMemcpyDeviceToDevice,
                                         compute_stream()));
    return;
  }
  CHAINER_DISPATCH_MEMORY(dst.dtype(), "copy", [&] {
    using D = scalar_t;
    D* d = elements<D>(dst);
    CHAINER_DISPATCH_MEMORY(src.dtype(), "copy", [&] {
      using S = scalar_t;
      const S* s = elements<S>(src);
      const int64_t n = dst.numel();
      if (!dst.is_contiguous())
        return launch_map(n, Convert<D>{}, Strided<D>{d, layout_of(dst)}, Strided<const S>{s, layout_of(src)});
      if (src.is_contiguous()) return launch_map(n, Convert<D>{}, Dense<D>{d}, Dense<const S>{s});
      launch_map(n, Convert<D>{}, Dense<D>{d}, Strided<const S>{s, layout_of(src)});
    });
  });
}

void take_rows(const Tensor& src, const std::vector<int64_t>& rows, Tensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const Tensor s = src.contiguous();
  const int64_t row_elems = n / int64_t(rows.size());
  // Freed after the launch below, which is queued before any later use of the block.
  const std::shared_ptr<void> device_rows = upload(rows.data(), rows.size() * sizeof(int64_t));
  CHAINER_DISPATCH_MEMORY(out.dtype(), "take_rows", [&] {
    using T = scalar_t;
    launch_map(n, Convert<T>{}, Dense<T>{elements<T>(out)},
               RowGather<const T>{elements<T>(s), static_cast<const int64_t*>(device_rows.get()), row_elems});
  });
}

// ---- Elementwise ----

void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  CHAINER_DISPATCH_MEMORY(out.dtype(), "binary", [&] {
    using T = scalar_t;
    switch (op) {
      case BinaryOp::Add: return map2<T>(formulas::Binary<BinaryOp::Add>{}, a, b, out);
      case BinaryOp::Sub: return map2<T>(formulas::Binary<BinaryOp::Sub>{}, a, b, out);
      case BinaryOp::Mul: return map2<T>(formulas::Binary<BinaryOp::Mul>{}, a, b, out);
      case BinaryOp::Div: return map2<T>(formulas::Binary<BinaryOp::Div>{}, a, b, out);
      case BinaryOp::Maximum: return map2<T>(formulas::Binary<BinaryOp::Maximum>{}, a, b, out);
      case BinaryOp::Minimum: return map2<T>(formulas::Binary<BinaryOp::Minimum>{}, a, b, out);
    }
  });
}

void unary(UnaryOp op, const Tensor& a, Tensor& out) {
  CHAINER_DISPATCH_FLOATING_AND_CUDA_HALF(out.dtype(), "unary", [&] {
    using T = scalar_t;
    switch (op) {
      case UnaryOp::Neg: return map1<T>(formulas::Unary<UnaryOp::Neg>{}, a, out);
      case UnaryOp::Exp: return map1<T>(formulas::Unary<UnaryOp::Exp>{}, a, out);
      case UnaryOp::Log: return map1<T>(formulas::Unary<UnaryOp::Log>{}, a, out);
      case UnaryOp::Sqrt: return map1<T>(formulas::Unary<UnaryOp::Sqrt>{}, a, out);
      case UnaryOp::Square: return map1<T>(formulas::Unary<UnaryOp::Square>{}, a, out);
      case UnaryOp::Relu: return map1<T>(formulas::Unary<UnaryOp::Relu>{}, a, out);
      case UnaryOp::Sigmoid: return map1<T>(formulas::Unary<UnaryOp::Sigmoid>{}, a, out);
      case UnaryOp::Tanh: return map1<T>(formulas::Unary<UnaryOp::Tanh>{}, a, out);
      case UnaryOp::Abs: return map1<T>(formulas::Unary<UnaryOp::Abs>{}, a, out);
      case UnaryOp::Sign: return map1<T>(formulas::Unary<UnaryOp::Sign>{}, a, out);
    }
  });
}

void broadcast_copy(const Tensor& a, Tensor& out) {
  CHAINER_DISPATCH_MEMORY(out.dtype(), "broadcast_to", [&] {
    using T = scalar_t;
    const Dense<T> o{elements<T>(out)};
    if (tiles(a, out.shape()))
      return launch_map(out.numel(), Convert<T>{}, o, Tiled<const T>{elements<T>(a), a.numel()});
    launch_map(out.numel(), Convert<T>{}, o, Strided<const T>{elements<T>(a), broadcast_layout(a, out.shape())});
  });
}

void affine(const Tensor& a, double mul, double add, Tensor& out) {
  CHAINER_DISPATCH_FLOATING_AND_CUDA_HALF(out.dtype(), "affine", [&] {
    using T = scalar_t;
    using C = compute_t<T>;
    map1<T>(formulas::Affine<C>{C(mul), C(add)}, a, out);
  });
}

void activation_grad(GradOp op, const Tensor& y, const Tensor& gy, Tensor& out) {
  CHAINER_DISPATCH_FLOATING_AND_CUDA_HALF(out.dtype(), "activation_grad", [&] {
    using T = scalar_t;
    switch (op) {
      case GradOp::Relu: return map2<T>(formulas::ActivationGrad<GradOp::Relu>{}, y, gy, out);
      case GradOp::Sigmoid: return map2<T>(formulas::ActivationGrad<GradOp::Sigmoid>{}, y, gy, out);
      case GradOp::Tanh: return map2<T>(formulas::ActivationGrad<GradOp::Tanh>{}, y, gy, out);
    }
  });
}

void parametric_activation(ParametricOp op, const Tensor& x, double p, Tensor& out) {
  CHAINER_DISPATCH_FLOATING_AND_CUDA_HALF(out.dtype(), "parametric_activation", [&] {
    using T = scalar_t;
    using C = compute_t<T>;
    const C c = C(p), inv = C(1 / p);
    switch (op) {
      case ParametricOp::LeakyRelu:
        return map1<T>(formulas::Parametric<ParametricOp::LeakyRelu, C>{c, inv}, x, out);
      case ParametricOp::Elu: return map1<T>(formulas::Parametric<ParametricOp::Elu, C>{c, inv}, x, out);
      case ParametricOp::Softplus: return map1<T>(formulas::Parametric<ParametricOp::Softplus, C>{c, inv}, x, out);
    }
  });
}

void parametric_activation_grad(ParametricOp op, const Tensor& x, const Tensor& gy, double p, Tensor& gx) {
  CHAINER_DISPATCH_FLOATING_AND_CUDA_HALF(gx.dtype(), "parametric_activation_grad", [&] {
    using T = scalar_t;
    using C = compute_t<T>;
    switch (op) {
      case ParametricOp::LeakyRelu:
        return map2<T>(formulas::ParametricGrad<ParametricOp::LeakyRelu, C>{C(p)}, x, gy, gx);
      case ParametricOp::Elu: return map2<T>(formulas::ParametricGrad<ParametricOp::Elu, C>{C(p)}, x, gy, gx);
      case ParametricOp::Softplus: return map2<T>(formulas::ParametricGrad<ParametricOp::Softplus, C>{C(p)}, x, gy, gx);
    }
  });
}

void axpy(Tensor& y, double alpha, const Tensor& x) {
  CHAINER_DISPATCH_FLOATING_AND_CUDA_HALF(y.dtype(), "axpy", [&] {
    using T = scalar_t;
    using C = compute_t<T>;
    const Dense<T> py{elements<T>(y)};
    const auto f = computing<T, T>(formulas::Axpy<C>{C(alpha)});
    if (x.is_contiguous()) return launch_map(y.numel(), f, py, py, Dense<const T>{elements<T>(x)});
    launch_map(y.numel(), f, py, py, Strided<const T>{elements<T>(x), layout_of(x)});
  });
}

void accumulate(Tensor& acc, const Tensor& value) {
  CHAINER_DISPATCH_FLOATING_AND_CUDA_HALF(value.dtype(), "accumulate", [&] {
    using T = scalar_t;
    const Dense<double> a{acc.data<double>()};
    launch_map(1, AddAsDouble{}, a, a, Dense<const T>{elements<T>(value)});
  });
}

void compare(CompareOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  CHAINER_DISPATCH_MEMORY(a.dtype(), "compare", [&] {
    using T = scalar_t;
    switch (op) {
      case CompareOp::Equal: return map2<T, uint8_t>(formulas::Compare<CompareOp::Equal>{}, a, b, out);
      case CompareOp::NotEqual: return map2<T, uint8_t>(formulas::Compare<CompareOp::NotEqual>{}, a, b, out);
      case CompareOp::Less: return map2<T, uint8_t>(formulas::Compare<CompareOp::Less>{}, a, b, out);
      case CompareOp::LessEqual: return map2<T, uint8_t>(formulas::Compare<CompareOp::LessEqual>{}, a, b, out);
      case CompareOp::Greater: return map2<T, uint8_t>(formulas::Compare<CompareOp::Greater>{}, a, b, out);
      case CompareOp::GreaterEqual: return map2<T, uint8_t>(formulas::Compare<CompareOp::GreaterEqual>{}, a, b, out);
    }
  });
}

void where(const Tensor& cond, const Tensor& a, const Tensor& b, Tensor& out) {
  CHAINER_DISPATCH_MEMORY(out.dtype(), "where", [&] {
    using T = scalar_t;
    const Shape& shape = out.shape();
    const Dense<T> o{elements<T>(out)};
    const uint8_t* pc = cond.data<uint8_t>();
    const T* pa = elements<T>(a);
    const T* pb = elements<T>(b);
    if (dense_as(cond, shape) && dense_as(a, shape) && dense_as(b, shape))
      return launch_map(out.numel(), Select{}, o, Dense<const uint8_t>{pc}, Dense<const T>{pa}, Dense<const T>{pb});
    launch_map(out.numel(), Select{}, o, Strided<const uint8_t>{pc, broadcast_layout(cond, shape)},
               Strided<const T>{pa, broadcast_layout(a, shape)}, Strided<const T>{pb, broadcast_layout(b, shape)});
  });
}

void clip(const Tensor& a, double lo, double hi, Tensor& out) {
  CHAINER_DISPATCH_FLOATING_AND_CUDA_HALF(out.dtype(), "clip", [&] {
    using T = scalar_t;
    using C = compute_t<T>;
    map1<T>(formulas::Clip<C>{C(lo), C(hi)}, a, out);
  });
}

void add_bias(Tensor& y, const Tensor& b, bool relu) {
  const int64_t n = y.numel();
  if (n == 0 || (!b.defined() && !relu)) return;
  const Tensor bc = b.defined() ? b.contiguous() : Tensor();
  CHAINER_DISPATCH_FLOATING_AND_CUDA_HALF(y.dtype(), "add_bias", [&] {
    using T = scalar_t;
    add_bias_kernel<T><<<blocks_for(n), kThreads, 0, compute_stream()>>>(
        elements<T>(y), bc.defined() ? elements<T>(bc) : nullptr, n, y.size(1), relu);
    CHAINER_CUDA_CHECK_LAUNCH(add_bias_kernel);
  });
}

}  // namespace chainer::cuda
