// The ops that compute in float16 and bfloat16 (core/tensor/dtype.h): they read and write half
// and compute in float32, so each result is the float32 op on the widened inputs rounded once to
// the half type. The elementwise ops are checked against exactly that (a result may differ by one
// half ulp where the float32 loop and the float32 reference round their last bit differently);
// the products and convolutions against float64 references with the bound of float32
// accumulation plus the output's rounding; the full-precision ops refuse half by name.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <string>

#include "core/cpu/family.h"
#include "core/cpu/isa.h"
#include "core/ops/ops.h"
#include "core/ops/update_ops.h"
#include "tests/function_inputs.h"

using namespace chainer;
using namespace chainer::testing;

namespace {
const DType kHalfTypes[] = {DType::Float16, DType::BFloat16};

// The half type's unit roundoff: half an ulp of 1.
double unit_roundoff(DType dtype) { return dtype == DType::Float16 ? 0x1p-11 : 0x1p-8; }

// Values of DTYPE (uniform in [LO, HI), rounded to it).
Tensor half_uniform(const Shape& shape, uint64_t seed, DType dtype, double lo = -2.0, double hi = 2.0) {
  return uniform(shape, seed, lo, hi).astype(dtype);
}

// GOT (half) equals EXPECTED (the float32 result rounded to half), except for at most one ulp
// where the two float32 computations rounded differently; most elements are bit-equal.
void check_rounded_once(const Tensor& got, const Tensor& expected32) {
  REQUIRE(got.shape() == expected32.shape());
  const DType dtype = got.dtype();
  const std::vector<double> g = values(got), e = values(expected32.astype(dtype)), wide = values(expected32);
  int64_t exact = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i << " of " << g.size() << ": got " << g[i] << ", expected " << e[i]);
    if (std::isnan(e[i])) {
      CHECK(std::isnan(g[i]));
      ++exact;
      continue;
    }
    exact += g[i] == e[i];
    CHECK(std::fabs(g[i] - e[i]) <= 2 * unit_roundoff(dtype) * std::fabs(wide[i]) + 1e-30);
  }
  CHECK(double(exact) >= 0.99 * double(g.size()));
}

// The unary op F on half X against F on float32.
void check_unary(const std::function<Tensor(const Tensor&)>& f, const Tensor& x) {
  INFO(dtype_name(x.dtype()));
  const Tensor y = f(x);
  CHECK(y.dtype() == x.dtype());
  check_rounded_once(y, f(x.astype(DType::Float32)));
}

void check_binary(const std::function<Tensor(const Tensor&, const Tensor&)>& f, const Tensor& a, const Tensor& b) {
  INFO(dtype_name(a.dtype()) << " " << shape_str(a.shape()) << " and " << shape_str(b.shape()));
  const Tensor y = f(a, b);
  CHECK(y.dtype() == a.dtype());
  check_rounded_once(y, f(a.astype(DType::Float32), b.astype(DType::Float32)));
}

// |GOT - REF| <= the float32 accumulation of K products (K u32 times the sum of |terms|, BOUND)
// plus the rounding of the result to the half type.
void check_product(const Tensor& got, const Tensor& ref, const Tensor& bound, int64_t k) {
  REQUIRE(got.shape() == ref.shape());
  const std::vector<double> g = values(got), r = values(ref), b = values(bound);
  const double u = unit_roundoff(got.dtype());
  for (size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i << ": got " << g[i] << ", float64 " << r[i]);
    CHECK(std::fabs(g[i] - r[i]) <= u * std::fabs(r[i]) + double(k) * 0x1p-23 * b[i] + 1e-30);
  }
}

Tensor f64_of(const Tensor& t) { return t.astype(DType::Float64); }
}  // namespace

TEST_CASE("half: elementwise ops and activations compute in float32 and round once", "[ops][half]") {
  for (DType dtype : kHalfTypes) {
    // 1000 elements: several chunks of the CPU kernels and a tail; shapes that take the dense,
    // the row-broadcast and the general paths.
    const Tensor a = half_uniform({10, 100}, 1, dtype), b = half_uniform({10, 100}, 2, dtype);
    const Tensor row = half_uniform({100}, 3, dtype), column = half_uniform({10, 1}, 4, dtype);
    const Tensor positive = half_uniform({10, 100}, 5, dtype, 0.1, 4.0);
    for (const Tensor& other : {b, row, column, b.transpose().contiguous().transpose()}) {
      check_binary(ops::add, a, other);
      check_binary(ops::sub, a, other);
      check_binary(ops::mul, a, other);
      check_binary(ops::div, a, other);
      check_binary(ops::maximum, a, other);
      check_binary(ops::minimum, a, other);
    }
    check_unary(ops::neg, a);
    check_unary(ops::exp, a);
    check_unary(ops::log, positive);
    check_unary(ops::sqrt, positive);
    check_unary(ops::square, a);
    check_unary(ops::relu, a);
    check_unary(ops::sigmoid, a);
    check_unary(ops::tanh, a);
    check_unary(ops::abs, a);
    check_unary(ops::sign, a);
    check_unary(ops::relu, a.transpose());  // a non-contiguous input
    check_unary([](const Tensor& x) { return ops::mul_scalar(x, 0.3); }, a);
    check_unary([](const Tensor& x) { return ops::add_scalar(x, -1.7); }, a);
    check_unary([](const Tensor& x) { return ops::clip(x, -0.5, 0.25); }, a);
    check_unary([](const Tensor& x) { return ops::leaky_relu(x, 0.2); }, a);
    check_unary([](const Tensor& x) { return ops::elu(x, 1.0); }, a);
    check_unary([](const Tensor& x) { return ops::softplus(x, 2.0); }, a);
    check_binary(ops::relu_grad, ops::relu(a), b);
    check_binary(ops::sigmoid_grad, ops::sigmoid(a), b);
    check_binary(ops::tanh_grad, ops::tanh(a), b);
    check_binary([](const Tensor& x, const Tensor& g) { return ops::leaky_relu_grad(x, g, 0.2); }, a, b);
    check_binary([](const Tensor& x, const Tensor& g) { return ops::elu_grad(x, g, 1.0); }, a, b);
    check_binary([](const Tensor& x, const Tensor& g) { return ops::softplus_grad(x, g, 2.0); }, a, b);
    // Comparisons and where: exact.
    CHECK(values(ops::less(a, row)) == values(ops::less(a.astype(DType::Float32), row.astype(DType::Float32))));
    const Tensor w = ops::where(ops::greater(a, b), a, row);
    CHECK(w.dtype() == dtype);
    CHECK(values(w) == values(ops::where(ops::greater(a, b), a.astype(DType::Float32), row.astype(DType::Float32))));
  }
}

TEST_CASE("half: in-place updates and the linear epilogue round once", "[ops][half]") {
  for (DType dtype : kHalfTypes) {
    INFO(dtype_name(dtype));
    const Tensor x = half_uniform({7, 300}, 6, dtype), bias = half_uniform({300}, 7, dtype);
    // axpy: y + 0.375 x.
    Tensor y = half_uniform({7, 300}, 8, dtype), y32 = y.astype(DType::Float32);
    ops::axpy_(y, 0.375, x);
    ops::axpy_(y32, 0.375, x.astype(DType::Float32));
    check_rounded_once(y, y32);
    Tensor s = x.clone(), s32 = x.astype(DType::Float32);
    ops::scale_(s, -3.0);
    ops::scale_(s32, -3.0);
    check_rounded_once(s, s32);
    for (bool relu : {false, true}) {
      for (const Tensor& b : {bias, Tensor()}) {
        Tensor out = x.clone(), out32 = x.astype(DType::Float32);
        ops::add_bias_(out, b, relu);
        ops::add_bias_(out32, b.defined() ? b.astype(DType::Float32) : Tensor(), relu);
        check_rounded_once(out, out32);
      }
    }
  }
}

// The vector families multiply half operands in their packed GEMM, widening them while packing
// and rounding C once from float32 sums; the avx512_bf16 family multiplies bfloat16 pairs with
// vdpbf16ps (core/cpu/gemm.cpp). The shapes reach their edges: m below a micro-tile's rows (14
// in AVX-512, 6 in AVX2) and a multiple of them, k odd (a pair padded with zero), k = 1, k over
// several slices (KC 256 here, 64 and 192 in the tensor_gemm_kc runs) with an odd last one,
// columns in partial panels and over several chunks (CW 128 here), few columns (the forward of a
// 10-output layer: with B transposed, n <= 16 takes the dot-product kernel), each with every
// transpose.
//
// The bound holds for vdpbf16ps too: Intel's pseudocode adds each product of a pair to the
// float32 accumulator in turn, each addition rounded to nearest even, and a product of two
// bfloat16 is exact in float32, so a sum of k products still has k roundings of at most u32
// each (only their order differs from an FMA loop's). It also treats denormal inputs as zero and
// flushes denormal results: each such flush moves a sum by less than 2^-126 (the 1e-30 term),
// and these operands, uniform in [-2, 2), hold no denormals.
TEST_CASE("half: matrix products accumulate in float32", "[ops][half]") {
  struct Dims {
    int64_t m, k, n;
  };
  const Dims shapes[] = {{37, 161, 45}, {5, 7, 3}, {14, 33, 32}, {6, 1, 17}, {100, 784, 70}, {29, 515, 300},
                         {100, 200, 10}, {3, 45, 16}, {1, 64, 1}};
  for (DType dtype : kHalfTypes) {
    for (const Dims& d : shapes) {
      for (bool ta : {false, true}) {
        for (bool tb : {false, true}) {
          INFO(dtype_name(dtype) << " m " << d.m << " k " << d.k << " n " << d.n << " trans_a " << ta << " trans_b "
                                 << tb);
          const Tensor a = half_uniform(ta ? Shape{d.k, d.m} : Shape{d.m, d.k}, 9, dtype);
          const Tensor b = half_uniform(tb ? Shape{d.n, d.k} : Shape{d.k, d.n}, 10, dtype);
          const Tensor c = ops::matmul(a, b, ta, tb);
          CHECK(c.dtype() == dtype);
          check_product(c, ops::matmul(f64_of(a), f64_of(b), ta, tb),
                        ops::matmul(ops::abs(f64_of(a)), ops::abs(f64_of(b)), ta, tb), d.k);
        }
      }
    }
    // C = 0.5 op(A) op(B) + 2 C, over one slice and over several (beta rounds into C once, after
    // the last).
    for (const Dims& d : {Dims{20, 30, 25}, Dims{29, 515, 300}, Dims{7, 45, 10}}) {
      for (bool ta : {false, true}) {
        for (bool tb : {false, true}) {
          INFO(dtype_name(dtype) << " beta 2, m " << d.m << " k " << d.k << " n " << d.n << " trans_a " << ta
                                 << " trans_b " << tb);
          const Tensor a = half_uniform(ta ? Shape{d.k, d.m} : Shape{d.m, d.k}, 11, dtype);
          const Tensor b = half_uniform(tb ? Shape{d.n, d.k} : Shape{d.k, d.n}, 12, dtype);
          Tensor c = half_uniform({d.m, d.n}, 13, dtype);
          const Tensor ref = ops::add(ops::mul_scalar(ops::matmul(f64_of(a), f64_of(b), ta, tb), 0.5),
                                      ops::mul_scalar(f64_of(c), 2));
          const Tensor bound = ops::add(
              ops::mul_scalar(ops::matmul(ops::abs(f64_of(a)), ops::abs(f64_of(b)), ta, tb), 0.5),
              ops::mul_scalar(ops::abs(f64_of(c)), 2));
          ops::gemm(a, ta, b, tb, 0.5, 2.0, c);
          check_product(c, ref, bound, d.k + 1);
        }
      }
    }
    // A float32 C (beta 1 and 0): the float32 sums themselves, within float32 accumulation of
    // the exact result and without the half rounding.
    for (const Dims& d : shapes) {
      for (bool ta : {false, true}) {
        for (bool tb : {false, true}) {
          INFO(dtype_name(dtype) << " into float32, m " << d.m << " k " << d.k << " n " << d.n << " trans_a " << ta
                                 << " trans_b " << tb);
          const Tensor a = half_uniform(ta ? Shape{d.k, d.m} : Shape{d.m, d.k}, 18, dtype);
          const Tensor b = half_uniform(tb ? Shape{d.n, d.k} : Shape{d.k, d.n}, 19, dtype);
          const Tensor c0 = uniform({d.m, d.n}, 20, -2.0, 2.0).astype(DType::Float32);
          for (double beta : {1.0, 0.0}) {
            Tensor c = c0.clone();
            ops::gemm(a, ta, b, tb, 1.0, beta, c);
            REQUIRE(c.dtype() == DType::Float32);
            const Tensor ref = ops::add(ops::matmul(f64_of(a), f64_of(b), ta, tb), ops::mul_scalar(f64_of(c0), beta));
            const Tensor bound = ops::add(ops::matmul(ops::abs(f64_of(a)), ops::abs(f64_of(b)), ta, tb),
                                          ops::mul_scalar(ops::abs(f64_of(c0)), beta));
            const std::vector<double> g = values(c), r = values(ref), bd = values(bound);
            for (size_t i = 0; i < g.size(); ++i) {
              INFO("beta " << beta << " element " << i << ": got " << g[i] << ", float64 " << r[i]);
              CHECK(std::fabs(g[i] - r[i]) <= double(d.k + 1) * 0x1p-23 * bd[i] + 1e-30);
            }
          }
        }
      }
    }
    // Only half operands may have a float32 C; a C of any other dtype is refused.
    Tensor c64 = Tensor::zeros({2, 2}, DType::Float64), c_half = Tensor::zeros({2, 2}, dtype);
    CHECK_THROWS_WITH(ops::gemm(half_uniform({2, 3}, 1, dtype), false, half_uniform({3, 2}, 2, dtype), false, 1, 0, c64),
                      Catch::Contains(std::string("matmul: dtypes differ (") + dtype_name(dtype) + " and float64)"));
    CHECK_THROWS_WITH(ops::gemm(Tensor::ones({2, 3}), false, Tensor::ones({3, 2}), false, 1, 0, c_half),
                      Catch::Contains(std::string("matmul: dtypes differ (float32 and ") + dtype_name(dtype) + ")"));
    // Batches: one product per C, and a batch of B broadcast.
    const Tensor ba = half_uniform({3, 8, 40}, 14, dtype), bb = half_uniform({3, 40, 6}, 15, dtype);
    const Tensor bc = ops::batched_matmul(ba, bb);
    CHECK(bc.dtype() == dtype);
    check_product(bc, ops::batched_matmul(f64_of(ba), f64_of(bb)),
                  ops::batched_matmul(ops::abs(f64_of(ba)), ops::abs(f64_of(bb))), 40);
    const Tensor ta = half_uniform({4, 33, 17}, 16, dtype), tb = half_uniform({1, 50, 33}, 17, dtype);
    const Tensor tc = ops::batched_matmul(ta, tb, true, true);
    CHECK(tc.dtype() == dtype);
    check_product(tc, ops::batched_matmul(f64_of(ta), f64_of(tb), true, true),
                  ops::batched_matmul(ops::abs(f64_of(ta)), ops::abs(f64_of(tb)), true, true), 33);
  }
}

// vdpbf16ps adds a pair's odd product before its even one, each addition rounded (Intel's
// pseudocode; the Zen 5 here does the same), where the FMA micro-kernels add the products in k
// order: the sums differ where a tie rounds to even differently. The products 1, 2^-23, 2^-24,
// -2^-24, -1, 0 sum to 2^-22 in k order ((1 + 2^-23) + 2^-24 ties up to 1 + 2^-22, which
// - 2^-24 ties back to) and to 0 pair by pair ((1 + 2^-23) - 2^-24 ties down to 1, and 1 + 2^-24
// ties to 1). Both are within the bound above; which one comes out marks whether the
// avx512_bf16 family multiplies bfloat16 with vdpbf16ps and the other packed families do not.
// (Denormals tell nothing: the library runs with FTZ and DAZ, as vdpbf16ps does.)
TEST_CASE("half: the avx512_bf16 family's bfloat16 products add each pair's odd product first", "[ops][half]") {
  const double terms[] = {1, 0x1p-23, 0x1p-24, -0x1p-24, -1, 0};
  Tensor a = Tensor::empty({2, 6}, DType::BFloat16), b = Tensor::empty({6, 1}, DType::BFloat16);
  for (int k = 0; k < 6; ++k) {
    a.data<bfloat16>()[k] = bfloat16(terms[k]);
    a.data<bfloat16>()[6 + k] = bfloat16(1.0);
    b.data<bfloat16>()[k] = bfloat16(1.0);
  }
  const std::vector<double> c = values(ops::matmul(a, b));
  CAPTURE(cpu::isa_description(), cpu::gemm_backend());
  CHECK(c[1] == 6.0);  // the row of ones: exact in any order
  const std::string backend = cpu::gemm_backend();
  if (backend == "packed-avx512_bf16") CHECK(c[0] == 0.0);
  else if (backend.rfind("packed-", 0) == 0) CHECK(c[0] == 0x1p-22);
  else CHECK((c[0] == 0.0 || c[0] == 0x1p-22));  // Eigen's order is its own
}

// Each output is rounded once, after its last term: a second rounding (of a partial sum over
// images, or of a column before col2im adds it up) would break the bound. The geometries take
// every path of the lowering (core/ops/conv_lowering.h; the avx512_bf16 family lowers bfloat16,
// the other families widen): groups, stride 2, a 1x1 product of the images themselves, a first
// layer's single channel, and a batch whose columns come in several chunks and whose filter
// gradient sums several partial sums (40 images of 8 x 3 x 3 x 32 x 32 windows: 5.6 MB of
// bfloat16 columns against chunks of 4 MB).
TEST_CASE("half: convolutions and their gradients accumulate in float32", "[ops][half]") {
  struct Geometry {
    const char* name;
    Shape x;
    int64_t c_out, k, stride, pad, groups;
  };
  const Geometry geometries[] = {{"3x3 pad 1", {2, 4, 7, 6}, 6, 3, 1, 1, 1},
                                 {"3x3 pad 1, 2 groups", {2, 4, 7, 6}, 6, 3, 1, 1, 2},
                                 {"3x3 stride 2", {3, 5, 9, 8}, 4, 3, 2, 1, 1},
                                 {"1x1", {3, 16, 5, 4}, 8, 1, 1, 0, 1},
                                 {"one channel", {4, 1, 8, 8}, 8, 3, 1, 1, 1},
                                 {"chunked batch", {40, 8, 32, 32}, 4, 3, 1, 1, 1}};
  for (DType dtype : kHalfTypes) {
    for (const Geometry& geo : geometries) {
      INFO(dtype_name(dtype) << " " << geo.name << " on " << cpu::isa_description());
      ops::Conv2dParams p{.sy = geo.stride, .sx = geo.stride, .ph = geo.pad, .pw = geo.pad, .groups = geo.groups};
      const int64_t c = geo.x[1], h = geo.x[2], w = geo.x[3];
      const Tensor x = half_uniform(geo.x, 16, dtype), W = half_uniform({geo.c_out, c / geo.groups, geo.k, geo.k}, 17, dtype);
      const Tensor bias = half_uniform({geo.c_out}, 18, dtype);
      const Tensor y = ops::convolution_2d(x, W, bias, p);
      CHECK(y.dtype() == dtype);
      check_product(y, ops::convolution_2d(f64_of(x), f64_of(W), f64_of(bias), p),
                    ops::convolution_2d(ops::abs(f64_of(x)), ops::abs(f64_of(W)), ops::abs(f64_of(bias)), p),
                    c / geo.groups * geo.k * geo.k + 1);
      const Tensor gy = half_uniform(y.shape(), 19, dtype);
      const Tensor gx = ops::convolution_2d_grad_data(gy, W, h, w, p);
      CHECK(gx.dtype() == dtype);
      check_product(gx, ops::convolution_2d_grad_data(f64_of(gy), f64_of(W), h, w, p),
                    ops::convolution_2d_grad_data(ops::abs(f64_of(gy)), ops::abs(f64_of(W)), h, w, p),
                    geo.c_out / geo.groups * geo.k * geo.k);
      const Tensor gW = ops::convolution_2d_grad_filter(x, gy, geo.k, geo.k, p);
      CHECK(gW.dtype() == dtype);
      check_product(gW, ops::convolution_2d_grad_filter(f64_of(x), f64_of(gy), geo.k, geo.k, p),
                    ops::convolution_2d_grad_filter(ops::abs(f64_of(x)), ops::abs(f64_of(gy)), geo.k, geo.k, p),
                    y.size(0) * y.size(2) * y.size(3));
    }
  }
}

TEST_CASE("half: pooling, sums, extremes and dropout masks", "[ops][half]") {
  for (DType dtype : kHalfTypes) {
    INFO(dtype_name(dtype));
    const Tensor x = half_uniform({2, 3, 6, 5}, 20, dtype);
    const Tensor x32 = x.astype(DType::Float32);
    const Window2D window{2, 2, 2, 2, 0, 0};
    // Maxima and their gradients are exact.
    const auto pooled = ops::max_pooling_2d(x, window, false), pooled32 = ops::max_pooling_2d(x32, window, false);
    CHECK(pooled.y.dtype() == dtype);
    CHECK(values(pooled.y) == values(pooled32.y));
    CHECK(values(pooled.indexes) == values(pooled32.indexes));
    const Tensor gy = half_uniform(pooled.y.shape(), 21, dtype);
    CHECK(values(ops::max_pooling_2d_grad(gy, pooled.indexes, window, x.shape())) ==
          values(ops::max_pooling_2d_grad(gy.astype(DType::Float32), pooled32.indexes, window, x.shape())));
    check_rounded_once(ops::window_sum_2d(x, window, false, 0.25), ops::window_sum_2d(x32, window, false, 0.25));
    check_rounded_once(ops::window_spread_2d(gy, window, 6, 5, false, 0.25),
                       ops::window_spread_2d(gy.astype(DType::Float32), window, 6, 5, false, 0.25));
    // Sums accumulate in float32 or better: within the rounding of the result.
    check_product(ops::sum(x, {0, 2, 3}), ops::sum(f64_of(x), {0, 2, 3}), ops::sum(ops::abs(f64_of(x)), {0, 2, 3}), 0);
    check_product(ops::sum(x), ops::sum(f64_of(x)), ops::sum(ops::abs(f64_of(x))), 0);
    CHECK(values(ops::max(x, 1)) == values(ops::max(x32, 1)));
    CHECK(values(ops::argmin(x, 3)) == values(ops::argmin(x32, 3)));
    // A dropout mask of ratio 0.2 holds 0 and 1.25 (exact in both types), where float32's does.
    Generator g1(5), g2(5);
    const Tensor m = ops::dropout_mask({4000}, 0.2, dtype, Device{}, g1);
    CHECK(m.dtype() == dtype);
    CHECK(values(m) == values(ops::dropout_mask({4000}, 0.2, DType::Float32, Device{}, g2)));
  }
}

TEST_CASE("half: the full-precision ops refuse float16 and bfloat16, naming the op and the cure", "[ops][half]") {
  for (DType dtype : kHalfTypes) {
    const std::string name = dtype_name(dtype);
    const Tensor x = Tensor::ones({2, 2}, dtype);
    CHECK_THROWS_WITH(ops::softmax(x), Catch::Contains("softmax: dtype " + name + " is not supported") &&
                                           Catch::Contains("convert with astype(DType::Float32)"));
    Tensor p = Tensor::ones({2}, dtype), g = Tensor::ones({2}, dtype), v = Tensor::zeros({2}, dtype);
    CHECK_THROWS_WITH(ops::momentum_sgd_update_(p, g, v, 0.1, 0.9),
                      Catch::Contains("momentum_sgd: dtype " + name + " is not supported"));
    CHECK_THROWS_WITH(ops::add(x, Tensor::ones({2, 2})), Catch::Contains("add: dtypes differ (" + name + " and float32)"));
  }
}
