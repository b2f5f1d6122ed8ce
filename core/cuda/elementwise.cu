// Elementwise kernels: every op is one map kernel, out[i] = f(in[i]...) over the row-major
// index i of OUT, instantiated per functor and per way of reading an operand (an accessor).
// Dense and Tiled operands index with one load; only Strided pays for Layout::offset's integer
// divisions, so the shapes of a training step (same-shape operands, a bias row over a batch)
// never take it. Results follow core/cpu/elementwise.cpp formula for formula.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <type_traits>

#include "core/cuda/common.cuh"
#include "core/cuda/kernels.h"
#include "core/ops/elementwise_formulas.h"

// The memory kernels (fill, copy, take_rows) also take the storage types float16 and bfloat16
// (core/tensor/dtype.h), as CUDA's __half and __nv_bfloat16, converted by CUDA's round-to-nearest-even
// intrinsics: the same results as the host conversions of core/tensor/float16.h.
#define CHAINER_DISPATCH_MEMORY(DTYPE, OPNAME, ...) \
  CHAINER_DISPATCH_ALL_AND(DTYPE, OPNAME, __half, __nv_bfloat16, __VA_ARGS__)

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

// OUT (contiguous, of element type O) = F(A, B) with A and B broadcast to OUT's shape.
template <class T, class O = T, class F>
void map2(F f, const Tensor& a, const Tensor& b, Tensor& out) {
  const Shape& shape = out.shape();
  const Dense<O> o{out.data<O>()};
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  const int64_t n = out.numel();
  if (dense_as(a, shape) && dense_as(b, shape)) return launch_map(n, f, o, Dense<const T>{pa}, Dense<const T>{pb});
  if (dense_as(a, shape) && tiles(b, shape))
    return launch_map(n, f, o, Dense<const T>{pa}, Tiled<const T>{pb, b.numel()});
  launch_map(n, f, o, Strided<const T>{pa, broadcast_layout(a, shape)}, Strided<const T>{pb, broadcast_layout(b, shape)});
}

// OUT (contiguous) = F(A), A of OUT's shape.
template <class T, class F>
void map1(F f, const Tensor& a, Tensor& out) {
  const Dense<T> o{out.data<T>()};
  if (a.is_contiguous()) return launch_map(out.numel(), f, o, Dense<const T>{a.data<T>()});
  launch_map(out.numel(), f, o, Strided<const T>{a.data<T>(), layout_of(a)});
}

// ---- Functors ----

template <class T>
struct Constant {
  T value;
  __device__ T operator()() const { return value; }
};

template <class T>
constexpr bool is_16bit = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

__device__ inline float widen(__half x) { return __half2float(x); }
__device__ inline float widen(__nv_bfloat16 x) { return __bfloat162float(x); }

// X as a D. The 16-bit types go through float (exact) or come from float or double, rounded
// once; any other pair is the plain C++ conversion, as it always was.
template <class D, class S>
__device__ D convert(S x) {
  if constexpr (std::is_same_v<D, S>) return x;
  else if constexpr (is_16bit<S>) return convert<D>(widen(x));
  else if constexpr (std::is_same_v<D, __half>) {
    if constexpr (std::is_same_v<S, float>) return __float2half_rn(x);
    else return __double2half(double(x));
  } else if constexpr (std::is_same_v<D, __nv_bfloat16>) {
    if constexpr (std::is_same_v<S, float>) return __float2bfloat16_rn(x);
    else return __double2bfloat16(double(x));
  } else {
    return D(x);
  }
}

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

// T's elements of a tensor of the matching dtype (Tensor::data has no CUDA types).
template <class T>
T* elements(Tensor& t) {
  return static_cast<T*>(t.raw_data());
}
template <class T>
const T* elements(const Tensor& t) {
  return static_cast<const T*>(t.raw_data());
}

struct Select {
  template <class T>
  __device__ T operator()(uint8_t c, T x, T y) const { return c ? x : y; }
};

struct AddAsDouble {
  template <class T>
  __device__ double operator()(double acc, T v) const { return acc + double(v); }
};

// The linear layer's epilogue: the bias added to every row, then ReLU when asked.

template <class T>
__global__ void add_bias_kernel(T* y, const T* b, int64_t n, int64_t cols, bool relu) {
  CHAINER_GRID_STRIDE_LOOP(i, n) {
    T v = y[i];
    if (b) v += b[i % cols];
    if (relu && v < T(0)) v = T(0);  // std::max(v, 0) as the CPU: NaN stays NaN
    y[i] = v;
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
  CHAINER_DISPATCH_ALL(out.dtype(), "binary", [&] {
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
  CHAINER_DISPATCH_FLOATING(out.dtype(), "unary", [&] {
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
  CHAINER_DISPATCH_ALL(out.dtype(), "broadcast_to", [&] {
    using T = scalar_t;
    const Dense<T> o{out.data<T>()};
    if (tiles(a, out.shape())) return launch_map(out.numel(), Convert<T>{}, o, Tiled<const T>{a.data<T>(), a.numel()});
    launch_map(out.numel(), Convert<T>{}, o, Strided<const T>{a.data<T>(), broadcast_layout(a, out.shape())});
  });
}

void affine(const Tensor& a, double mul, double add, Tensor& out) {
  CHAINER_DISPATCH_FLOATING(out.dtype(), "affine", [&] {
    using T = scalar_t;
    map1<T>(formulas::Affine<T>{T(mul), T(add)}, a, out);
  });
}

void activation_grad(GradOp op, const Tensor& y, const Tensor& gy, Tensor& out) {
  CHAINER_DISPATCH_FLOATING(out.dtype(), "activation_grad", [&] {
    using T = scalar_t;
    switch (op) {
      case GradOp::Relu: return map2<T>(formulas::ActivationGrad<GradOp::Relu>{}, y, gy, out);
      case GradOp::Sigmoid: return map2<T>(formulas::ActivationGrad<GradOp::Sigmoid>{}, y, gy, out);
      case GradOp::Tanh: return map2<T>(formulas::ActivationGrad<GradOp::Tanh>{}, y, gy, out);
    }
  });
}

void parametric_activation(ParametricOp op, const Tensor& x, double p, Tensor& out) {
  CHAINER_DISPATCH_FLOATING(out.dtype(), "parametric_activation", [&] {
    using T = scalar_t;
    switch (op) {
      case ParametricOp::LeakyRelu:
        return map1<T>(formulas::Parametric<ParametricOp::LeakyRelu, T>{T(p), T(1 / p)}, x, out);
      case ParametricOp::Elu: return map1<T>(formulas::Parametric<ParametricOp::Elu, T>{T(p), T(1 / p)}, x, out);
      case ParametricOp::Softplus:
        return map1<T>(formulas::Parametric<ParametricOp::Softplus, T>{T(p), T(1 / p)}, x, out);
    }
  });
}

void parametric_activation_grad(ParametricOp op, const Tensor& x, const Tensor& gy, double p, Tensor& gx) {
  CHAINER_DISPATCH_FLOATING(gx.dtype(), "parametric_activation_grad", [&] {
    using T = scalar_t;
    switch (op) {
      case ParametricOp::LeakyRelu:
        return map2<T>(formulas::ParametricGrad<ParametricOp::LeakyRelu, T>{T(p)}, x, gy, gx);
      case ParametricOp::Elu: return map2<T>(formulas::ParametricGrad<ParametricOp::Elu, T>{T(p)}, x, gy, gx);
      case ParametricOp::Softplus: return map2<T>(formulas::ParametricGrad<ParametricOp::Softplus, T>{T(p)}, x, gy, gx);
    }
  });
}

void axpy(Tensor& y, double alpha, const Tensor& x) {
  CHAINER_DISPATCH_FLOATING(y.dtype(), "axpy", [&] {
    using T = scalar_t;
    const Dense<T> py{y.data<T>()};
    const formulas::Axpy<T> f{T(alpha)};
    if (x.is_contiguous()) return launch_map(y.numel(), f, py, py, Dense<const T>{x.data<T>()});
    launch_map(y.numel(), f, py, py, Strided<const T>{x.data<T>(), layout_of(x)});
  });
}

void accumulate(Tensor& acc, const Tensor& value) {
  CHAINER_DISPATCH_FLOATING(value.dtype(), "accumulate", [&] {
    using T = scalar_t;
    const Dense<double> a{acc.data<double>()};
    launch_map(1, AddAsDouble{}, a, a, Dense<const T>{value.data<T>()});
  });
}

void compare(CompareOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  CHAINER_DISPATCH_ALL(a.dtype(), "compare", [&] {
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
  CHAINER_DISPATCH_ALL(out.dtype(), "where", [&] {
    using T = scalar_t;
    const Shape& shape = out.shape();
    const Dense<T> o{out.data<T>()};
    const uint8_t* pc = cond.data<uint8_t>();
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    if (dense_as(cond, shape) && dense_as(a, shape) && dense_as(b, shape))
      return launch_map(out.numel(), Select{}, o, Dense<const uint8_t>{pc}, Dense<const T>{pa}, Dense<const T>{pb});
    launch_map(out.numel(), Select{}, o, Strided<const uint8_t>{pc, broadcast_layout(cond, shape)},
               Strided<const T>{pa, broadcast_layout(a, shape)}, Strided<const T>{pb, broadcast_layout(b, shape)});
  });
}

void clip(const Tensor& a, double lo, double hi, Tensor& out) {
  CHAINER_DISPATCH_FLOATING(out.dtype(), "clip", [&] {
    using T = scalar_t;
    map1<T>(formulas::Clip<T>{T(lo), T(hi)}, a, out);
  });
}

void add_bias(Tensor& y, const Tensor& b, bool relu) {
  const int64_t n = y.numel();
  if (n == 0 || (!b.defined() && !relu)) return;
  const Tensor bc = b.defined() ? b.contiguous() : Tensor();
  CHAINER_DISPATCH_FLOATING(y.dtype(), "add_bias", [&] {
    using T = scalar_t;
    add_bias_kernel<T><<<blocks_for(n), kThreads, 0, compute_stream()>>>(
        y.data<T>(), bc.defined() ? bc.data<T>() : nullptr, n, y.size(1), relu);
    CHAINER_CUDA_CHECK_LAUNCH(add_bias_kernel);
  });
}

}  // namespace chainer::cuda
