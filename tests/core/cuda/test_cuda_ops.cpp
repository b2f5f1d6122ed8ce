// The CUDA backend against the CPU, in the manner of ggml's test-backend-ops: every entry point
// of core/ops/ops.h and core/ops/update_ops.h, and the Tensor methods that move memory, run on cuda:0
// over tables of cases (odd, empty, one-element, 0-d and non-contiguous shapes, each dtype the
// op takes) and must give the CPU's result: NaN and infinities at the same places first, then
// values within a tolerance per dtype (per op where the arithmetic differs). Then the
// differentiable functions of nn/functions.h: finite differences checked on the GPU in float64,
// and forward and backward on the GPU equal to the CPU's in float32, over the registry of function
// cases (tests/nn/functions/function_cases.h). What the CPU suite already
// checks about the CPU alone is not repeated here. tests/cuda_main.cpp exits 77 (skipped)
// before any case runs when no CUDA device is usable.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <iomanip>
#include <iostream>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "autograd/gradient_check.h"
#include "core/util/config.h"
#include "core/device/cuda.h"
#include "core/ops/ops.h"
#include "core/util/random.h"
#include "core/ops/update_ops.h"
#include "nn/functions.h"
#include "nn/links/n_step_rnn.h"
#include "tests/function_inputs.h"
#include "tests/nn/functions/function_cases.h"

namespace F = chainer::functions;
namespace L = chainer::links;
using namespace chainer;
using chainer::testing::away_from_zero;
using chainer::testing::labels;
using chainer::testing::spaced;
using chainer::testing::FunctionCase;
using chainer::testing::KernelCase;
using chainer::testing::Vars;
using chainer::testing::forward_backward;
using chainer::testing::function_cases;
using chainer::testing::kernel_cases;
using chainer::testing::run_kernel_case;
using chainer::testing::shapes_of;

namespace {

const Device kCpu = Device::cpu();
const Device kGpu = Device::cuda(0);
constexpr DType kF32 = DType::Float32, kF64 = DType::Float64;
const std::vector<DType> kFloatTypes = {kF32, kF64};
const std::vector<DType> kAllTypes = {kF32, kF64, DType::Int32, DType::Int64, DType::UInt8};
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// ---- Comparison ----

// |gpu - cpu| <= rtol |cpu| + atol. Inputs are O(1), so the floor is a few ulps of 1: float32
// 1e-5 relative (transcendentals differ by 1-2 ulps between libm and CUDA, and nvcc contracts
// a*b+c into FMAs where g++ -std=c++20 does not) with a floor of 1e-6; float64 1e-12 both.
// Integers are exact. Ops that add up K terms pass K as ATOL_SCALE: their rounding errors grow
// with the number of terms, and near-zero results have no relative accuracy.
struct Tol {
  double rtol, atol;
};
Tol tol_for(DType dtype, double atol_scale = 1.0) {
  if (dtype == kF32) return {1e-5, 1e-6 * atol_scale};
  if (dtype == kF64) return {1e-12, 1e-12 * atol_scale};
  return {0, 0};
}

// Whether cuDNN may have run any of its algorithms for this thread's convolutions, not only
// those its heuristic proposes among the deterministic ones (the default): timing them
// (config::autotune) keeps the fastest, and non-deterministic ones widen the choice.
bool any_conv_algorithm() { return config::autotune() || !config::cudnn_deterministic(); }

// TOL for a float32 result of cuDNN's convolutions when ANY_ALGORITHM, times 100. The fastest
// algorithms are often FFT or Winograd ones, whose transforms spread rounding error over a whole
// tile, so an output's error follows the outputs' overall magnitude rather than its own sum of
// products. Measured elsewhere: for typical sizes 1e-3 to 1e-2 with FFT where the GEMM-based
// algorithms give 1e-5 to 1e-4, a factor of 100 (NVIDIA's answer in PyTorch's issue 52983);
// cuDNN's fp32 FFT algorithm off from fp64 by up to 1e-4 of the outputs' typical magnitude
// (gpu-mode/reference-kernels issue 164); a float32 Winograd 3x3 convolution 8 times as far from
// the reference as implicit GEMM (MLX's pull request 4242). Times 100 reads rtol 1e-3 and atol
// 1e-4 per summed term, the order of Chainer's own tests of cuDNN's float32 convolutions with
// autotune and non-deterministic algorithms (atol 5e-4, rtol 5e-3). Float64 keeps its tolerance
// (its rounding is 2^29 times finer), and so does the default run.
Tol for_convolution(Tol tol, DType dtype, bool any_algorithm = any_conv_algorithm()) {
  if (dtype == kF32 && any_algorithm) tol.rtol *= 100, tol.atol *= 100;
  return tol;
}

std::string fmt(double v) {
  std::ostringstream os;
  os << std::setprecision(17) << v;
  return os.str();
}

// Checks the GPU's GOT against the CPU's WANT: GOT on cuda:0 with WANT's shape and dtype; then
// NaN and infinities at the same flat positions (a NaN for a NaN, an infinity of the same sign),
// then every other element within TOL (exact for integer dtypes). A failure gives the count and
// the first differing index with both values; the caller's INFO names the case.
void expect_close(const Tensor& want, const Tensor& got, Tol tol) {
  CHECK(want.defined());
  CHECK(got.defined());
  if (!want.defined() || !got.defined()) return;
  CHECK(got.device().str() == kGpu.str());
  CHECK(shape_str(got.shape()) == shape_str(want.shape()));
  CHECK(std::string(dtype_name(got.dtype())) == dtype_name(want.dtype()));
  if (got.shape() != want.shape() || got.dtype() != want.dtype()) return;
  if (!is_floating(want.dtype())) {
    const std::vector<int64_t> w = want.to_vector<int64_t>(), g = got.to_vector<int64_t>();
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < w.size(); ++i)
      if (w[i] != g[i] && bad++ == 0) first = i;
    INFO(bad << " of " << w.size() << " elements differ"
              << (bad ? str("; the first at flat index ", first, ": cpu ", w[first], ", gpu ", g[first]) : ""));
    CHECK(bad == 0);
    return;
  }
  const std::vector<double> w = want.to_vector<double>(), g = got.to_vector<double>();
  size_t special = 0, first_special = 0, off = 0, first_off = 0;
  double worst = 0;  // the largest |got - want| / allowed
  for (size_t i = 0; i < w.size(); ++i) {
    if (!std::isfinite(w[i]) || !std::isfinite(g[i])) {
      const bool same = std::isnan(w[i]) ? std::isnan(g[i]) : w[i] == g[i];
      if (!same && special++ == 0) first_special = i;
      continue;
    }
    const double err = std::abs(g[i] - w[i]), allowed = tol.rtol * std::abs(w[i]) + tol.atol;
    if (!(err <= allowed) && off++ == 0) first_off = i;
    if (allowed > 0) worst = std::max(worst, err / allowed);
  }
  {
    INFO("NaN/inf: " << special << " of " << w.size() << " elements differ"
                     << (special ? str("; the first at flat index ", first_special, ": cpu ", fmt(w[first_special]),
                                       ", gpu ", fmt(g[first_special]))
                                 : ""));
    CHECK(special == 0);
  }
  INFO("values: " << off << " of " << w.size() << " elements outside rtol " << tol.rtol << ", atol " << tol.atol
                  << " (worst at " << worst << " times the allowance)"
                  << (off ? str("; the first at flat index ", first_off, ": cpu ", fmt(w[first_off]), ", gpu ",
                                fmt(g[first_off]))
                          : ""));
  CHECK(off == 0);
}

// Checks that GOT holds WANT's bytes element by element (any devices and layouts).
void expect_same_bits(const Tensor& want, const Tensor& got) {
  CHECK(shape_str(got.shape()) == shape_str(want.shape()));
  CHECK(std::string(dtype_name(got.dtype())) == dtype_name(want.dtype()));
  if (got.shape() != want.shape() || got.dtype() != want.dtype()) return;
  const Tensor w = want.to(kCpu).contiguous(), g = got.to(kCpu).contiguous();
  const size_t size = w.itemsize(), n = size_t(w.numel());
  const auto* pw = static_cast<const unsigned char*>(w.raw_data());
  const auto* pg = static_cast<const unsigned char*>(g.raw_data());
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < n; ++i)
    if (std::memcmp(pw + i * size, pg + i * size, size) != 0 && bad++ == 0) first = i;
  INFO(bad << " of " << n << " elements differ in their bits"
            << (bad ? str("; the first at flat index ", first, ": want ",
                          fmt(w.reshape({-1})[int64_t(first)].item_double()), ", got ",
                          fmt(g.reshape({-1})[int64_t(first)].item_double()))
                    : ""));
  CHECK(bad == 0);
}

// Runs one case of a table: an exception fails that case alone (the caller's INFO names it),
// and the table goes on.
void run_case(const std::function<void()>& body) {
  try {
    body();
  } catch (const std::exception& e) {
    FAIL_CHECK("threw: " << e.what());
  }
}

// The message of the chainer::Error that F throws.
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("not a chainer::Error: ") + e.what();
  }
  return "no exception";
}

// ---- Inputs ----

// A CPU tensor of SHAPE and DTYPE: floating values uniform in [lo, hi), integers uniform in
// [lo, hi] (floating dtypes too when INTEGRAL: ties for max, argmax and accuracy).
Tensor random_tensor(const Shape& shape, DType dtype, Generator& gen, double lo = -2, double hi = 2,
                     bool integral = false) {
  std::vector<double> v(size_t(shape_numel(shape)));
  const bool ints = integral || !is_floating(dtype);
  for (double& x : v) x = ints ? lo + double(gen.below(uint64_t(hi - lo + 1))) : lo + (hi - lo) * gen.uniform();
  return Tensor::from_vector(v, shape).astype(dtype);
}

// How an operand is laid out in memory: packed, or a view of a larger or permuted base tensor.
enum class Layout { Contiguous, Offset, Transposed, SwappedAxes, Narrowed };
const std::vector<Layout> kLayouts = {Layout::Contiguous, Layout::Offset, Layout::Transposed, Layout::SwappedAxes,
                                      Layout::Narrowed};

// One operand on both devices: the same values, seen through the same view of a base tensor on
// each (so the GPU kernel reads strided, offset memory, not a packed copy).
struct Pair {
  Tensor cpu, gpu;
};

// Random values of SHAPE seen through LAYOUT: packed but 5 elements into its storage (a reshaped
// window of a 1-D base), the transpose of a base with the axes reversed, of one with axes 0 and
// 1 swapped, or a window at offset 2 of a base 3 longer on the last axis.
Pair make_pair(const Shape& shape, DType dtype, Layout layout, Generator& gen, double lo = -2, double hi = 2,
               bool integral = false) {
  const size_t nd = shape.size();
  std::vector<int64_t> perm(nd);
  std::iota(perm.begin(), perm.end(), int64_t(0));
  if (layout == Layout::Transposed) std::reverse(perm.begin(), perm.end());
  if (layout == Layout::SwappedAxes && nd >= 2) std::swap(perm[0], perm[1]);
  Shape base(nd);
  for (size_t i = 0; i < nd; ++i) base[size_t(perm[i])] = shape[i];  // base.transpose(perm) has SHAPE
  const bool narrow = layout == Layout::Narrowed && nd >= 1, offset = layout == Layout::Offset;
  const int64_t n = shape_numel(shape);
  if (narrow) base.back() += 3;
  if (offset) base = {n + 5};
  auto view = [&](const Tensor& t) {
    return offset ? t.narrow(0, 5, n).reshape(shape) : narrow ? t.narrow(-1, 2, shape.back()) : t.transpose(perm);
  };
  const Tensor b = random_tensor(base, dtype, gen, lo, hi, integral);
  return {view(b), view(b.to(kGpu))};
}

std::string layout_name(Layout layout, const std::vector<Tensor>& operands) {
  static const char* const names[] = {"contiguous", "contiguous at offset 5 (a reshaped window)", "transposed",
                                      "axes 0 and 1 swapped", "narrowed (offset 2)"};
  std::string s = names[int(layout)];
  const bool packed = std::all_of(operands.begin(), operands.end(), [](const Tensor& t) { return t.is_contiguous(); });
  if (layout != Layout::Contiguous && layout != Layout::Offset && packed) s += " (contiguous for these shapes)";
  return s;
}

// "OP of (5, 7) (7,) float32, transposed": the case, as INFO shows it.
std::string describe(const std::string& op, const std::vector<Tensor>& operands, Layout layout) {
  std::string s = op + " of";
  for (const Tensor& t : operands) s += " " + shape_str(t.shape());
  return s + " " + dtype_name(operands[0].dtype()) + ", " + layout_name(layout, operands);
}

// Shapes for elementwise ops: 0-d, one element, empty, odd sizes, 4-D, and one of a million.
const std::vector<Shape> kShapes = {{},       {1},       {0},       {7},          {5, 7},
                                    {13, 11}, {4, 0, 3}, {3, 5, 7}, {2, 3, 5, 7}, {1000, 1001}};

// ---- The elementwise table ----

using OpFn = std::function<Tensor(const std::vector<Tensor>&)>;
struct ElementwiseCase {
  std::string name;
  std::vector<std::pair<double, double>> domains;  // one per operand; all operands have one shape
  std::optional<int64_t> axis;                     // for ops along an axis
  OpFn run;
};

const std::vector<ElementwiseCase>& elementwise_cases() {
  using V = std::vector<Tensor>;
  static const std::vector<ElementwiseCase> cases = {
      {"neg", {{-3, 3}}, {}, [](const V& x) { return ops::neg(x[0]); }},
      {"exp", {{-5, 5}}, {}, [](const V& x) { return ops::exp(x[0]); }},
      {"log", {{0.05, 5}}, {}, [](const V& x) { return ops::log(x[0]); }},
      {"sqrt", {{0, 5}}, {}, [](const V& x) { return ops::sqrt(x[0]); }},
      {"square", {{-3, 3}}, {}, [](const V& x) { return ops::square(x[0]); }},
      {"relu", {{-1, 1}}, {}, [](const V& x) { return ops::relu(x[0]); }},
      {"sigmoid", {{-8, 8}}, {}, [](const V& x) { return ops::sigmoid(x[0]); }},
      {"tanh", {{-4, 4}}, {}, [](const V& x) { return ops::tanh(x[0]); }},
      {"add_scalar(x, 0.75)", {{-3, 3}}, {}, [](const V& x) { return ops::add_scalar(x[0], 0.75); }},
      {"mul_scalar(x, -1.5)", {{-3, 3}}, {}, [](const V& x) { return ops::mul_scalar(x[0], -1.5); }},
      {"scale_(y, 1.25) on a packed copy", {{-3, 3}}, {}, [](const V& x) {
         Tensor y = x[0].clone();
         ops::scale_(y, 1.25);
         return y;
       }},
      {"axpy_(y, -0.75, x) into a packed y", {{-3, 3}, {-3, 3}}, {}, [](const V& x) {
         Tensor y = x[0].clone();
         ops::axpy_(y, -0.75, x[1]);
         return y;
       }},
      {"relu_grad(y, gy)", {{-1, 1}, {-2, 2}}, {}, [](const V& x) { return ops::relu_grad(x[0], x[1]); }},
      {"sigmoid_grad(y, gy)", {{0, 1}, {-2, 2}}, {}, [](const V& x) { return ops::sigmoid_grad(x[0], x[1]); }},
      {"tanh_grad(y, gy)", {{-1, 1}, {-2, 2}}, {}, [](const V& x) { return ops::tanh_grad(x[0], x[1]); }},
      {"softmax axis -1", {{-2, 2}}, -1, [](const V& x) { return ops::softmax(x[0], -1); }},
      {"softmax axis 0", {{-2, 2}}, 0, [](const V& x) { return ops::softmax(x[0], 0); }},
      {"log_softmax axis -1", {{-2, 2}}, -1, [](const V& x) { return ops::log_softmax(x[0], -1); }},
      {"log_softmax axis 0", {{-2, 2}}, 0, [](const V& x) { return ops::log_softmax(x[0], 0); }},
      // The gradients from real outputs (rows of y sum to 1), as backward calls them: with an
      // arbitrary y the row sum cancels and float32 keeps no relative accuracy.
      {"softmax_grad(softmax(x), gy) axis -1", {{-2, 2}, {-2, 2}}, -1,
       [](const V& x) { return ops::softmax_grad(ops::softmax(x[0], -1), x[1], -1); }},
      {"softmax_grad(softmax(x), gy) axis 0", {{-2, 2}, {-2, 2}}, 0,
       [](const V& x) { return ops::softmax_grad(ops::softmax(x[0], 0), x[1], 0); }},
      {"log_softmax_grad(log_softmax(x), gy) axis -1", {{-2, 2}, {-2, 2}}, -1,
       [](const V& x) { return ops::log_softmax_grad(ops::log_softmax(x[0], -1), x[1], -1); }},
      {"log_softmax_grad(log_softmax(x), gy) axis 0", {{-2, 2}, {-2, 2}}, 0,
       [](const V& x) { return ops::log_softmax_grad(ops::log_softmax(x[0], 0), x[1], 0); }},
      {"abs", {{-3, 3}}, {}, [](const V& x) { return ops::abs(x[0]); }},
      {"sign", {{-3, 3}}, {}, [](const V& x) { return ops::sign(x[0]); }},
      {"clip(x, -0.5, 0.75)", {{-2, 2}}, {}, [](const V& x) { return ops::clip(x[0], -0.5, 0.75); }},
      {"clip(x, -inf, 0.25)", {{-2, 2}}, {},
       [](const V& x) { return ops::clip(x[0], -std::numeric_limits<double>::infinity(), 0.25); }},
      {"maximum", {{-2, 2}, {-2, 2}}, {}, [](const V& x) { return ops::maximum(x[0], x[1]); }},
      {"minimum", {{-2, 2}, {-2, 2}}, {}, [](const V& x) { return ops::minimum(x[0], x[1]); }},
      {"less_equal (a uint8 mask)", {{-2, 2}, {-2, 2}}, {}, [](const V& x) { return ops::less_equal(x[0], x[1]); }},
      {"where(greater(a, b), b, c)", {{-2, 2}, {-2, 2}, {-2, 2}}, {},
       [](const V& x) { return ops::where(ops::greater(x[0], x[1]), x[1], x[2]); }},
  };
  return cases;
}

}  // namespace

TEST_CASE("cuda ops: elementwise, activation and softmax ops over shapes, layouts and float dtypes", "[cuda][ops]") {
  Generator gen(1);
  for (const ElementwiseCase& c : elementwise_cases())
    for (const Shape& shape : kShapes) {
      // Along an axis: the axis must exist and not be empty (the CPU kernel reads element 0 of
      // each row before its loop, so it has no reference for rows of nothing).
      if (c.axis) {
        if (shape.empty()) continue;
        const int64_t ax = *c.axis < 0 ? *c.axis + int64_t(shape.size()) : *c.axis;
        if (shape[size_t(ax)] == 0) continue;
      }
      for (DType dtype : kFloatTypes)
        for (Layout layout : kLayouts) {
          std::vector<Tensor> cpu, gpu;
          for (const auto& d : c.domains) {
            Pair p = make_pair(shape, dtype, layout, gen, d.first, d.second);
            cpu.push_back(p.cpu);
            gpu.push_back(p.gpu);
          }
          INFO(describe(c.name, cpu, layout));
          run_case([&] { expect_close(c.run(cpu), c.run(gpu), tol_for(dtype)); });
        }
    }
}

TEST_CASE("cuda ops: add, sub, mul, div, maximum, minimum and comparisons with broadcasting in every dtype",
          "[cuda][ops]") {
  struct Op {
    const char* name;
    Tensor (*run)(const Tensor&, const Tensor&);
  };
  const Op binary_ops[] = {{"add", ops::add},
                           {"sub", ops::sub},
                           {"mul", ops::mul},
                           {"div", ops::div},
                           {"maximum", ops::maximum},
                           {"minimum", ops::minimum},
                           {"equal", ops::equal},
                           {"not_equal", ops::not_equal},
                           {"less", ops::less},
                           {"less_equal", ops::less_equal},
                           {"greater", ops::greater},
                           {"greater_equal", ops::greater_equal}};
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{5, 7}, {5, 7}},   {{5, 7}, {7}},         {{7}, {5, 7}},          {{5, 1}, {1, 7}},        {{13, 1, 7}, {11, 1}},
      {{}, {5, 7}},       {{5, 7}, {}},          {{}, {}},               {{1}, {1}},              {{0, 7}, {7}},
      {{3, 0}, {1}},      {{2, 3, 5, 7}, {3, 1, 7}}, {{1000, 1001}, {1001}}, {{1000, 1}, {1, 1001}}};
  Generator gen(2);
  for (const Op& op : binary_ops)
    for (const auto& s : shapes)
      for (DType dtype : kAllTypes)
        for (Layout layout : kLayouts) {
          // Integers small enough that nothing overflows int32; uint8 sub and mul wrap, which is
          // defined (the int result converts modulo 256) and the same on both devices.
          const bool is_div = std::string(op.name) == "div";
          const bool floating = is_floating(dtype), u8 = dtype == DType::UInt8;
          const double lo = floating ? -3 : u8 ? 0 : -20, hi = floating ? 3 : 20;
          const double dlo = is_div ? (floating ? 0.5 : 1) : lo, dhi = is_div ? (floating ? 2.5 : 9) : hi;
          Pair a = make_pair(s.first, dtype, layout, gen, lo, hi),
               b = make_pair(s.second, dtype, layout, gen, dlo, dhi);
          INFO(describe(op.name, {a.cpu, b.cpu}, layout));
          run_case([&] { expect_close(op.run(a.cpu, b.cpu), op.run(a.gpu, b.gpu), tol_for(dtype)); });
        }
}

TEST_CASE("cuda ops: where with its three operands broadcast, in every dtype and layout", "[cuda][ops]") {
  struct Shapes {
    Shape cond, a, b;
  };
  const std::vector<Shapes> shapes = {{{5, 7}, {5, 7}, {5, 7}},       {{5, 7}, {7}, {5, 1}},    {{7}, {5, 7}, {}},
                                      {{3, 1, 7}, {5, 1}, {3, 5, 7}}, {{}, {13, 11}, {13, 11}}, {{0, 7}, {7}, {1}},
                                      {{1000, 1}, {1001}, {1000, 1001}}};
  Generator gen(12);
  for (const Shapes& s : shapes)
    for (DType dtype : kAllTypes)
      for (Layout layout : kLayouts) {
        // Conditions 0, 1 and 2: any nonzero byte is true.
        Pair c = make_pair(s.cond, DType::UInt8, layout, gen, 0, 2), a = make_pair(s.a, dtype, layout, gen, 0, 20),
             b = make_pair(s.b, dtype, layout, gen, 0, 20);
        INFO(describe("where", {c.cpu, a.cpu, b.cpu}, layout) << ", values " << dtype_name(dtype));
        run_case([&] {
          expect_close(ops::where(c.cpu, a.cpu, b.cpu), ops::where(c.gpu, a.gpu, b.gpu), tol_for(dtype));
        });
      }
}

TEST_CASE("cuda ops: NaN and infinities come out where the CPU puts them", "[cuda][ops]") {
  const std::vector<double> specials = {kNaN, kInf, -kInf, 0.0, -0.0, 1e-30, 100, -100, 0.5, -2, 1, -1};
  const int64_t n = int64_t(specials.size());
  using V = std::vector<Tensor>;
  const std::vector<std::pair<const char*, OpFn>> unary = {
      {"neg", [](const V& x) { return ops::neg(x[0]); }},         {"exp", [](const V& x) { return ops::exp(x[0]); }},
      {"log", [](const V& x) { return ops::log(x[0]); }},         {"sqrt", [](const V& x) { return ops::sqrt(x[0]); }},
      {"square", [](const V& x) { return ops::square(x[0]); }},   {"relu", [](const V& x) { return ops::relu(x[0]); }},
      {"sigmoid", [](const V& x) { return ops::sigmoid(x[0]); }}, {"tanh", [](const V& x) { return ops::tanh(x[0]); }},
      {"mul_scalar(x, 3)", [](const V& x) { return ops::mul_scalar(x[0], 3); }},
      {"relu_grad(x, x)", [](const V& x) { return ops::relu_grad(x[0], x[0]); }},
      {"abs", [](const V& x) { return ops::abs(x[0]); }},         {"sign", [](const V& x) { return ops::sign(x[0]); }},
      {"clip(x, -1, 1)", [](const V& x) { return ops::clip(x[0], -1, 1); }},
  };
  // Every pair, as a (12, 1) against b (12,); then rows a + b and a * b reduced, where b holds
  // -inf but neither NaN nor inf (else every row would be NaN): rows of NaN, of -inf, of
  // inf - inf, and finite rows with -inf in them (softmax 0 there, log_softmax -inf).
  const std::vector<std::pair<const char*, OpFn>> binary = {
      {"add", [](const V& x) { return ops::add(x[0], x[1]); }},
      {"sub", [](const V& x) { return ops::sub(x[0], x[1]); }},
      {"mul", [](const V& x) { return ops::mul(x[0], x[1]); }},
      {"div", [](const V& x) { return ops::div(x[0], x[1]); }},
      {"maximum", [](const V& x) { return ops::maximum(x[0], x[1]); }},
      {"minimum", [](const V& x) { return ops::minimum(x[0], x[1]); }},
      {"equal", [](const V& x) { return ops::equal(x[0], x[1]); }},
      {"less", [](const V& x) { return ops::less(x[0], x[1]); }},
      {"greater_equal", [](const V& x) { return ops::greater_equal(x[0], x[1]); }},
  };
  const std::vector<std::pair<const char*, OpFn>> rows = {
      {"sum(a + b, axis 1)", [](const V& x) { return ops::sum(ops::add(x[0], x[1]), {1}); }},
      {"sum(a * b, axis 1)", [](const V& x) { return ops::sum(ops::mul(x[0], x[1]), {1}); }},
      {"softmax(a + b, axis 1)", [](const V& x) { return ops::softmax(ops::add(x[0], x[1]), 1); }},
      {"log_softmax(a + b, axis 1)", [](const V& x) { return ops::log_softmax(ops::add(x[0], x[1]), 1); }},
      {"softmax(a + b, axis 1) transposed, along axis 0",
       [](const V& x) { return ops::softmax(ops::add(x[0], x[1]).transpose(), 0); }},
  };
  std::vector<double> without_nan_and_inf;
  for (double v : specials)
    if (!std::isnan(v) && v != kInf) without_nan_and_inf.push_back(v);
  for (DType dtype : kFloatTypes) {
    const Tensor x = Tensor::from_vector(specials).astype(dtype);
    for (const auto& u : unary) {
      INFO(u.first << " of the specials (NaN, inf, -inf, 0, -0, 1e-30, 100, -100, ...) " << dtype_name(dtype));
      run_case([&] { expect_close(u.second({x}), u.second({x.to(kGpu)}), tol_for(dtype)); });
    }
    const Tensor a = x.reshape({n, 1}), b = Tensor::from_vector(without_nan_and_inf).astype(dtype);
    for (const auto& g : binary) {
      INFO(g.first << " over every pair of the specials, " << dtype_name(dtype));
      run_case([&] { expect_close(g.second({a, x}), g.second({a.to(kGpu), x.to(kGpu)}), tol_for(dtype)); });
    }
    for (const auto& g : rows) {
      INFO(g.first << ", a: the specials, b: the specials but NaN and inf, " << dtype_name(dtype));
      run_case([&] { expect_close(g.second({a, b}), g.second({a.to(kGpu), b.to(kGpu)}), tol_for(dtype)); });
    }
    // max and argmax (and min, argmin): a NaN first in its row wins, a later NaN never does, ties
    // go to the first.
    const Tensor m = Tensor::from_vector(std::vector<double>{kNaN, 1, 5, 2, 5, 0,           //
                                                             1, 5, kNaN, 5, 2, 0,           //
                                                             -kInf, -kInf, -kInf, -kInf, -kInf, -kInf,  //
                                                             1, kInf, 3, kInf, kNaN, -kInf},
                                         {4, 6})
                         .astype(dtype);
    for (const Tensor& view : {m, m.transpose()})
      for (int64_t axis : {0, 1}) {
        INFO("max, argmax, min and argmin along axis " << axis << " of a " << shape_str(view.shape()) << " "
                                                      << dtype_name(dtype)
                                          << " with NaN, inf, -inf and ties"
                                          << (view.is_contiguous() ? "" : ", transposed"));
        const Tensor g = m.to(kGpu), gv = view.is_contiguous() ? g : g.transpose();
        run_case([&] {
          expect_close(ops::max(view, axis), ops::max(gv, axis), tol_for(dtype));
          expect_close(ops::argmax(view, axis), ops::argmax(gv, axis), tol_for(DType::Int32));
          expect_close(ops::min(view, axis), ops::min(gv, axis), tol_for(dtype));
          expect_close(ops::argmin(view, axis), ops::argmin(gv, axis), tol_for(DType::Int32));
        });
      }
  }
}

TEST_CASE("cuda ops: in-place add_bias_ with and without a bias and the ReLU", "[cuda][ops]") {
  Generator gen(3);
  for (const Shape& shape : {Shape{7, 5}, Shape{13, 11}, Shape{1000, 10}, Shape{0, 5}, Shape{1, 1}})
    for (DType dtype : kFloatTypes)
      for (int bias = 0; bias < 3; ++bias)  // none, packed, a narrowed view
        for (bool relu : {false, true}) {
          const Tensor y = random_tensor(shape, dtype, gen);
          Tensor yc = y.clone(), yg = y.to(kGpu);
          Pair b = make_pair({shape[1]}, dtype, bias == 2 ? Layout::Narrowed : Layout::Contiguous, gen);
          INFO("add_bias_ of " << shape_str(shape) << " " << dtype_name(dtype) << ", bias "
                               << (bias == 0 ? "undefined" : bias == 1 ? "packed" : "narrowed (offset 2)")
                               << (relu ? ", relu" : ""));
          run_case([&] {
            ops::add_bias_(yc, bias ? b.cpu : Tensor(), relu);
            ops::add_bias_(yg, bias ? b.gpu : Tensor(), relu);
            expect_close(yc, yg, tol_for(dtype));
          });
        }
}

TEST_CASE("cuda ops: sum over every subset of axes, sum_to and broadcast_to", "[cuda][ops][reduction]") {
  Generator gen(4);
  // (3, 5, 1100): rows longer than 1024 take the block-per-output kernel.
  const std::vector<Shape> shapes = {{5, 7, 11}, {3, 5, 7}, {13, 1, 7}, {3, 5, 1100}, {0, 7, 11}, {4, 0, 3}, {1, 1, 1}};
  for (DType dtype : kAllTypes)
    for (const Shape& shape : shapes) {
      // uint8 sums stay below 256: the double sum converts to uint8 only while it fits.
      if (dtype == DType::UInt8 && shape_numel(shape) > 255) continue;
      const double lo = is_floating(dtype) ? -2 : dtype == DType::UInt8 ? 0 : -100;
      const double hi = is_floating(dtype) ? 2 : dtype == DType::UInt8 ? 1 : 100;
      for (Layout layout : kLayouts) {
        Pair x = make_pair(shape, dtype, layout, gen, lo, hi);
        for (int mask = 0; mask < 8; ++mask)  // mask 0: no axes given, which sums over all of them
          for (bool keep : {false, true}) {
            std::vector<int64_t> axes;
            int64_t count = 1;
            for (int64_t d = 0; d < 3; ++d) {
              if (!(mask >> d & 1)) continue;
              axes.push_back(keep && d == 2 ? -1 : d);  // a negative axis in half of the cases
              count *= shape[size_t(d)];
            }
            if (mask == 0) count = shape_numel(shape);
            INFO(describe("sum over axes " + shape_str(axes) + (keep ? " keepdims" : ""), {x.cpu}, layout));
            run_case([&] {
              expect_close(ops::sum(x.cpu, axes, keep), ops::sum(x.gpu, axes, keep),
                           tol_for(dtype, std::max(1.0, double(count) / 100)));
            });
          }
      }
    }

  // 0-d and 1-D inputs (2000: one long row), and a 4-D one with alternating summed and kept axes.
  const std::vector<std::pair<Shape, std::vector<std::vector<int64_t>>>> more = {
      {{}, {{}}},       {{7}, {{}, {0}}},  {{0}, {{}, {0}}},  {{1}, {{}, {-1}}}, {{2000}, {{}, {0}}},
      {{2, 3, 5, 7}, {{0, 2}, {1, 3}, {3}, {0, 1, 2}, {-1, 0}}}};
  for (DType dtype : {kF32, kF64, DType::Int32})
    for (const auto& m : more)
      for (Layout layout : kLayouts) {
        Pair x = make_pair(m.first, dtype, layout, gen, -100, 100);
        for (const std::vector<int64_t>& axes : m.second)
          for (bool keep : {false, true}) {
            INFO(describe("sum over axes " + shape_str(axes) + (keep ? " keepdims" : ""), {x.cpu}, layout));
            run_case([&] {
              expect_close(ops::sum(x.cpu, axes, keep), ops::sum(x.gpu, axes, keep),
                           tol_for(dtype, std::max(1.0, double(x.cpu.numel()) / 100)));
            });
          }
      }

  // Few outputs over many elements, split over many blocks in two passes (core/cuda/reduce.cu,
  // "Split sums"): a full sum of 10M + 19 elements (1024 pieces, the last one shorter), 4097
  // elements (two pieces of odd length), three long rows, column sums of tall matrices (one and
  // two blocks of 32 columns, cut into pieces of rows) and kept dims around a summed one.
  const std::vector<std::pair<Shape, std::vector<std::vector<int64_t>>>> split = {
      {{10000019}, {{}}},         {{4097}, {{0}}},       {{3, 333331}, {{1}, {}}},
      {{100003, 3}, {{0}, {-2}}}, {{2049, 33}, {{0}}},   {{7, 1031, 5}, {{0, 1}, {1}}}};
  for (DType dtype : {kF32, kF64, DType::Int32, DType::Int64})
    for (const auto& m : split)
      for (Layout layout : {Layout::Contiguous, Layout::Transposed}) {
        if (layout != Layout::Contiguous && m.first.size() == 1) continue;
        Pair x = make_pair(m.first, dtype, layout, gen, -100, 100);
        for (const std::vector<int64_t>& axes : m.second) {
          INFO(describe("sum over axes " + shape_str(axes), {x.cpu}, layout));
          run_case([&] {
            const Tensor got = ops::sum(x.gpu, axes);
            expect_close(ops::sum(x.cpu, axes), got, tol_for(dtype, std::max(1.0, double(x.cpu.numel()) / 100)));
            // The partition is fixed by the shape: the same bits every time.
            CHECK(ops::sum(x.gpu, axes).to_vector<double>() == got.to_vector<double>());
          });
        }
      }

  for (DType dtype : {kF32, kF64, DType::Int32, DType::Int64})
    for (Layout layout : kLayouts) {
      Pair x = make_pair({5, 7, 11}, dtype, layout, gen, -20, 20);
      for (const Shape& to : {Shape{7, 11}, Shape{1, 11}, Shape{5, 1, 11}, Shape{5, 7, 1}, Shape{1, 1, 1}, Shape{},
                              Shape{11}, Shape{7, 1}, Shape{5, 7, 11}}) {
        INFO(describe("sum_to " + shape_str(to), {x.cpu}, layout));
        run_case([&] { expect_close(ops::sum_to(x.cpu, to), ops::sum_to(x.gpu, to), tol_for(dtype, 4)); });
      }
    }

  const std::vector<std::pair<Shape, Shape>> broadcasts = {
      {{7}, {5, 7}},         {{5, 1}, {5, 7}}, {{}, {3, 5, 7}},    {{1, 11}, {13, 11}}, {{3, 1, 7}, {2, 3, 5, 7}},
      {{1}, {0, 4}},         {{7}, {1000, 7}}, {{5, 7}, {5, 7}},   {{1, 1}, {1, 1}}};
  for (DType dtype : kAllTypes)
    for (const auto& b : broadcasts)
      for (Layout layout : kLayouts) {
        Pair x = make_pair(b.first, dtype, layout, gen, 0, 100);
        INFO(describe("broadcast_to " + shape_str(b.second), {x.cpu}, layout));
        run_case([&] {
          expect_close(ops::broadcast_to(x.cpu, b.second), ops::broadcast_to(x.gpu, b.second), tol_for(dtype));
        });
      }
}

// Hidden (run by name: test_cuda_ops "[timing]", as scripts/gpu_validate.sh does): a full sum of
// 10M floats must use the whole device. Reading 40 MB takes ~15 us at an H100's 3.35 TB/s; on
// one block it took 0.5-1 ms. 200 sums are queued back to back and waited for once, so the
// mean is the device's time per sum unless the host cannot queue them as fast.
TEST_CASE("cuda ops: a sum of 10M floats takes well under 100 us", "[.][timing]") {
  Generator gen(40);
  const Tensor x = random_tensor({10000000}, kF32, gen).to(kGpu);
  for (int i = 0; i < 10; ++i) ops::sum(x);  // warm-up: the allocator's blocks, the kernels' first launch
  cuda::synchronize();
  constexpr int kSums = 200;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kSums; ++i) ops::sum(x);
  cuda::synchronize();
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / kSums;
  std::cout << "a sum of 10M floats: " << std::fixed << std::setprecision(1) << us << " us (mean of " << kSums
            << ")\n";
  CHECK(us < 100);
}

// Batch normalization's per-channel sums of an (outer, channels, inner) view, split over several
// blocks per channel (core/cuda/normalization.cu, "Channel sums"): pieces of whole rows, or runs
// of one row when a channel has fewer rows than pieces, then the pieces' partials added in a
// second pass. The views cut into pieces that do not divide the rows or the row evenly: a CNN
// layer (32 channels of 128 rows of 784: 22 pieces of 6 rows, the last of 2), rows cut in runs
// where a channel has fewer rows than pieces (1 x 1000003, 7 x 10007), inner 1 (100003 rows 3
// apart), one channel (4097 rows; 33 rows of 4099, cut in runs), rows narrower than a block (49
// and 3: several rows per pass of the block), and one piece a channel, in one pass: many
// channels, a tiny view, one element. Each in the three modes: [sum a, sum a^2],
// [sum a, sum a (b - center)], and B without a center.
TEST_CASE("cuda ops: channel_sums over channels split into many pieces, in every mode, the same bits when repeated",
          "[cuda][ops][normalization]") {
  const std::vector<ChannelView> views = {{128, 32, 784}, {1, 2, 1000003}, {7, 3, 10007}, {100003, 3, 1},
                                          {4097, 1, 1},   {33, 1, 4099},   {512, 100, 49}, {5001, 2, 3},
                                          {3, 2049, 1},   {2, 3, 4},       {1, 1, 1}};
  Generator gen(44);
  for (DType dtype : kFloatTypes)
    for (const ChannelView& v : views) {
      const Shape shape{v.outer, v.channels, v.inner};
      const Tensor a = random_tensor(shape, dtype, gen), b = random_tensor(shape, dtype, gen);
      const Tensor center = random_tensor({v.channels}, dtype, gen, -0.5, 0.5);
      const Tensor ag = a.to(kGpu), bg = b.to(kGpu), cg = center.to(kGpu);
      // float64 sums of OUTER x INNER terms, of float32 or float64 values alike
      const Tol tol = tol_for(kF64, std::max(1.0, double(v.outer * v.inner) / 100));
      const std::vector<std::pair<std::string, std::pair<Tensor, Tensor>>> modes = {
          {"[sum a, sum a^2]", {Tensor(), Tensor()}},
          {"[sum a, sum a (b - center)]", {b, center}},
          {"[sum a, sum a b]", {b, Tensor()}}};
      for (const auto& [mode, operands] : modes) {
        INFO("channel_sums " << mode << " of " << shape_str(shape) << " " << dtype_name(dtype));
        run_case([&] {
          const Tensor bd = operands.first.defined() ? bg : Tensor(), cd = operands.second.defined() ? cg : Tensor();
          const Tensor got = ops::channel_sums(ag, bd, cd, v);
          expect_close(ops::channel_sums(a, operands.first, operands.second, v), got, tol);
          // The partition is fixed by the shape: the same bits every time.
          expect_same_bits(got, ops::channel_sums(ag, bd, cd, v));
        });
      }
    }
}

// Batch normalization forward and backward where its channel sums take many pieces (above):
// the statistics are [sum x, sum x^2], x's gradient uses [sum gy, sum gy (x - mean)], and those
// are gamma's and beta's gradients. The channels apart (axis 1 of 3-D x) go through a transposed
// copy: a view of inner 1. Float32 as the functions' table (values O(1)); float64 per sum length.
TEST_CASE("cuda ops: batch_normalization at CNN sizes, forward and backward, equals the CPU's and repeats its bits",
          "[cuda][ops][normalization]") {
  struct BnCase {
    std::string name;
    Shape x, gamma;
    F::Axes axis;
  };
  const std::vector<BnCase> cases = {
      {"a CNN layer: 32 channels of 128 x 28 x 28", {128, 32, 28, 28}, {32}, {}},
      {"a batch of one large image", {1, 2, 300, 301}, {2}, {}},
      {"100 channels of 512 x 7 x 7", {512, 100, 7, 7}, {100}, {}},
      {"a linear layer's output: 100003 rows of 3", {100003, 3}, {3}, {}},
      {"one channel of 4097", {4097, 1}, {1}, {}},
      {"channels apart: (3, 20011, 2) over axis 1", {3, 20011, 2}, {3, 2}, F::Axes(1)},
  };
  Generator gen(45);
  for (DType dtype : kFloatTypes)
    for (const BnCase& c : cases) {
      INFO("batch_normalization: " << c.name << ", x " << shape_str(c.x) << " " << dtype_name(dtype));
      const Tensor x = random_tensor(c.x, dtype, gen), gy = random_tensor(c.x, dtype, gen, -1, 1);
      const Tensor gamma = random_tensor(c.gamma, dtype, gen, 0.5, 2), beta = random_tensor(c.gamma, dtype, gen);
      const int64_t count = shape_numel(c.x) / shape_numel(c.gamma);
      const Tol tol = dtype == kF32 ? Tol{1e-5, 1e-5} : tol_for(kF64, std::max(1.0, double(count) / 100));
      // y, then the gradients of x, gamma and beta
      const auto run = [&](Device device) {
        Variable xv(x.to(device), true), gv(gamma.to(device), true), bv(beta.to(device), true);
        F::BatchNormalizationOptions options;
        options.axis = c.axis;
        Variable y = F::batch_normalization(xv, gv, bv, options);
        y.set_grad(gy.to(device));
        y.backward();
        return std::vector<Tensor>{y.data(), xv.grad(), gv.grad(), bv.grad()};
      };
      run_case([&] {
        const std::vector<Tensor> want = run(kCpu), got = run(kGpu), again = run(kGpu);
        const char* const names[] = {"y", "the gradient of x", "the gradient of gamma", "the gradient of beta"};
        for (size_t i = 0; i < want.size(); ++i) {
          INFO(names[i]);
          expect_close(want[i], got[i], tol);
          expect_same_bits(got[i], again[i]);
        }
      });
    }
}

// Hidden (run by name with "[timing]", as scripts/gpu_validate.sh does): batch normalization's
// statistics of a CNN layer, the channel sums of 32 channels of 128 x 28 x 28 floats, must use
// the whole device: reading 12.8 MB takes ~4 us at an H100's 3.35 TB/s, where one block per
// channel kept 100 of its 132 SMs idle and each thread waited on ~400 loads in turn. As for the
// sum above, the mean over calls queued back to back is the device's time unless the host cannot
// queue them as fast.
TEST_CASE("cuda ops: the channel sums of 32 channels of 128 x 28 x 28 floats take well under 100 us",
          "[.][timing]") {
  Generator gen(46);
  const ChannelView view{128, 32, 784};
  const Tensor x = random_tensor({128, 32, 28, 28}, kF32, gen).to(kGpu);
  for (int i = 0; i < 10; ++i) ops::channel_sums(x, Tensor(), Tensor(), view);  // warm-up
  cuda::synchronize();
  constexpr int kCalls = 200;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kCalls; ++i) ops::channel_sums(x, Tensor(), Tensor(), view);
  cuda::synchronize();
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / kCalls;
  std::cout << "channel sums of (128, 32, 784) floats: " << std::fixed << std::setprecision(1) << us
            << " us (mean of " << kCalls << ")\n";
  CHECK(us < 100);
}

TEST_CASE("cuda ops: max, argmax, min, argmin along every axis, ties to the first; amax, amin over several axes",
          "[cuda][ops][reduction]") {
  Generator gen(5);
  // Values from a handful of integers, so most rows hold ties; (3, 1000) has rows longer than a warp.
  const std::vector<Shape> shapes = {{5, 7, 11}, {3, 1000}, {13, 11}, {7}, {1, 1}, {0, 5}, {2, 3, 5, 7}};
  for (DType dtype : kAllTypes)
    for (const Shape& shape : shapes)
      for (Layout layout : kLayouts) {
        Pair x = make_pair(shape, dtype, layout, gen, dtype == DType::UInt8 ? 0 : -2, 3, true);
        const int64_t nd = int64_t(shape.size());
        for (int64_t axis = -1; axis < nd; ++axis) {
          if (shape[size_t(axis < 0 ? axis + nd : axis)] == 0) continue;  // an error on both devices
          for (bool keep : {false, true}) {
            INFO(describe(str("max and argmax along axis ", axis, keep ? " keepdims" : ""), {x.cpu}, layout));
            run_case([&] {
              expect_close(ops::max(x.cpu, axis, keep), ops::max(x.gpu, axis, keep), tol_for(dtype));
              expect_close(ops::argmax(x.cpu, axis), ops::argmax(x.gpu, axis), tol_for(DType::Int32));
              expect_close(ops::min(x.cpu, axis, keep), ops::min(x.gpu, axis, keep), tol_for(dtype));
              expect_close(ops::argmin(x.cpu, axis), ops::argmin(x.gpu, axis), tol_for(DType::Int32));
            });
          }
        }
        // Several axes at once (all of them when none are named), negative ones included.
        std::vector<std::vector<int64_t>> axes_sets = {{}};
        if (nd >= 2) axes_sets.push_back({0, -1});
        if (nd >= 3) axes_sets.push_back({2, 0}), axes_sets.push_back({-2, -1});
        for (const std::vector<int64_t>& axes : axes_sets) {
          bool empty = false;
          for (int64_t d = 0; d < nd; ++d)
            empty |= shape[size_t(d)] == 0 && (axes.empty() || std::count(axes.begin(), axes.end(), d) ||
                                               std::count(axes.begin(), axes.end(), d - nd));
          if (empty) continue;  // an error on both devices
          for (bool keep : {false, true}) {
            INFO(describe(str("amax and amin over axes ", shape_str(axes), keep ? " keepdims" : ""), {x.cpu}, layout));
            run_case([&] {
              expect_close(ops::amax(x.cpu, axes, keep), ops::amax(x.gpu, axes, keep), tol_for(dtype));
              expect_close(ops::amin(x.cpu, axes, keep), ops::amin(x.gpu, axes, keep), tol_for(dtype));
            });
          }
        }
      }
}

TEST_CASE("cuda ops: matmul and gemm in every transpose mode, with k = 0 and empty products", "[cuda][ops][matmul]") {
  CHECK_FALSE(cuda::allow_tf32());  // float32 products in float32: TF32 would need a looser tolerance
  struct Mnk {
    int64_t m, n, k;
  };
  // (100, 10, 784) with B transposed is the CPU's few-columns kernel; (64, 33, 300) its packed one.
  const std::vector<Mnk> sizes = {{5, 7, 11},  {13, 1, 7}, {1, 13, 1}, {1, 1, 1}, {64, 33, 300},
                                  {100, 10, 784}, {5, 7, 0}, {0, 7, 11}, {5, 0, 11}, {0, 0, 0}};
  Generator gen(6);
  for (DType dtype : kFloatTypes)
    for (const Mnk& s : sizes)
      for (int mode = 0; mode < 4; ++mode)
        for (Layout layout : {Layout::Contiguous, Layout::Transposed}) {
          const bool ta = mode & 1, tb = mode & 2;
          Pair a = make_pair(ta ? Shape{s.k, s.m} : Shape{s.m, s.k}, dtype, layout, gen);
          Pair b = make_pair(tb ? Shape{s.n, s.k} : Shape{s.k, s.n}, dtype, layout, gen);
          INFO(describe(str("matmul (m, n, k) = (", s.m, ", ", s.n, ", ", s.k, ")", ta ? " a^T" : "", tb ? " b^T" : ""),
                        {a.cpu, b.cpu}, layout));
          // Sums of K products of O(1) values: the floor grows with K.
          run_case([&] {
            expect_close(ops::matmul(a.cpu, b.cpu, ta, tb), ops::matmul(a.gpu, b.gpu, ta, tb),
                         tol_for(dtype, std::max<double>(1, double(s.k))));
          });
        }

  // C = alpha op(A) op(B) + beta C. With beta 0, C is not read: NaN there must not come through.
  struct AlphaBeta {
    double alpha, beta;
    bool nan_c;
  };
  const std::vector<AlphaBeta> coefficients = {
      {1.5, -0.5, false}, {0.5, 0.0, true}, {-1.0, 1.0, false}, {0.0, 2.0, false}};
  for (DType dtype : kFloatTypes)
    for (const Mnk& s : {Mnk{5, 7, 11}, Mnk{13, 1, 7}, Mnk{64, 33, 300}, Mnk{5, 7, 0}})
      for (const AlphaBeta& ab : coefficients)
        for (int mode = 0; mode < 4; ++mode) {
          const bool ta = mode & 1, tb = mode & 2;
          Pair a = make_pair(ta ? Shape{s.k, s.m} : Shape{s.m, s.k}, dtype, Layout::Contiguous, gen);
          Pair b = make_pair(tb ? Shape{s.n, s.k} : Shape{s.k, s.n}, dtype, Layout::Contiguous, gen);
          const Tensor c0 = ab.nan_c ? Tensor::full({s.m, s.n}, kNaN, dtype) : random_tensor({s.m, s.n}, dtype, gen);
          Tensor cc = c0.clone(), cg = c0.to(kGpu);
          INFO(str("gemm alpha ", ab.alpha, " beta ", ab.beta, ab.nan_c ? " (C holds NaN)" : "", " (m, n, k) = (", s.m,
                   ", ", s.n, ", ", s.k, ")", ta ? " a^T" : "", tb ? " b^T" : "", " ", dtype_name(dtype)));
          run_case([&] {
            ops::gemm(a.cpu, ta, b.cpu, tb, ab.alpha, ab.beta, cc);
            ops::gemm(a.gpu, ta, b.gpu, tb, ab.alpha, ab.beta, cg);
            expect_close(cc, cg, tol_for(dtype, 2 * std::max<double>(1, double(s.k))));
          });
        }
}

namespace {
// A convolution case of the twin tables below: its name, the shapes of x and W, the geometry.
struct Conv {
  std::string name;
  Shape x, W;
  ops::Conv2dParams p;
};
}  // namespace

TEST_CASE("cuda ops: convolution_2d and its data and filter gradients over geometries, groups and chunks",
          "[cuda][ops][convolution]") {
  // "48 images" takes several chunks of lowered windows on the CPU (kConvLoweredBytes) and
  // several partial sums of the filter gradient; on CUDA each row is one cuDNN call per entry,
  // the cover_all rows through an image padded after its end.
  const std::vector<Conv> convs = {
      {"3x3 pad 1", {2, 3, 7, 6}, {4, 3, 3, 3}, {.ph = 1, .pw = 1}},
      {"stride 2, pad (1, 0), dilate (1, 2)", {3, 2, 9, 8}, {5, 2, 3, 2}, {.sy = 2, .sx = 2, .ph = 1, .dx = 2}},
      {"groups 3 (depthwise)", {2, 3, 5, 5}, {6, 1, 3, 3}, {.ph = 1, .pw = 1, .groups = 3}},
      {"1x1", {2, 8, 4, 5}, {3, 8, 1, 1}, {}},
      {"cover_all, stride 3", {1, 2, 7, 8}, {2, 2, 2, 3}, {.sy = 3, .sx = 3, .cover_all = true}},
      {"48 images in chunks", {48, 8, 64, 64}, {4, 8, 3, 3}, {.ph = 1, .pw = 1}},
      {"groups 2, stride 2, pad 2, dilate 2", {2, 4, 9, 10}, {6, 2, 3, 3},
       {.sy = 2, .sx = 2, .ph = 2, .pw = 2, .dy = 2, .dx = 2, .groups = 2}},
      {"depthwise multiplier 2, stride 2, cover_all", {2, 3, 6, 7}, {6, 1, 3, 3},
       {.sy = 2, .sx = 2, .groups = 3, .cover_all = true}},
      {"empty batch", {0, 3, 5, 5}, {4, 3, 3, 3}, {.ph = 1, .pw = 1}},
  };
  Generator gen(8);
  for (DType dtype : kFloatTypes)
    for (const Conv& c : convs) {
      INFO("convolution_2d " << c.name << " x " << shape_str(c.x) << " W " << shape_str(c.W) << " " << dtype_name(dtype));
      const Tensor x = random_tensor(c.x, dtype, gen, -1, 1), W = random_tensor(c.W, dtype, gen, -1, 1);
      const Tensor b = random_tensor({c.W[0]}, dtype, gen, -1, 1);
      run_case([&] {
        const Tensor y = ops::convolution_2d(x, W, b, c.p);
        const Tensor gy = random_tensor(y.shape(), dtype, gen, -1, 1);
        const double depth = double(c.W[1] * c.W[2] * c.W[3]);
        expect_close(y, ops::convolution_2d(x.to(kGpu), W.to(kGpu), b.to(kGpu), c.p),
                     for_convolution(tol_for(dtype, depth), dtype));
        expect_close(ops::convolution_2d_grad_data(gy, W, c.x[2], c.x[3], c.p),
                     ops::convolution_2d_grad_data(gy.to(kGpu), W.to(kGpu), c.x[2], c.x[3], c.p),
                     for_convolution(tol_for(dtype, double(c.W[0] * c.W[2] * c.W[3])), dtype));
        expect_close(ops::convolution_2d_grad_filter(x, gy, c.W[2], c.W[3], c.p),
                     ops::convolution_2d_grad_filter(x.to(kGpu), gy.to(kGpu), c.W[2], c.W[3], c.p),
                     for_convolution(tol_for(dtype, double(y.numel() / y.size(1))), dtype));
      });
    }
}

// A new thread whose first convolution is inside a graph capture, under autotune. The runtime's
// begin_capture first makes the capturing thread's library handles: cuBLAS's, and cuDNN's once a
// convolution has loaded cuDNN (a capture never loads it), so one of another shape runs here first.
// Nothing is made inside the capture: it succeeds and its replay gives the CPU's result. The shape,
// first met inside the capture, takes cuDNN's heuristic algorithm (core/cuda/cudnn_algorithms.h:
// nothing is timed while capturing); outside the capture the same shape is timed and agrees. With
// deterministic algorithms (the default) the gradients, summed over the batch, repeat bit for bit.
TEST_CASE("cuda ops: a thread's first convolution inside a graph capture under autotune, and deterministic gradients",
          "[cuda][ops][convolution]") {
  Generator gen(43);
  const ops::Conv2dParams p{.ph = 1, .pw = 1};
  const Tensor x = random_tensor({5, 6, 11, 13}, kF32, gen, -1, 1), W = random_tensor({7, 6, 3, 3}, kF32, gen, -1, 1);
  const Tensor b = random_tensor({7}, kF32, gen, -1, 1);
  const Tensor want = ops::convolution_2d(x, W, b, p);
  const Tensor xg = x.to(kGpu), Wg = W.to(kGpu), bg = b.to(kGpu);
  ops::convolution_2d(random_tensor({1, 2, 4, 4}, kF32, gen).to(kGpu), random_tensor({3, 2, 1, 1}, kF32, gen).to(kGpu),
                      Tensor(), {});
  cuda::synchronize();
  Tensor captured, timed;
  std::string error;
  std::thread first([&] {
    try {
      config::set_autotune(true);  // this thread's alone
      const std::unique_ptr<cuda::Graph> graph =
          cuda::Graph::capture(kGpu, [&] { captured = ops::convolution_2d(xg, Wg, bg, p); });
      captured.fill_(0.0);  // the replay must write it again
      graph->replay();
      cuda::synchronize();
      captured = captured.to(kCpu).to(kGpu);  // a copy that outlives the graph
      timed = ops::convolution_2d(xg, Wg, bg, p);
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  first.join();
  REQUIRE(error == "");
  // The captured convolution ran the heuristic's choice, the later one the fastest timed.
  expect_close(want, captured, for_convolution(tol_for(kF32, 54), kF32, !config::cudnn_deterministic()));
  expect_close(want, timed, for_convolution(tol_for(kF32, 54), kF32, true));

  if (!config::cudnn_deterministic()) return;  // CHAINER_CUDNN_DETERMINISTIC=0 (scripts/gpu_validate.sh)
  const Tensor gy = random_tensor(want.shape(), kF32, gen, -1, 1).to(kGpu);
  expect_same_bits(ops::convolution_2d_grad_filter(xg, gy, 3, 3, p).to(kCpu),
                   ops::convolution_2d_grad_filter(xg, gy, 3, 3, p).to(kCpu));
  expect_same_bits(ops::convolution_2d_grad_data(gy, Wg, 11, 13, p).to(kCpu),
                   ops::convolution_2d_grad_data(gy, Wg, 11, 13, p).to(kCpu));
}

// cuBLAS handles are per thread (core/cuda/blas_handles.h): products from several threads at once
// on the one compute stream; then a new thread whose first product is inside a graph capture. The
// runtime's begin_capture first gives the thread its handle and workspace, outside the graph, so
// nothing is made inside it: the capture succeeds, its replay gives the CPU's product, and with
// the graph gone the thread's products still equal the CPU's. Catch2's checks are not thread-safe:
// the threads keep their results and the checks run here.
TEST_CASE("cuda ops: matmul from four threads at once, and a thread's first product inside a graph capture",
          "[cuda][ops][matmul]") {
  constexpr int kThreads = 4, kRounds = 20;
  Generator gen(41);
  std::vector<Pair> as, bs;
  for (int t = 0; t < kThreads; ++t) {
    as.push_back(make_pair({64 + t, 300}, kF32, Layout::Contiguous, gen));
    bs.push_back(make_pair({300, 33}, kF32, Layout::Contiguous, gen));
  }
  std::vector<std::vector<Tensor>> got(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        for (int r = 0; r < kRounds; ++r) got[size_t(t)].push_back(ops::matmul(as[size_t(t)].gpu, bs[size_t(t)].gpu));
        cuda::synchronize();
      } catch (const std::exception& e) {
        errors[size_t(t)] = e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t);
    CHECK(errors[size_t(t)] == "");
    const Tensor want = ops::matmul(as[size_t(t)].cpu, bs[size_t(t)].cpu);
    for (const Tensor& g : got[size_t(t)]) expect_close(want, g, tol_for(kF32, 300));
  }

  Tensor captured, after;
  std::string error;
  std::thread first([&] {
    try {
      std::unique_ptr<cuda::Graph> graph =
          cuda::Graph::capture(kGpu, [&] { captured = ops::matmul(as[0].gpu, bs[0].gpu); });
      captured.fill_(0.0);  // the replay must write it again
      graph->replay();
      cuda::synchronize();
      captured = captured.to(kCpu).to(kGpu);  // a copy that outlives the graph
      graph.reset();
      after = ops::matmul(as[1].gpu, bs[1].gpu);
      cuda::synchronize();
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  first.join();
  CHECK(error == "");
  if (!error.empty()) return;
  expect_close(ops::matmul(as[0].cpu, bs[0].cpu), captured, tol_for(kF32, 300));
  expect_close(ops::matmul(as[1].cpu, bs[1].cpu), after, tol_for(kF32, 300));
}

TEST_CASE("cuda ops: concat and stack along each axis, empty and non-contiguous pieces", "[cuda][ops]") {
  Generator gen(7);
  for (DType dtype : {kF32, kF64, DType::Int32, DType::UInt8}) {
    for (int64_t axis : {0, 1, 2, -1}) {
      const int64_t ax = axis < 0 ? axis + 3 : axis;
      std::vector<Tensor> cpu, gpu;
      const int64_t extents[] = {2, 0, 3};
      for (int i = 0; i < 3; ++i) {
        Shape s{5, 7, 3};
        s[size_t(ax)] = extents[i];
        Pair p = make_pair(s, dtype, i == 2 ? Layout::Transposed : Layout::Contiguous, gen, 0, 100);
        cpu.push_back(p.cpu);
        gpu.push_back(p.gpu);
      }
      INFO(describe(str("concat along axis ", axis), cpu, Layout::Transposed));
      run_case([&] { expect_close(ops::concat(cpu, axis), ops::concat(gpu, axis), tol_for(dtype)); });
    }
    for (const Shape& s : {Shape{5, 7}, Shape{}, Shape{0, 4}}) {
      const int64_t nd = int64_t(s.size());
      for (int64_t axis = -1; axis <= nd; ++axis) {
        std::vector<Tensor> cpu, gpu;
        for (int i = 0; i < 3; ++i) {
          Pair p = make_pair(s, dtype, i == 1 ? Layout::Transposed : Layout::Contiguous, gen, 0, 100);
          cpu.push_back(p.cpu);
          gpu.push_back(p.gpu);
        }
        INFO(describe(str("stack along axis ", axis), cpu, Layout::Transposed));
        run_case([&] { expect_close(ops::stack(cpu, axis), ops::stack(gpu, axis), tol_for(dtype)); });
      }
    }
  }
}

TEST_CASE("cuda ops: take_rows gathers rows in any order, repeated, of any dtype and layout", "[cuda][ops]") {
  struct Case {
    Shape src;
    std::vector<int64_t> rows;
  };
  const std::vector<Case> cases = {{{13, 7}, {3, 0, 3, 12, 5}}, {{11}, {10, 0, 10}},   {{5, 3, 4}, {4, 4, 1}},
                                   {{9, 0}, {1, 2}},            {{6, 2}, {}},          {{1, 1}, {0, 0, 0}},
                                   {{1000, 33}, {999, 0, 500, 500, 1}}};
  Generator gen(8);
  for (DType dtype : kAllTypes)
    for (const Case& c : cases)
      for (Layout layout : kLayouts) {
        Pair x = make_pair(c.src, dtype, layout, gen, 0, 100);
        INFO(describe("take_rows " + shape_str(c.rows), {x.cpu}, layout));
        run_case([&] { expect_close(ops::take_rows(x.cpu, c.rows), ops::take_rows(x.gpu, c.rows), tol_for(dtype)); });
      }
  // A row out of range is checked on the host, so it throws at the call on the GPU too.
  const Tensor g = Tensor::zeros({4, 3}, kF32, kGpu);
  CHECK_THAT(error_of([&] { ops::take_rows(g, {1, 4}); }),
             Catch::Contains("take_rows") && Catch::Contains("row 4 is out of range"));
}

TEST_CASE("cuda ops: take and scatter_add_ along each axis, repeated and negative indices, any layout",
          "[cuda][ops][indexing]") {
  struct Case {
    Shape src;
    int64_t axis;
    std::vector<int64_t> indices;
    Shape index_shape;
  };
  const std::vector<Case> cases = {{{13, 7}, 0, {3, 0, -1, 12, 3}, {5}},  {{5, 3, 4}, 1, {2, -3, 2, 2}, {2, 2}},
                                   {{5, 3, 4}, -1, {3}, {}},              {{9, 0}, 0, {1, 2}, {2}},
                                   {{6, 2}, 1, {}, {0}},                  {{1, 1}, 0, {0, 0, 0}, {3}},
                                   {{1000, 33}, 0, {999, 0, 500, 500, 1}, {5}}, {{7, 1000, 3}, 1, {-1, 0, -1}, {3}}};
  Generator gen(21);
  for (const Case& c : cases) {
    const Tensor idx = Tensor::from_vector(c.indices, c.index_shape);
    for (DType dtype : kAllTypes)
      for (Layout layout : kLayouts) {
        Pair x = make_pair(c.src, dtype, layout, gen, 0, 100);
        INFO(describe(str("take ", shape_str(c.indices), " along axis ", c.axis), {x.cpu}, layout));
        run_case([&] { expect_close(ops::take(x.cpu, idx, c.axis), ops::take(x.gpu, idx.to(kGpu), c.axis), tol_for(dtype)); });
      }
    for (DType dtype : kFloatTypes) {
      // Into a random A, values of take's shape: repeated indices add on the GPU in any order.
      const Tensor a = random_tensor(c.src, dtype, gen);
      const Tensor values = random_tensor(ops::take(a, idx, c.axis).shape(), dtype, gen);
      INFO(describe(str("scatter_add_ ", shape_str(c.indices), " along axis ", c.axis), {a, values}, Layout::Contiguous));
      run_case([&] {
        Tensor want = a.clone(), got = a.to(kGpu);
        ops::scatter_add_(want, idx, c.axis, values);
        ops::scatter_add_(got, idx.to(kGpu), c.axis, values.to(kGpu));
        expect_close(want, got, tol_for(dtype, 4));
      });
    }
  }
  // Host indices are checked at the call; indices made on the device, at the next host read.
  const Tensor g = Tensor::zeros({4, 3}, kF32, kGpu);
  CHECK_THAT(error_of([&] { ops::take(g, Tensor::from_vector<int64_t>({1, 4}), 0); }),
             Catch::Contains("take: index 4 is out of bounds for axis 0 with size 4"));
  Tensor out;
  REQUIRE_NOTHROW(out = ops::take(g, Tensor::from_vector<int64_t>({0, -5, 1}).to(kGpu), 0));
  CHECK_THAT(error_of([&] { out.to_vector<float>(); }),
             Catch::Contains("take: index -5 is out of bounds for axis 0 with size 4 (at position 1 of the indices)"));
  Tensor acc = Tensor::zeros({4, 3}, kF32, kGpu);
  REQUIRE_NOTHROW(ops::scatter_add_(acc, Tensor::from_vector<int64_t>({3}).to(kGpu), 1, Tensor::ones({4, 1}, kF32, kGpu)));
  CHECK_THAT(error_of([] { cuda::synchronize(); }),
             Catch::Contains("scatter_add: index 3 is out of bounds for axis 1 with size 3"));
  CHECK(error_of([] { cuda::synchronize(); }) == "no exception");
  // get_item with indices on the device: the same deferred report, naming take.
  const Variable x(Tensor::zeros({2, 5}, kF32, kGpu));
  Variable y;
  REQUIRE_NOTHROW(y = F::get_item(x, {Slice(), Tensor::from_vector<int32_t>({7}).to(kGpu)}));
  CHECK_THAT(error_of([&] { y.data().to_vector<float>(); }),
             Catch::Contains("take: index 7 is out of bounds for axis 1 with size 5"));
}

TEST_CASE("cuda ops: accumulate_ adds one-element values into a float64 accumulator", "[cuda][ops]") {
  Tensor acc_c = Tensor::zeros({}, kF64), acc_g = Tensor::zeros({}, kF64, kGpu);
  Tensor acc1_c = Tensor::zeros({1}, kF64), acc1_g = Tensor::zeros({1}, kF64, kGpu);
  Generator gen(9);
  for (int i = 0; i < 40; ++i) {
    // 0-d, (1,) and (1, 1) values, float32 and float64, and a one-element view at an offset.
    const DType dtype = i % 2 ? kF32 : kF64;
    const Tensor base = random_tensor({5}, dtype, gen, -1000, 1000);
    const Tensor value =
        i % 4 == 0 ? base.narrow(0, 3, 1) : base.narrow(0, 0, 1).reshape(i % 4 == 1 ? Shape{} : Shape{1, 1});
    INFO("accumulate_ step " << i << ": value " << shape_str(value.shape()) << " " << dtype_name(dtype));
    run_case([&] {
      const Tensor vg = i % 4 == 0 ? base.to(kGpu).narrow(0, 3, 1) : value.to(kGpu);
      ops::accumulate_(acc_c, value);
      ops::accumulate_(acc_g, vg);
      ops::accumulate_(acc1_c, value);
      ops::accumulate_(acc1_g, vg);
    });
  }
  // One addition in double per step on both devices: the same bits.
  expect_same_bits(acc_c, acc_g);
  expect_same_bits(acc1_c, acc1_g);
  CHECK(acc_g.device().str() == "cuda:0");
}

TEST_CASE("cuda ops: softmax_cross_entropy and its gradient for every reduction and ignored rows",
          "[cuda][ops][loss]") {
  struct Case {
    const char* name;
    int64_t n, c, ignore_label;
    double ignored;  // the fraction of rows labelled IGNORE_LABEL
  };
  // (300, 10): more rows than the summing block's threads; (100, 1000): long rows; (20011, 7)
  // and (300001, 3): the sum over the rows split over 10 blocks and over 128 (the most).
  const std::vector<Case> cases = {{"(7, 5)", 7, 5, -1, 0.3},
                                   {"(13, 11), ignore_label 3 (a class index)", 13, 11, 3, 0.3},
                                   {"(100, 1000)", 100, 1000, -1, 0.1},
                                   {"(300, 10)", 300, 10, -1, 0.2},
                                   {"(20011, 7)", 20011, 7, -1, 0.2},
                                   {"(300001, 3), ignore_label 2", 300001, 3, 2, 0.1},
                                   {"(1, 1)", 1, 1, -1, 0.0},
                                   {"(0, 5): no rows", 0, 5, -1, 0.0},
                                   {"(4, 6): every row ignored", 4, 6, -1, 1.0}};
  const std::pair<LossReduction, const char*> reductions[] = {
      {LossReduction::None, "None"}, {LossReduction::MeanOverValid, "MeanOverValid"},
      {LossReduction::MeanOverBatch, "MeanOverBatch"}};
  Generator gen(10);
  for (const Case& c : cases)
    for (DType dtype : kFloatTypes)
      for (Layout layout : {Layout::Contiguous, Layout::Transposed}) {
        Pair x = make_pair({c.n, c.c}, dtype, layout, gen, -3, 3);
        std::vector<int32_t> labels;
        for (int64_t i = 0; i < c.n; ++i)
          labels.push_back(gen.uniform() < c.ignored ? int32_t(c.ignore_label) : int32_t(gen.below(uint64_t(c.c))));
        const Tensor t = Tensor::from_vector(labels), tg = t.to(kGpu);
        for (const auto& r : reductions) {
          INFO(str("softmax_cross_entropy ", c.name, " ", dtype_name(dtype), ", ", layout_name(layout, {x.cpu}),
                   ", reduction ", r.second));
          run_case([&] {
            const ops::CrossEntropyResult want = ops::softmax_cross_entropy(x.cpu, t, c.ignore_label, r.first);
            const ops::CrossEntropyResult got = ops::softmax_cross_entropy(x.gpu, tg, c.ignore_label, r.first);
            {
              INFO("loss");
              expect_close(want.loss, got.loss, tol_for(dtype));
            }
            {
              INFO("lse");
              expect_close(want.lse, got.lse, tol_for(dtype));
            }
            {
              INFO("scale");
              CHECK(std::string(dtype_name(got.scale.dtype())) == "float64");
              expect_close(want.scale, got.scale, tol_for(kF64));
            }
            // The gradient from one shared gloss and from one per row; scale from the same device.
            const Tensor shared = random_tensor({}, dtype, gen, 0.5, 1.5), per_row = random_tensor({c.n}, dtype, gen);
            for (const Tensor& gloss : {shared, per_row}) {
              INFO("gradient, gloss of shape " << shape_str(gloss.shape()));
              expect_close(ops::softmax_cross_entropy_grad(x.cpu, t, want.lse, gloss, want.scale, c.ignore_label),
                           ops::softmax_cross_entropy_grad(x.gpu, tg, got.lse, gloss.to(kGpu), got.scale,
                                                           c.ignore_label),
                           tol_for(dtype));
            }
          });
        }
      }
}

TEST_CASE("cuda ops: sigmoid_cross_entropy and its gradient with ignored labels, large logits, views",
          "[cuda][ops][loss]") {
  const std::vector<Shape> shapes = {{7, 5}, {13, 11}, {1000, 10}, {3, 5, 7}, {1}, {}, {0, 5}};
  Generator gen(13);
  for (const Shape& shape : shapes)
    for (DType dtype : kFloatTypes)
      for (Layout layout : {Layout::Contiguous, Layout::Transposed}) {
        // Logits up to 40 in size (exp(-|x|) underflows in float32 there); labels -1, 0 and 1.
        Pair x = make_pair(shape, dtype, layout, gen, -40, 40);
        Pair t = make_pair(shape, DType::Int32, layout, gen, -1, 1);
        INFO(describe("sigmoid_cross_entropy", {x.cpu, t.cpu}, layout));
        run_case([&] {
          expect_close(ops::sigmoid_cross_entropy(x.cpu, t.cpu), ops::sigmoid_cross_entropy(x.gpu, t.gpu),
                       tol_for(dtype));
          const Tensor shared = random_tensor({}, dtype, gen, 0.5, 1.5), each = random_tensor(shape, dtype, gen);
          for (const Tensor& gy : {shared, each}) {
            INFO("gradient, gy of shape " << shape_str(gy.shape()));
            expect_close(ops::sigmoid_cross_entropy_grad(x.cpu, t.cpu, gy),
                         ops::sigmoid_cross_entropy_grad(x.gpu, t.gpu, gy.to(kGpu)), tol_for(dtype));
          }
        });
      }
}

TEST_CASE("cuda ops: a label out of range throws at the next host read, and the device stays usable",
          "[cuda][ops][loss]") {
  // The CPU checks labels before any work and throws at the call
  // (tests/nn/functions/test_softmax_cross_entropy.cpp); the GPU kernel records the first bad label
  // and the next read on the host reports it (core/device/cuda.h, "Device errors").
  Generator gen(11);
  const Tensor x = random_tensor({3, 10}, kF32, gen), xg = x.to(kGpu);
  SECTION("read by item()") {
    ops::CrossEntropyResult r;
    REQUIRE_NOTHROW(r = ops::softmax_cross_entropy(xg, Tensor::from_vector<int32_t>({1, 10, 2}).to(kGpu), -1,
                                                   LossReduction::MeanOverValid));
    CHECK_THAT(error_of([&] { r.loss.item<float>(); }),
               Catch::Contains("label") && Catch::Contains("out of range") && Catch::Contains("label 10 at index 1"));
  }
  SECTION("read by cuda::synchronize()") {
    REQUIRE_NOTHROW(ops::softmax_cross_entropy(xg, Tensor::from_vector<int32_t>({1, 2, -3}).to(kGpu)));
    CHECK_THAT(error_of([] { cuda::synchronize(); }),
               Catch::Contains("label") && Catch::Contains("out of range") && Catch::Contains("label -3 at index 2"));
  }
  SECTION("read by an unrelated copy to the host") {
    REQUIRE_NOTHROW(ops::softmax_cross_entropy(xg, Tensor::from_vector<int32_t>({99, 2, 1}).to(kGpu)));
    const Tensor other = ops::add(xg, xg);
    CHECK_THAT(error_of([&] { other.to_vector<float>(); }),
               Catch::Contains("label") && Catch::Contains("out of range") && Catch::Contains("label 99 at index 0"));
  }
  // Reported once; then the device computes and reads as before.
  CHECK(error_of([] { cuda::synchronize(); }) == "no exception");
  INFO("after the reported error");
  const Tensor t = Tensor::from_vector<int32_t>({1, 9, 0});
  expect_close(ops::softmax_cross_entropy(x, t, -1, LossReduction::MeanOverValid).loss,
               ops::softmax_cross_entropy(xg, t.to(kGpu), -1, LossReduction::MeanOverValid).loss, tol_for(kF32));
  expect_close(ops::mul(x, x), ops::mul(xg, xg), tol_for(kF32));
}

TEST_CASE("cuda ops: dropout_mask is the CPU's mask bit for bit from a generator of the same seed", "[cuda][ops]") {
  uint64_t seed = 100;
  for (const Shape& shape : {Shape{}, Shape{0}, Shape{1}, Shape{5, 7}, Shape{13, 11, 3}, Shape{1000, 1001}})
    for (double ratio : {0.0, 0.3, 0.5, 0.9})
      for (DType dtype : kFloatTypes) {
        INFO("dropout_mask " << shape_str(shape) << " ratio " << ratio << " " << dtype_name(dtype) << " seed " << seed);
        run_case([&] {
          Generator a(seed), b(seed);
          for (int draw = 0; draw < 2; ++draw) {  // the second mask from the advanced generators
            INFO("mask " << draw);
            const Tensor want = ops::dropout_mask(shape, ratio, dtype, kCpu, a);
            const Tensor got = ops::dropout_mask(shape, ratio, dtype, kGpu, b);
            CHECK(got.device().str() == "cuda:0");
            expect_same_bits(want, got);
          }
          CHECK(a.next_u64() == b.next_u64());  // one draw per mask on both, empty masks included
        });
        ++seed;
      }
}

TEST_CASE("cuda ops: random_normal equals the CPU's samples from a generator of the same seed", "[cuda][ops]") {
  uint64_t seed = 300;
  for (const Shape& shape : {Shape{}, Shape{0}, Shape{1}, Shape{5, 7}, Shape{13, 11, 3}, Shape{1000, 1001}})
    for (DType dtype : kFloatTypes) {
      INFO("random_normal " << shape_str(shape) << " " << dtype_name(dtype) << " seed " << seed);
      run_case([&] {
        Generator a(seed), b(seed);
        for (int draw = 0; draw < 2; ++draw) {
          INFO("tensor " << draw);
          const Tensor want = ops::random_normal(shape, 0.5, 2.0, dtype, kCpu, a);
          const Tensor got = ops::random_normal(shape, 0.5, 2.0, dtype, kGpu, b);
          CHECK(got.device().str() == "cuda:0");
          // The device's log, sin and cos may differ from glibc's in the last bits of a double,
          // which can move a float32 sample by one unit in its last place.
          expect_close(want, got, dtype == kF32 ? Tol{2.5e-7, 1e-7} : Tol{1e-12, 1e-12});
        }
        CHECK(a.next_u64() == b.next_u64());  // one draw per tensor on both, empty ones included
      });
      ++seed;
    }
}

TEST_CASE("cuda ops: accuracy with ties, ignored labels and a 3-D input", "[cuda][ops]") {
  struct Case {
    Shape y;
    int64_t ignore_label;
    double ignored;
  };
  // (1000, 10) and (300, 4, 2): more rows than a block's threads; (20011, 3), (5001, 3, 2) and
  // (300001, 2): the counts split over 10, 5 and 128 (the most) blocks.
  const std::vector<Case> cases = {{{7, 5}, -1, 0.3},       {{13, 11, 3}, -1, 0.2}, {{1000, 10}, 2, 0.1},
                                   {{300, 4, 2}, -1, 0.0},    {{0, 5}, -1, 0.0},      {{1, 1}, -1, 0.0},
                                   {{4, 6}, -1, 1.0},         {{20011, 3}, -1, 0.1},  {{5001, 3, 2}, -1, 0.0},
                                   {{300001, 2}, 1, 0.05}};
  Generator gen(12);
  for (const Case& c : cases)
    for (DType dtype : kFloatTypes)
      for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::SwappedAxes}) {
        Pair y = make_pair(c.y, dtype, layout, gen, 0, 2, true);  // ties: the first maximum counts
        Shape ts = c.y;
        ts.erase(ts.begin() + 1);
        std::vector<int32_t> labels(size_t(shape_numel(ts)));
        for (int32_t& l : labels)
          l = gen.uniform() < c.ignored ? int32_t(c.ignore_label) : int32_t(gen.below(uint64_t(c.y[1])));
        const Tensor t = Tensor::from_vector(labels, ts);
        INFO(describe(str("accuracy, ignore_label ", c.ignore_label), {y.cpu, t}, layout));
        run_case([&] {
          expect_close(ops::accuracy(y.cpu, t, c.ignore_label), ops::accuracy(y.gpu, t.to(kGpu), c.ignore_label),
                       tol_for(dtype));
        });
      }
}

namespace {
const std::vector<UpdateRule> kAllRules = {UpdateRule::SGD,        UpdateRule::MomentumSGD, UpdateRule::Adam,
                                            UpdateRule::AMSGrad,    UpdateRule::AdaGrad,     UpdateRule::RMSprop,
                                            UpdateRule::AdaDelta,   UpdateRule::NesterovAG,  UpdateRule::RMSpropGraves,
                                            UpdateRule::SMORMS3};

struct ParamSpec {
  Shape shape;
  DType dtype;
};

// The tensors RULE reads for one parameter of SPEC, appended to CPU and (copied) to GPU.
void add_param(UpdateRule rule, const ParamSpec& spec, Generator& gen, std::vector<ParamTensors>& cpu,
               std::vector<ParamTensors>& gpu) {
  ParamTensors p{random_tensor(spec.shape, spec.dtype, gen, -1, 1), random_tensor(spec.shape, spec.dtype, gen, -1, 1),
                 Tensor(), Tensor(), Tensor()};
  const auto ranges = chainer::testing::update_state_ranges(rule);
  REQUIRE(int(ranges.size()) == update_rule_states(rule));
  Tensor* states[] = {&p.state0, &p.state1, &p.state2};
  for (size_t k = 0; k < ranges.size(); ++k)
    *states[k] = random_tensor(spec.shape, spec.dtype, gen, ranges[k].first, ranges[k].second);
  cpu.push_back(p);
  gpu.push_back({p.param.to(kGpu), p.grad.to(kGpu), p.state0.to(kGpu), p.state1.to(kGpu), p.state2.to(kGpu)});
}

// Three steps of RULE over parameters of SPECS on both devices, with scalars that differ per
// parameter and per step and come only through the function; then every tensor compared.
void check_update(UpdateRule rule, const std::vector<ParamSpec>& specs, uint64_t seed) {
  Generator gen(seed);
  std::vector<ParamTensors> cpu, gpu;
  for (const ParamSpec& s : specs) add_param(rule, s, gen, cpu, gpu);
  int step = 0;
  const UpdateScalarsFn scalars = [&step](size_t i) { return chainer::testing::update_test_scalars(i, step); };
  for (step = 0; step < 3; ++step) {
    ops::update_(rule, cpu, scalars);
    ops::update_(rule, gpu, scalars);
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    INFO(update_rule_name(rule) << " parameter " << i << " of " << specs.size() << ": " << shape_str(specs[i].shape) << " "
                         << dtype_name(specs[i].dtype));
    const Tol tol = tol_for(specs[i].dtype);
    {
      INFO("param");
      expect_close(cpu[i].param, gpu[i].param, tol);
    }
    const Tensor ParamTensors::*states[] = {&ParamTensors::state0, &ParamTensors::state1, &ParamTensors::state2};
    for (int k = 0; k < update_rule_states(rule); ++k) {
      INFO("state" << k);
      expect_close(cpu[i].*states[k], gpu[i].*states[k], tol);
    }
  }
}
}  // namespace

TEST_CASE("cuda ops: update_ steps every optimizer rule as the CPU does", "[cuda][update]") {
  // One of over a million elements, one element, 0-d, empty, and float32 beside float64 in one call.
  const std::vector<ParamSpec> specs = {{{1100, 1000}, kF32}, {{1}, kF32}, {{5, 7}, kF64}, {{13}, kF32},
                                        {{0}, kF32},          {{}, kF64},  {{3, 1, 11}, kF64}};
  // More parameters than one launch takes (48), of both dtypes: per-parameter scalars across launches.
  std::vector<ParamSpec> many;
  for (int i = 0; i < 100; ++i) many.push_back({{1 + i % 7, 3}, i % 3 == 0 ? kF64 : kF32});
  for (UpdateRule rule : kAllRules) {
    run_case([&] { check_update(rule, specs, 20); });
    run_case([&] { check_update(rule, many, 21); });
  }

  // The single-parameter forms.
  Generator gen(22);
  for (DType dtype : kFloatTypes) {
    std::vector<ParamTensors> cpu, gpu;
    add_param(UpdateRule::Adam, {{5, 7}, dtype}, gen, cpu, gpu);
    const ops::AdamStep step{
        .lr = 0.003, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .eta = 0.5, .weight_decay_rate = 0.01};
    INFO("adam_update_ and momentum_sgd_update_ " << dtype_name(dtype));
    run_case([&] {
      ops::adam_update_(cpu[0].param, cpu[0].grad, cpu[0].state0, cpu[0].state1, step);
      ops::adam_update_(gpu[0].param, gpu[0].grad, gpu[0].state0, gpu[0].state1, step);
      ops::momentum_sgd_update_(cpu[0].param, cpu[0].grad, cpu[0].state0, 0.01, 0.9);
      ops::momentum_sgd_update_(gpu[0].param, gpu[0].grad, gpu[0].state0, 0.01, 0.9);
      expect_close(cpu[0].param, gpu[0].param, tol_for(dtype));
      expect_close(cpu[0].state0, gpu[0].state0, tol_for(dtype));
      expect_close(cpu[0].state1, gpu[0].state1, tol_for(dtype));
    });
  }
}

TEST_CASE("cuda ops: clip_grads_by_norm_ when it clips and when it does not, and sum_of_squares", "[cuda][update]") {
  Generator gen(23);
  const std::vector<ParamSpec> specs = {{{1100, 1000}, kF32}, {{1}, kF32}, {{5, 7}, kF64},
                                        {{13}, kF32},         {{}, kF64},  {{0}, kF32}};
  std::vector<Tensor> originals;
  for (const ParamSpec& s : specs) originals.push_back(random_tensor(s.shape, s.dtype, gen, -1, 1));
  // The norm is about sqrt(1.1e6 / 3) = 605.
  for (double threshold : {10.0, 1e4}) {
    std::vector<Tensor> cpu, gpu;
    for (const Tensor& g : originals) {
      cpu.push_back(g.clone());
      gpu.push_back(g.to(kGpu));
    }
    run_case([&] {
      ops::clip_grads_by_norm_(cpu, threshold);
      ops::clip_grads_by_norm_(gpu, threshold);
    });
    for (size_t i = 0; i < specs.size(); ++i) {
      INFO("clip_grads_by_norm_ threshold " << threshold << ", gradient " << i << " " << shape_str(specs[i].shape)
                                            << " " << dtype_name(specs[i].dtype));
      expect_close(cpu[i], gpu[i], tol_for(specs[i].dtype));
      if (threshold > 1e3) expect_same_bits(originals[i], gpu[i]);  // not clipped: not touched
    }
  }
  std::vector<Tensor> none;
  CHECK_NOTHROW(ops::clip_grads_by_norm_(none, 1.0));

  // Both accumulate squares in double: only the order differs (~sqrt(n) ulps for n terms).
  for (DType dtype : kFloatTypes)
    for (const Shape& shape : {Shape{}, Shape{0}, Shape{1}, Shape{5, 7}, Shape{13, 11, 3}, Shape{1100, 1000}})
      for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Narrowed}) {
        Pair x = make_pair(shape, dtype, layout, gen);
        INFO(describe("sum_of_squares", {x.cpu}, layout));
        run_case([&] { CHECK(ops::sum_of_squares(x.gpu) == Approx(ops::sum_of_squares(x.cpu)).epsilon(1e-12)); });
      }
}

TEST_CASE("cuda ops: an op on tensors of two devices throws naming the op and both devices", "[cuda][ops][errors]") {
  Generator gen(24);
  const Tensor c = random_tensor({5, 7}, kF32, gen), g = c.to(kGpu);
  const Tensor labels_c = Tensor::from_vector<int32_t>({0, 1, 2, 3, 4}), labels_g = labels_c.to(kGpu);
  const Tensor lse_g = Tensor::zeros({5}, kF32, kGpu), scale_c = Tensor::ones({}, kF64);
  const std::vector<std::pair<const char*, std::function<void()>>> cases = {
      {"add", [&] { ops::add(c, g); }},
      {"mul", [&] { ops::mul(g, c); }},
      {"relu_grad", [&] { ops::relu_grad(g, c); }},
      {"matmul", [&] { ops::matmul(c, g, false, true); }},
      {"matmul", [&] {
         Tensor out = Tensor::zeros({5, 5}, kF32);  // gemm into a CPU output
         ops::gemm(g, false, g, true, 1.0, 0.0, out);
       }},
      {"concat", [&] { ops::concat({g, c}, 0); }},
      {"stack", [&] { ops::stack({c, g}, 0); }},
      {"axpy", [&] {
         Tensor y = g.clone();
         ops::axpy_(y, 1.0, c);
       }},
      {"accumulate", [&] {
         Tensor acc = Tensor::zeros({}, kF64, kGpu);
         ops::accumulate_(acc, c.narrow(0, 0, 1).narrow(1, 0, 1));
       }},
      {"softmax_grad", [&] { ops::softmax_grad(g, c); }},
      {"add_bias", [&] {
         Tensor y = g.clone();
         ops::add_bias_(y, Tensor::zeros({7}));
       }},
      {"softmax_cross_entropy", [&] { ops::softmax_cross_entropy(g, labels_c); }},
      {"softmax_cross_entropy_grad", [&] { ops::softmax_cross_entropy_grad(g, labels_g, lse_g, g, scale_c); }},
      {"accuracy", [&] { ops::accuracy(g, labels_c); }},
      {"sgd", [&] {
         std::vector<ParamTensors> p{{g.clone(), c, Tensor(), Tensor(), Tensor()}};
         ops::update_(UpdateRule::SGD, p, [](size_t) { return UpdateScalars{.lr = 0.1}; });
       }},
      {"GradientClipping", [&] {
         std::vector<Tensor> grads{g.clone(), c.clone()};
         ops::clip_grads_by_norm_(grads, 1.0);
       }},
  };
  for (const auto& e : cases) {
    INFO("the op: " << e.first);
    const std::string message = error_of(e.second);
    CHECK_THAT(message, Catch::StartsWith(std::string(e.first) + ":") && Catch::Contains("cpu") &&
                            Catch::Contains("cuda:0"));
  }
}

// ---- Tensor methods that move memory ----

namespace {
// Random bytes: every exponent of the float types (denormals, infinities, NaN payloads) and the
// whole range of the integers. NaNs are made quiet: a signalling NaN may legitimately be quieted
// by a move through a floating-point register, which no copy here promises to avoid.
Tensor random_bits(const Shape& shape, DType dtype, Generator& gen) {
  Tensor t = Tensor::empty(shape, dtype);
  auto* p = static_cast<unsigned char*>(t.raw_data());
  for (size_t i = 0; i < t.nbytes(); ++i) p[i] = uint8_t(gen.next_u64() >> 56);
  if (dtype == kF32) {
    for (int64_t i = 0; i < t.numel(); ++i) {
      uint32_t bits;
      std::memcpy(&bits, p + 4 * i, 4);
      if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu)) bits |= 0x00400000u;
      std::memcpy(p + 4 * i, &bits, 4);
    }
  } else if (dtype == kF64) {
    for (int64_t i = 0; i < t.numel(); ++i) {
      uint64_t bits;
      std::memcpy(&bits, p + 8 * i, 8);
      if ((bits & 0x7ff0000000000000ull) == 0x7ff0000000000000ull && (bits & 0x000fffffffffffffull))
        bits |= 0x0008000000000000ull;
      std::memcpy(p + 8 * i, &bits, 8);
    }
  }
  return t;
}

using ViewFn = std::function<Tensor(const Tensor&)>;
// Views of a (7, 5, 3) base: packed, transposed, permuted, narrowed, indexed, reshaped, empty.
const std::vector<std::pair<const char*, ViewFn>>& views() {
  static const std::vector<std::pair<const char*, ViewFn>> v = {
      {"the whole tensor", [](const Tensor& t) { return t; }},
      {"transpose()", [](const Tensor& t) { return t.transpose(); }},
      {"transpose({1, 0, 2})", [](const Tensor& t) { return t.transpose({1, 0, 2}); }},
      {"narrow(2, 1, 2)", [](const Tensor& t) { return t.narrow(2, 1, 2); }},
      {"narrow(0, 2, 4).transpose()", [](const Tensor& t) { return t.narrow(0, 2, 4).transpose(); }},
      {"[3]", [](const Tensor& t) { return t[3]; }},
      {"[3][1]", [](const Tensor& t) { return t[3][1]; }},
      {"[6][4][2] (0-d)", [](const Tensor& t) { return t[6][4][2]; }},
      {"reshape({35, 3})", [](const Tensor& t) { return t.reshape({35, 3}); }},
      {"narrow(1, 0, 0) (empty)", [](const Tensor& t) { return t.narrow(1, 0, 0); }},
  };
  return v;
}
}  // namespace

TEST_CASE("cuda tensor: to() round trips are bit-exact for every dtype and layout", "[cuda][tensor]") {
  Generator gen(30);
  for (DType dtype : kAllTypes) {
    const Tensor base = random_bits({7, 5, 3}, dtype, gen);
    const Tensor gbase = base.to(kGpu);
    CHECK(gbase.device().str() == "cuda:0");
    CHECK(gbase.to(kGpu).shares_storage(gbase));  // already there: no copy
    CHECK(base.to(kCpu).shares_storage(base));
    for (const auto& v : views()) {
      const Tensor cpu_view = v.second(base), gpu_view = v.second(gbase);
      INFO(dtype_name(dtype) << " " << v.first << " " << shape_str(cpu_view.shape()));
      run_case([&] {
        const Tensor up = cpu_view.to(kGpu);  // a strided host source, packed on the way
        CHECK(up.device().str() == "cuda:0");
        CHECK(up.is_contiguous());
        expect_same_bits(cpu_view, up);
        expect_same_bits(cpu_view, up.to(kCpu));
        expect_same_bits(cpu_view, gpu_view.to(kCpu));  // a strided device source
        const Tensor packed = gpu_view.contiguous(), copy = gpu_view.clone();
        CHECK(packed.device().str() == "cuda:0");
        CHECK(packed.is_contiguous());
        CHECK((packed.shares_storage(gbase) == gpu_view.is_contiguous()));  // copies only when needed
        CHECK_FALSE(copy.shares_storage(gbase));
        CHECK(copy.device().str() == "cuda:0");
        expect_same_bits(cpu_view, packed);
        expect_same_bits(cpu_view, copy);
        expect_same_bits(cpu_view.reshape({-1}), gpu_view.reshape({-1}));
      });
    }
  }
}

TEST_CASE("cuda tensor: fill_ and copy_ write every element of their view and nothing else", "[cuda][tensor]") {
  Generator gen(31);
  // Destination views of a (6, 4) base whose other elements hold a sentinel.
  const std::vector<std::pair<const char*, ViewFn>> dst_views = {
      {"the whole (6, 4)", [](const Tensor& t) { return t; }},
      {"transpose()", [](const Tensor& t) { return t.transpose(); }},
      {"narrow(1, 1, 2)", [](const Tensor& t) { return t.narrow(1, 1, 2); }},
      {"narrow(0, 1, 4).transpose()", [](const Tensor& t) { return t.narrow(0, 1, 4).transpose(); }},
      {"[2]", [](const Tensor& t) { return t[2]; }},
      {"[5][3] (0-d)", [](const Tensor& t) { return t[5][3]; }},
      {"narrow(0, 2, 0) (empty)", [](const Tensor& t) { return t.narrow(0, 2, 0); }},
  };
  // Source and destination dtypes: the same, and conversions (values in [0, 100), so every one
  // is defined).
  const std::vector<std::pair<DType, DType>> dtypes = {
      {kF32, kF32}, {kF64, kF64}, {DType::Int32, DType::Int32}, {DType::Int64, DType::Int64},
      {DType::UInt8, DType::UInt8},  // the same dtype; then conversions
      {kF64, kF32}, {kF32, kF64}, {DType::Int32, kF64}, {kF32, DType::Int32}, {DType::UInt8, DType::Int64},
      {DType::Int64, kF32}};
  for (const auto& d : dtypes)
    for (const auto& v : dst_views) {
      const DType from = d.first, to = d.second;
      const Tensor sentinel_c = Tensor::full({6, 4}, 77, to);
      const Shape shape = v.second(sentinel_c).shape();
      INFO("into " << v.first << " " << shape_str(shape) << " of " << dtype_name(to) << ", from " << dtype_name(from));
      run_case([&] {
        {
          INFO("fill_(13.75)");
          Tensor bc = sentinel_c.clone(), bg = sentinel_c.to(kGpu);
          v.second(bc).fill_(13.75);
          v.second(bg).fill_(13.75);
          expect_same_bits(bc, bg);
        }
        // The reference: the same view of a CPU base, copied from a CPU source.
        Pair src = make_pair(shape, from, Layout::Transposed, gen, 0, 99.9);
        Tensor want = sentinel_c.clone();
        v.second(want).copy_(src.cpu);
        {
          INFO("copy_ from the host (strided source) into a device view");
          Tensor bg = sentinel_c.to(kGpu);
          v.second(bg).copy_(src.cpu);
          expect_same_bits(want, bg);
        }
        {
          INFO("copy_ on the device from a strided device source");
          Tensor bg = sentinel_c.to(kGpu);
          v.second(bg).copy_(src.gpu);
          expect_same_bits(want, bg);
        }
        {
          INFO("copy_ on the device from a packed device source");
          Tensor bg = sentinel_c.to(kGpu);
          v.second(bg).copy_(src.gpu.contiguous());
          expect_same_bits(want, bg);
        }
        {
          INFO("copy_ from the device into a host view");
          Tensor bc = sentinel_c.clone();
          v.second(bc).copy_(src.gpu);
          expect_same_bits(want, bc);
        }
      });
    }
}

TEST_CASE("cuda tensor: astype between every pair of dtypes, zeros, ones and full", "[cuda][tensor]") {
  Generator gen(32);
  for (DType from : kAllTypes)
    for (DType to : kAllTypes)
      for (Layout layout : {Layout::Contiguous, Layout::Transposed}) {
        // In [0, 100): float-to-integer conversions truncate and are defined for every target.
        Pair x = make_pair({5, 7}, from, layout, gen, 0, 99.9);
        INFO(describe(str("astype(", dtype_name(to), ")"), {x.cpu}, layout));
        run_case([&] {
          const Tensor got = x.gpu.astype(to);
          CHECK(got.device().str() == "cuda:0");
          CHECK_FALSE(got.shares_storage(x.gpu));  // a copy even for the same dtype
          expect_same_bits(x.cpu.astype(to), got);
        });
      }
  for (DType dtype : kAllTypes)
    for (const Shape& shape : {Shape{}, Shape{0}, Shape{5, 7}}) {
      INFO("zeros, ones and full(2.75) of " << shape_str(shape) << " " << dtype_name(dtype) << " on cuda:0");
      run_case([&] {
        expect_same_bits(Tensor::zeros(shape, dtype), Tensor::zeros(shape, dtype, kGpu));
        expect_same_bits(Tensor::ones(shape, dtype), Tensor::ones(shape, dtype, kGpu));
        expect_same_bits(Tensor::full(shape, 2.75, dtype), Tensor::full(shape, 2.75, dtype, kGpu));
        CHECK(Tensor::empty(shape, dtype, kGpu).device().str() == "cuda:0");
      });
    }
}

// ---- float16 and bfloat16: storage types, moved and converted on the GPU as on the CPU ----

namespace {
const std::vector<DType> kStorageTypes = {DType::Float16, DType::BFloat16};

// The bits of each element of T (a 16-bit dtype, any device and layout).
std::vector<uint16_t> bits16(const Tensor& t) {
  const Tensor c = t.to(kCpu).contiguous();
  std::vector<uint16_t> out(size_t(c.numel()));
  if (!out.empty()) std::memcpy(out.data(), c.raw_data(), out.size() * 2);
  return out;
}
bool is_nan16(uint16_t bits, DType dtype) {
  const uint16_t exponent = dtype == DType::Float16 ? 0x7c00 : 0x7f80;
  return (bits & exponent) == exponent && (bits & ~exponent & 0x7fff) != 0;
}
}  // namespace

TEST_CASE("cuda tensor: float16 and bfloat16 round trips, views and astype against every dtype", "[cuda][tensor]") {
  Generator gen(33);
  for (DType dtype : kStorageTypes) {
    const Tensor base = random_bits({7, 5, 3}, dtype, gen);
    const Tensor gbase = base.to(kGpu);
    for (const auto& v : views()) {
      INFO(dtype_name(dtype) << " " << v.first);
      run_case([&] {
        expect_same_bits(v.second(base), v.second(base).to(kGpu));
        expect_same_bits(v.second(base), v.second(gbase).to(kCpu));
        expect_same_bits(v.second(base), v.second(gbase).clone());  // a strided device copy
      });
    }
  }
  std::vector<DType> all = kAllTypes;
  all.insert(all.end(), kStorageTypes.begin(), kStorageTypes.end());
  for (DType from : all)
    for (DType to : all) {
      if (!is_half(from) && !is_half(to)) continue;  // the table above has those
      for (Layout layout : {Layout::Contiguous, Layout::Transposed}) {
        Pair x = make_pair({5, 7}, from, layout, gen, 0, 99.9);
        INFO(describe(str("astype(", dtype_name(to), ")"), {x.cpu}, layout));
        run_case([&] { expect_same_bits(x.cpu.astype(to), x.gpu.astype(to)); });
      }
    }
  for (DType dtype : kStorageTypes)
    for (const Shape& shape : {Shape{}, Shape{0}, Shape{5, 7}}) {
      INFO("zeros, ones and full(0.1) of " << shape_str(shape) << " " << dtype_name(dtype) << " on cuda:0");
      run_case([&] {
        expect_same_bits(Tensor::zeros(shape, dtype), Tensor::zeros(shape, dtype, kGpu));
        expect_same_bits(Tensor::ones(shape, dtype), Tensor::ones(shape, dtype, kGpu));
        expect_same_bits(Tensor::full(shape, 0.1, dtype), Tensor::full(shape, 0.1, dtype, kGpu));
      });
    }
}

TEST_CASE("cuda tensor: float16 and bfloat16 conversions round as the CPU's: ties, overflow, subnormals, NaN",
          "[cuda][tensor]") {
  // The cases of tests/core/tensor/test_tensor.cpp, converted on the GPU from float32 and float64.
  const std::vector<double> values = {1.0, -2.0, 0.0, -0.0, 0.1, 65504.0, 65519.99609375, 65520.0, -65520.0, 1e10,
                                      kInf, -kInf, 0x1p-24, 0x1p-25, 0x1.8p-25, 0x1.8p-24, 0x1.4p-23, 0x1.ffcp-15,
                                      1 + 0x1p-11, 1 + 0x1.8p-10, 1 + 0x1p-11 + 0x1p-20, 2049.0, 1 + 0x1p-8,
                                      1 + 0x1.8p-7, 0x1.fep127, 0x1p-133, 0x1p-134, 0x1p-149, kNaN, -kNaN,
                                      // float64 only: just off a tie that float32 would round onto
                                      1 + 0x1p-11 + 0x1p-40, 1 + 0x1p-8 + 0x1p-40, 65519.999999, 0x1p-25 + 0x1p-60};
  for (DType source : kFloatTypes)
    for (DType dtype : kStorageTypes) {
      INFO(dtype_name(source) << " to " << dtype_name(dtype));
      const Tensor x = Tensor::from_vector(values).astype(source);
      const std::vector<uint16_t> want = bits16(x.astype(dtype)), got = bits16(x.to(kGpu).astype(dtype));
      for (size_t i = 0; i < values.size(); ++i) {
        INFO(fmt(values[i]) << ": cpu 0x" << std::hex << want[i] << ", gpu 0x" << got[i]);
        if (is_nan16(want[i], dtype)) CHECK(is_nan16(got[i], dtype));
        else CHECK(got[i] == want[i]);
      }
      // And back: every 16-bit pattern widens on the GPU to the CPU's float32 and float64.
      Tensor patterns = Tensor::empty({65536}, dtype);
      for (uint32_t i = 0; i < 65536; ++i) static_cast<uint16_t*>(patterns.raw_data())[i] = uint16_t(i);
      INFO("every pattern widened to " << dtype_name(source));
      expect_close(patterns.astype(source), patterns.to(kGpu).astype(source), {0, 0});
    }
}

TEST_CASE("cuda tensor: float16 and bfloat16 fill_, copy_ into views, take_rows; full-precision ops throw",
          "[cuda][tensor]") {
  Generator gen(34);
  for (DType dtype : kStorageTypes)
    for (DType other : {kF32, kF64, DType::Int32, DType::Float16, DType::BFloat16}) {
      INFO(dtype_name(dtype) << " and " << dtype_name(other));
      run_case([&] {
        const Tensor sentinel = Tensor::full({6, 4}, 77, dtype);
        Tensor bc = sentinel.clone(), bg = sentinel.to(kGpu);
        bc.narrow(1, 1, 2).fill_(13.75);
        bg.narrow(1, 1, 2).fill_(13.75);
        expect_same_bits(bc, bg);
        // Into a transposed view, from a strided source of the other dtype; and the reverse.
        Pair src = make_pair({4, 6}, other, Layout::Transposed, gen, 0, 99.9);
        bc.transpose().copy_(src.cpu);
        bg.transpose().copy_(src.gpu);
        expect_same_bits(bc, bg);
        Tensor oc = Tensor::full({4, 3}, 5, other), og = oc.to(kGpu);
        oc.transpose().copy_(bc.narrow(0, 1, 3));  // a (3, 4) window into a transposed (4, 3)
        og.transpose().copy_(bg.narrow(0, 1, 3));
        expect_same_bits(oc, og);
      });
    }
  for (DType dtype : kStorageTypes) {
    Pair x = make_pair({13, 7}, dtype, Layout::Transposed, gen, 0, 100);
    INFO(describe("take_rows {3, 0, 3, 12}", {x.cpu}, Layout::Transposed));
    run_case([&] { expect_same_bits(ops::take_rows(x.cpu, {3, 0, 3, 12}), ops::take_rows(x.gpu, {3, 0, 3, 12})); });
    // The ops that compute in half are the rows below ("cuda half"); the full-precision ones
    // refuse half on the GPU as on the CPU.
    const Tensor g = Tensor::ones({2, 2}, dtype, kGpu);
    const std::string name = dtype_name(dtype);
    CHECK_THAT(error_of([&] { ops::softmax(g); }), Catch::Contains("softmax: dtype " + name + " is not supported"));
    Tensor p = g.clone(), v = g.clone();
    CHECK_THAT(error_of([&] { ops::momentum_sgd_update_(p, g, v, 0.1, 0.9); }),
               Catch::Contains("momentum_sgd: dtype " + name + " is not supported"));
  }
}

// ---- float16 and bfloat16 computed in: the half ops against the CPU's ----

// The ops that take the half types (core/tensor/dtype.h) read and write half and compute in float32
// on both devices, each result rounded once (core/cuda/half.cuh, tests/core/ops/test_half.cpp). So
// the GPU's half result is the CPU's wherever their float32 results round to the same half value.
// Their float32 results may differ in the last bits (CUDA's transcendentals, nvcc's FMA
// contraction, another order of a product's or a sum's float32 terms), so:
// - elementwise ops, the linear epilogue, pooling sums, sums and normal samples: one half ulp
//   (at most 2u |cpu|, u the half type's unit roundoff, or smallest_step's floor near 0),
//   and at least 99 % of all elements of a test bit for bit: a float32 difference of a few ulps
//   moves a half rounding once in 2^13 (float16) or 2^16 (bfloat16) times;
// - comparisons, where, broadcast_to, maxima, their indexes and gradients, dropout masks and
//   accumulate_: exact (no rounding, or the same one on both);
// - products (matmul, gemm, convolutions): each device is within u |exact| + K 2^-23 sum |terms|
//   of the exact result (test_half.cpp's bound: float32 accumulation of K terms, with twice
//   float32's unit roundoff per term, since the tensor cores may truncate their additions, then
//   one rounding), so the two are within twice that; with slack for the second-order terms,
//   2.5 times. The GPU's convolution adds the bias to the rounded product and rounds again: one
//   more u sum |terms| there.
namespace {

double unit_roundoff(DType dtype) { return dtype == DType::Float16 ? 0x1p-11 : 0x1p-8; }
// The absolute floor near zero: float16's subnormal step; for bfloat16 its smallest normal
// value, below which the CPU's kernels may have flushed a float32 result to zero (they run with
// flush-to-zero) where the GPU's is a subnormal.
double smallest_step(DType dtype) { return dtype == DType::Float16 ? 0x1p-24 : 0x1p-126; }

// Elements of a test compared as "one half ulp", and how many of them were bit for bit equal.
struct ExactCount {
  int64_t exact = 0, total = 0;
  void check() const {
    INFO(exact << " of " << total << " half elements bit for bit the CPU's");
    CHECK(double(exact) >= 0.99 * double(total));
  }
};

// The GPU's half GOT against the CPU's WANT, element by element: NaN and infinities at the same
// places, the others within SLACK_U times u |want| plus ALLOWED[i] (none: one ulp, SLACK_U 2) plus
// the smallest step; counted into COUNT when given.
void expect_half_close(const Tensor& want, const Tensor& got, ExactCount* count, double slack_u = 2,
                       const std::vector<double>& allowed = {}) {
  CHECK(got.device().str() == kGpu.str());
  CHECK(shape_str(got.shape()) == shape_str(want.shape()));
  CHECK(std::string(dtype_name(got.dtype())) == dtype_name(want.dtype()));
  if (got.shape() != want.shape() || got.dtype() != want.dtype()) return;
  const DType dtype = want.dtype();
  const std::vector<double> w = want.to_vector<double>(), g = got.to_vector<double>();
  const double u = unit_roundoff(dtype), step = smallest_step(dtype);
  size_t special = 0, off = 0, first = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    if (!std::isfinite(w[i]) || !std::isfinite(g[i])) {
      const bool same = std::isnan(w[i]) ? std::isnan(g[i]) : w[i] == g[i];
      if (!same && special++ == 0 && off == 0) first = i;
      continue;
    }
    if (count) count->exact += g[i] == w[i], ++count->total;
    const double limit = slack_u * u * std::abs(w[i]) + (allowed.empty() ? 0.0 : allowed[i]) + step;
    if (!(std::abs(g[i] - w[i]) <= limit) && off++ == 0 && special == 0) first = i;
  }
  INFO(special << " NaN/inf and " << off << " values of " << w.size() << " elements differ"
               << (special + off ? str("; the first at flat index ", first, ": cpu ", fmt(w[first]), ", gpu ",
                                       fmt(g[first]))
                                 : ""));
  CHECK(special + off == 0);
}

// The allowance of a product of K terms per output beside the CPU's: 2.5 (K 2^-23 + EXTRA_U u)
// times TERMS (the float64 sums of the terms' magnitudes, on the CPU), times 100 where cuDNN may
// run any convolution algorithm (for_convolution says why).
std::vector<double> product_allowance(const Tensor& terms, int64_t k, DType dtype, double extra_u = 0,
                                      bool convolution = false) {
  std::vector<double> a = terms.to_vector<double>();
  const double per = 2.5 * (double(k) * 0x1p-23 + extra_u * unit_roundoff(dtype)) *
                     (convolution && any_conv_algorithm() ? 100.0 : 1.0);
  for (double& x : a) x *= per;
  return a;
}

Tensor abs64(const Tensor& t) { return ops::abs(t.astype(kF64)); }

// Shapes of the half elementwise rows: 0-d, one element, empty, odd and 4-D, and one of 90300
// elements (many blocks of the map kernel).
const std::vector<Shape> kHalfShapes = {{}, {1}, {0}, {7}, {5, 7}, {3, 5, 7}, {2, 3, 5, 7}, {300, 301}};

}  // namespace

TEST_CASE("cuda half: elementwise ops and activations in float16 and bfloat16 equal the CPU's",
          "[cuda][ops][half]") {
  Generator gen(41);
  ExactCount count;
  for (const ElementwiseCase& c : elementwise_cases()) {
    if (c.axis) continue;  // softmax and log_softmax compute in full precision only
    for (const Shape& shape : kHalfShapes)
      for (DType dtype : kStorageTypes)
        for (Layout layout : kLayouts) {
          std::vector<Tensor> cpu, gpu;
          for (const auto& d : c.domains) {
            Pair p = make_pair(shape, dtype, layout, gen, d.first, d.second);
            cpu.push_back(p.cpu);
            gpu.push_back(p.gpu);
          }
          INFO(describe(c.name, cpu, layout));
          run_case([&] {
            const Tensor want = c.run(cpu), got = c.run(gpu);
            if (is_half(want.dtype())) expect_half_close(want, got, &count);
            else expect_close(want, got, tol_for(want.dtype()));  // the uint8 masks: exact
          });
        }
  }
  // The parametric activations and their gradients, and the in-place epilogue and scale.
  using V = std::vector<Tensor>;
  const std::vector<std::pair<const char*, OpFn>> more = {
      {"leaky_relu(x, 0.2)", [](const V& x) { return ops::leaky_relu(x[0], 0.2); }},
      {"elu(x, 1.0)", [](const V& x) { return ops::elu(x[0], 1.0); }},
      {"softplus(x, 2.0)", [](const V& x) { return ops::softplus(x[0], 2.0); }},
      {"leaky_relu_grad(x, gy, 0.2)", [](const V& x) { return ops::leaky_relu_grad(x[0], x[1], 0.2); }},
      {"elu_grad(x, gy, 1.0)", [](const V& x) { return ops::elu_grad(x[0], x[1], 1.0); }},
      {"softplus_grad(x, gy, 2.0)", [](const V& x) { return ops::softplus_grad(x[0], x[1], 2.0); }},
      {"scale_(y, -3) on a packed copy", [](const V& x) {
         Tensor y = x[0].clone();
         ops::scale_(y, -3.0);
         return y;
       }},
  };
  for (const auto& m : more)
    for (DType dtype : kStorageTypes)
      for (Layout layout : {Layout::Contiguous, Layout::Transposed}) {
        Pair x = make_pair({37, 41}, dtype, layout, gen, -3, 3), gy = make_pair({37, 41}, dtype, layout, gen);
        INFO(describe(m.first, {x.cpu, gy.cpu}, layout));
        run_case([&] { expect_half_close(m.second({x.cpu, gy.cpu}), m.second({x.gpu, gy.gpu}), &count); });
      }
  for (DType dtype : kStorageTypes)
    for (int bias = 0; bias < 3; ++bias)  // none, packed, a narrowed view
      for (bool relu : {false, true}) {
        const Tensor y = random_tensor({300, 37}, dtype, gen);
        Tensor yc = y.clone(), yg = y.to(kGpu);
        Pair b = make_pair({37}, dtype, bias == 2 ? Layout::Narrowed : Layout::Contiguous, gen);
        INFO("add_bias_ of (300, 37) " << dtype_name(dtype) << ", bias "
                                       << (bias == 0 ? "undefined" : bias == 1 ? "packed" : "narrowed (offset 2)")
                                       << (relu ? ", relu" : ""));
        run_case([&] {
          ops::add_bias_(yc, bias ? b.cpu : Tensor(), relu);
          ops::add_bias_(yg, bias ? b.gpu : Tensor(), relu);
          expect_half_close(yc, yg, &count);
        });
      }
  count.check();
}

TEST_CASE("cuda half: binary ops, comparisons, where and broadcast_to with broadcasting; NaN and infinities",
          "[cuda][ops][half]") {
  Generator gen(42);
  ExactCount count;
  const std::vector<std::pair<Shape, Shape>> shapes = {{{5, 7}, {7}},   {{7}, {5, 7}},  {{5, 1}, {1, 7}},
                                                       {{}, {5, 7}},    {{0, 7}, {7}},  {{2, 3, 5, 7}, {3, 1, 7}},
                                                       {{300, 1}, {1, 301}}};
  using V = std::vector<Tensor>;
  const std::vector<std::pair<const char*, OpFn>> binary = {
      {"add", [](const V& x) { return ops::add(x[0], x[1]); }},
      {"sub", [](const V& x) { return ops::sub(x[0], x[1]); }},
      {"mul", [](const V& x) { return ops::mul(x[0], x[1]); }},
      {"div", [](const V& x) { return ops::div(x[0], x[1]); }},
      {"maximum", [](const V& x) { return ops::maximum(x[0], x[1]); }},
      {"minimum", [](const V& x) { return ops::minimum(x[0], x[1]); }},
      {"equal", [](const V& x) { return ops::equal(x[0], x[1]); }},
      {"less", [](const V& x) { return ops::less(x[0], x[1]); }},
      {"greater_equal", [](const V& x) { return ops::greater_equal(x[0], x[1]); }},
      {"where(less(a, b), a, b)", [](const V& x) { return ops::where(ops::less(x[0], x[1]), x[0], x[1]); }},
      {"broadcast_to(b, a + b's shape)",
       [](const V& x) { return ops::broadcast_to(x[1], ops::broadcast_shapes(x[0].shape(), x[1].shape(), "test")); }},
  };
  auto check = [&](const Tensor& want, const Tensor& got) {
    if (is_half(want.dtype())) expect_half_close(want, got, &count);
    else expect_close(want, got, tol_for(want.dtype()));
  };
  for (const auto& op : binary)
    for (const auto& s : shapes)
      for (DType dtype : kStorageTypes)
        for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Narrowed}) {
          // Integers in [-3, 3] as values for half of the cases: ties for the comparisons. Divisors
          // in [0.5, 2.5].
          const bool ties = s.first.size() % 2 == 0, div = std::string(op.first) == "div";
          Pair a = make_pair(s.first, dtype, layout, gen, -3, 3, ties),
               b = make_pair(s.second, dtype, layout, gen, div ? 0.5 : -3, div ? 2.5 : 3, ties && !div);
          INFO(describe(op.first, {a.cpu, b.cpu}, layout));
          run_case([&] { check(op.second({a.cpu, b.cpu}), op.second({a.gpu, b.gpu})); });
        }
  // Every pair of the specials: NaN, infinities, signed zeros, float16's largest value (whose
  // square overflows there, not in bfloat16).
  const std::vector<double> specials = {kNaN, kInf, -kInf, 0.0, -0.0, 65504, -100, 0.5, -2, 1, -1};
  const int64_t n = int64_t(specials.size());
  for (DType dtype : kStorageTypes) {
    const Tensor x = Tensor::from_vector(specials).astype(dtype), a = x.reshape({n, 1});
    for (const auto& op : binary) {
      INFO(op.first << " over every pair of the specials, " << dtype_name(dtype));
      run_case([&] { check(op.second({a, x}), op.second({a.to(kGpu), x.to(kGpu)})); });
    }
    for (const ElementwiseCase& c : elementwise_cases()) {
      if (c.axis || c.domains.size() != 1) continue;
      INFO(c.name << " of the specials, " << dtype_name(dtype));
      run_case([&] { check(c.run({x}), c.run({x.to(kGpu)})); });
    }
  }
  count.check();
}

TEST_CASE("cuda half: matmul, gemm and batched matmul accumulate in float32 as the CPU's", "[cuda][ops][half]") {
  struct Mnk {
    int64_t m, n, k;
  };
  const std::vector<Mnk> sizes = {{5, 7, 11}, {13, 1, 7}, {1, 1, 1}, {64, 33, 300}, {100, 10, 784},
                                  {37, 45, 161}, {5, 7, 0}, {0, 7, 11}};
  Generator gen(43);
  for (DType dtype : kStorageTypes)
    for (const Mnk& s : sizes)
      for (int mode = 0; mode < 4; ++mode) {
        const bool ta = mode & 1, tb = mode & 2;
        const Layout layout = mode == 3 ? Layout::Transposed : Layout::Contiguous;
        Pair a = make_pair(ta ? Shape{s.k, s.m} : Shape{s.m, s.k}, dtype, layout, gen);
        Pair b = make_pair(tb ? Shape{s.n, s.k} : Shape{s.k, s.n}, dtype, layout, gen);
        INFO(describe(str("matmul (m, n, k) = (", s.m, ", ", s.n, ", ", s.k, ")", ta ? " a^T" : "", tb ? " b^T" : ""),
                      {a.cpu, b.cpu}, layout));
        run_case([&] {
          const Tensor terms = ops::matmul(abs64(a.cpu), abs64(b.cpu), ta, tb);
          expect_half_close(ops::matmul(a.cpu, b.cpu, ta, tb), ops::matmul(a.gpu, b.gpu, ta, tb), nullptr, 2.5,
                            product_allowance(terms, s.k, dtype));
        });
      }
  // C = alpha op(A) op(B) + beta C, read and rounded once; with beta 0, C's NaN must not come through.
  for (DType dtype : kStorageTypes)
    for (const Mnk& s : {Mnk{20, 25, 30}, Mnk{64, 33, 300}, Mnk{5, 7, 0}})
      for (const auto& coefficients : {std::tuple{0.5, 2.0, false}, std::tuple{-1.5, 0.0, true}}) {
        const double alpha = std::get<0>(coefficients), beta = std::get<1>(coefficients);
        const bool nan_c = std::get<2>(coefficients);
        Pair a = make_pair({s.m, s.k}, dtype, Layout::Contiguous, gen);
        Pair b = make_pair({s.n, s.k}, dtype, Layout::Contiguous, gen);
        const Tensor c0 = nan_c ? Tensor::full({s.m, s.n}, kNaN, dtype) : random_tensor({s.m, s.n}, dtype, gen);
        Tensor cc = c0.clone(), cg = c0.to(kGpu);
        INFO(str("gemm alpha ", alpha, " beta ", beta, nan_c ? " (C holds NaN)" : "", " (m, n, k) = (", s.m, ", ", s.n,
                 ", ", s.k, ") b^T ", dtype_name(dtype)));
        run_case([&] {
          const Tensor c_terms = nan_c ? Tensor::zeros({s.m, s.n}, kF64) : abs64(c0);
          const Tensor ab_terms = ops::matmul(abs64(a.cpu), abs64(b.cpu), false, true);
          const Tensor terms =
              ops::add(ops::mul_scalar(ab_terms, std::abs(alpha)), ops::mul_scalar(c_terms, std::abs(beta)));
          ops::gemm(a.cpu, false, b.cpu, true, alpha, beta, cc);
          ops::gemm(a.gpu, false, b.gpu, true, alpha, beta, cg);
          expect_half_close(cc, cg, nullptr, 2.5, product_allowance(terms, s.k + 1, dtype));
        });
      }
  // Half operands into a float32 C: the float32 sums, unrounded, on both devices (the CPU's
  // lowered convolutions keep their partial sums so).
  for (DType dtype : kStorageTypes)
    for (const Mnk& s : {Mnk{20, 25, 30}, Mnk{64, 33, 300}}) {
      Pair a = make_pair({s.m, s.k}, dtype, Layout::Contiguous, gen);
      Pair b = make_pair({s.k, s.n}, dtype, Layout::Contiguous, gen);
      const Tensor c0 = random_tensor({s.m, s.n}, DType::Float32, gen);
      Tensor cc = c0.clone(), cg = c0.to(kGpu);
      INFO(str("gemm into float32, beta 1 (m, n, k) = (", s.m, ", ", s.n, ", ", s.k, ") ", dtype_name(dtype)));
      run_case([&] {
        const std::vector<double> terms = ops::add(ops::matmul(abs64(a.cpu), abs64(b.cpu)), abs64(c0)).to_vector<double>();
        ops::gemm(a.cpu, false, b.cpu, false, 1.0, 1.0, cc);
        ops::gemm(a.gpu, false, b.gpu, false, 1.0, 1.0, cg);
        REQUIRE(cg.dtype() == DType::Float32);
        const std::vector<double> want = cc.to_vector<double>(), got = cg.to_vector<double>();
        size_t off = 0;
        for (size_t i = 0; i < want.size(); ++i)
          off += !(std::abs(got[i] - want[i]) <= 2.5 * double(s.k + 1) * 0x1p-23 * terms[i] + 1e-30);
        CHECK(off == 0);
      });
    }
  // Batches: one strided-batched call; a batch of 1 broadcast (a stride of 0).
  for (DType dtype : kStorageTypes)
    for (const auto& [sa, sb] :
         {std::pair{Shape{3, 8, 40}, Shape{3, 40, 6}}, std::pair{Shape{1, 8, 40}, Shape{4, 40, 6}}}) {
      const Tensor a = random_tensor(sa, dtype, gen), b = random_tensor(sb, dtype, gen);
      INFO("batched_matmul " << shape_str(sa) << " " << shape_str(sb) << " " << dtype_name(dtype));
      run_case([&] {
        const Tensor terms = ops::batched_matmul(abs64(a), abs64(b));
        expect_half_close(ops::batched_matmul(a, b), ops::batched_matmul(a.to(kGpu), b.to(kGpu)), nullptr, 2.5,
                          product_allowance(terms, 40, dtype));
      });
    }
}

TEST_CASE("cuda half: convolution_2d and its gradients on cuDNN in float16 and bfloat16 equal the CPU's",
          "[cuda][ops][half]") {
  const std::vector<Conv> convs = {
      {"3x3 pad 1", {2, 3, 7, 6}, {4, 3, 3, 3}, {.ph = 1, .pw = 1}},
      {"8 channels, 3x3 pad 1 (the tensor cores' shapes)", {4, 8, 12, 12}, {16, 8, 3, 3}, {.ph = 1, .pw = 1}},
      {"stride 2, pad (1, 0), dilate (1, 2)", {3, 2, 9, 8}, {5, 2, 3, 2}, {.sy = 2, .sx = 2, .ph = 1, .dx = 2}},
      {"groups 3 (depthwise)", {2, 3, 5, 5}, {6, 1, 3, 3}, {.ph = 1, .pw = 1, .groups = 3}},
      {"1x1", {2, 8, 4, 5}, {3, 8, 1, 1}, {}},
      {"cover_all, stride 3", {1, 2, 7, 8}, {2, 2, 2, 3}, {.sy = 3, .sx = 3, .cover_all = true}},
      {"empty batch", {0, 3, 5, 5}, {4, 3, 3, 3}, {.ph = 1, .pw = 1}},
  };
  Generator gen(44);
  for (DType dtype : kStorageTypes)
    for (const Conv& c : convs) {
      INFO("convolution_2d " << c.name << " x " << shape_str(c.x) << " W " << shape_str(c.W) << " "
                             << dtype_name(dtype));
      const Tensor x = random_tensor(c.x, dtype, gen, -1, 1), W = random_tensor(c.W, dtype, gen, -1, 1);
      const Tensor b = random_tensor({c.W[0]}, dtype, gen, -1, 1);
      run_case([&] {
        const Tensor y = ops::convolution_2d(x, W, b, c.p);
        const Tensor gy = random_tensor(y.shape(), dtype, gen, -1, 1);
        const int64_t depth = c.W[1] * c.W[2] * c.W[3];
        // The GPU rounds the product before adding the bias: one more u per term magnitude.
        expect_half_close(y, ops::convolution_2d(x.to(kGpu), W.to(kGpu), b.to(kGpu), c.p), nullptr, 2.5,
                          product_allowance(ops::convolution_2d(abs64(x), abs64(W), abs64(b), c.p), depth + 1, dtype,
                                            1.0, true));
        expect_half_close(ops::convolution_2d_grad_data(gy, W, c.x[2], c.x[3], c.p),
                          ops::convolution_2d_grad_data(gy.to(kGpu), W.to(kGpu), c.x[2], c.x[3], c.p), nullptr, 2.5,
                          product_allowance(ops::convolution_2d_grad_data(abs64(gy), abs64(W), c.x[2], c.x[3], c.p),
                                            c.W[0] * c.W[2] * c.W[3], dtype, 0, true));
        expect_half_close(ops::convolution_2d_grad_filter(x, gy, c.W[2], c.W[3], c.p),
                          ops::convolution_2d_grad_filter(x.to(kGpu), gy.to(kGpu), c.W[2], c.W[3], c.p), nullptr, 2.5,
                          product_allowance(ops::convolution_2d_grad_filter(abs64(x), abs64(gy), c.W[2], c.W[3], c.p),
                                            std::max<int64_t>(1, y.numel() / std::max<int64_t>(1, y.size(1))), dtype,
                                            0, true));
      });
    }
}

TEST_CASE("cuda half: pooling, sums, extremes, dropout masks, normal samples and accumulate_ equal the CPU's",
          "[cuda][ops][half]") {
  Generator gen(45);
  ExactCount count;
  const std::vector<std::pair<Window2D, bool>> windows = {{{2, 2, 2, 2, 0, 0}, false},
                                                          {{3, 3, 2, 2, 1, 1}, false},
                                                          {{3, 2, 2, 3, 0, 1}, true}};
  for (DType dtype : kStorageTypes)
    for (const auto& window : windows) {
      const Window2D w = window.first;
      const bool cover_all = window.second;
      Pair x = make_pair({2, 3, 7, 6}, dtype, Layout::Transposed, gen, -3, 3, true);  // ties: the first wins
      INFO("pooling " << w.kh << "x" << w.kw << " stride " << w.sy << "x" << w.sx << " pad " << w.ph << "x" << w.pw
                      << (cover_all ? " cover_all" : "") << " of (2, 3, 7, 6) " << dtype_name(dtype) << ", transposed");
      run_case([&] {
        const auto pc = ops::max_pooling_2d(x.cpu, w, cover_all), pg = ops::max_pooling_2d(x.gpu, w, cover_all);
        expect_same_bits(pc.y, pg.y);
        expect_same_bits(pc.indexes, pg.indexes);
        const Tensor gy = random_tensor(pc.y.shape(), dtype, gen);
        // Exact: each input element's gradient is one of the window's or a sum of at most 4 of
        // them, in the same order on both devices, rounded once.
        expect_same_bits(ops::max_pooling_2d_grad(gy, pc.indexes, w, x.cpu.shape()),
                         ops::max_pooling_2d_grad(gy.to(kGpu), pg.indexes, w, x.cpu.shape()));
        expect_half_close(ops::window_sum_2d(x.cpu, w, cover_all, 1.0 / 6),
                          ops::window_sum_2d(x.gpu, w, cover_all, 1.0 / 6), &count);
        expect_half_close(ops::window_spread_2d(gy, w, 7, 6, cover_all, 0.25),
                          ops::window_spread_2d(gy.to(kGpu), w, 7, 6, cover_all, 0.25), &count);
      });
    }
  // Sums: the row kernels (short and long rows), the column kernel, and both split in two passes.
  const std::vector<std::pair<Shape, std::vector<int64_t>>> sums = {
      {{5, 7, 11}, {}},   {{5, 7, 11}, {2}},     {{5, 7, 11}, {0, 2}}, {{5, 7, 11}, {1}},
      {{3, 5, 1100}, {2}}, {{4000, 3}, {0}},     {{2, 20000}, {1}},    {{0, 7}, {0}}};
  for (DType dtype : kStorageTypes)
    for (const auto& shape_axes : sums) {
      const std::vector<int64_t>& axes = shape_axes.second;
      Pair x = make_pair(shape_axes.first, dtype, Layout::Contiguous, gen);
      INFO(describe(str("sum over axes ", shape_str(axes)), {x.cpu}, Layout::Contiguous));
      run_case([&] { expect_half_close(ops::sum(x.cpu, axes), ops::sum(x.gpu, axes), &count); });
    }
  // Maxima and minima are exact, ties to the first.
  for (DType dtype : kStorageTypes)
    for (const Shape& shape : {Shape{5, 7, 11}, Shape{3, 1000}})
      for (int64_t axis = 0; axis < int64_t(shape.size()); ++axis) {
        Pair x = make_pair(shape, dtype, Layout::Transposed, gen, -2, 3, true);
        INFO(describe(str("max, argmax, min and argmin along axis ", axis), {x.cpu}, Layout::Transposed));
        run_case([&] {
          expect_same_bits(ops::max(x.cpu, axis), ops::max(x.gpu, axis));
          expect_same_bits(ops::argmax(x.cpu, axis), ops::argmax(x.gpu, axis));
          expect_same_bits(ops::min(x.cpu, axis), ops::min(x.gpu, axis));
          expect_same_bits(ops::argmin(x.cpu, axis), ops::argmin(x.gpu, axis));
          expect_same_bits(ops::amax(x.cpu, {}), ops::amax(x.gpu, {}));
        });
      }
  // Dropout masks bit for bit (1 / (1 - ratio) rounded to float32, then to the half type), and
  // normal samples within a half ulp.
  uint64_t seed = 500;
  for (DType dtype : kStorageTypes)
    for (const Shape& shape : {Shape{}, Shape{0}, Shape{5, 7}, Shape{300, 301}}) {
      for (double ratio : {0.0, 0.3, 0.9}) {
        INFO("dropout_mask " << shape_str(shape) << " ratio " << ratio << " " << dtype_name(dtype) << " seed " << seed);
        run_case([&] {
          Generator a(seed), b(seed);
          expect_same_bits(ops::dropout_mask(shape, ratio, dtype, kCpu, a),
                           ops::dropout_mask(shape, ratio, dtype, kGpu, b));
          CHECK(a.next_u64() == b.next_u64());
        });
        ++seed;
      }
      INFO("random_normal " << shape_str(shape) << " " << dtype_name(dtype) << " seed " << seed);
      run_case([&] {
        Generator a(seed), b(seed);
        expect_half_close(ops::random_normal(shape, 0.5, 2.0, dtype, kCpu, a),
                          ops::random_normal(shape, 0.5, 2.0, dtype, kGpu, b), &count);
        CHECK(a.next_u64() == b.next_u64());
      });
      ++seed;
    }
  // accumulate_ of half values: each widened exactly and added in double.
  Tensor acc_c = Tensor::zeros({}, kF64), acc_g = Tensor::zeros({}, kF64, kGpu);
  for (int i = 0; i < 20; ++i) {
    const DType dtype = kStorageTypes[size_t(i % 2)];
    const Tensor base = random_tensor({5}, dtype, gen, -1000, 1000), value = base.narrow(0, i % 5, 1);
    INFO("accumulate_ step " << i << " " << dtype_name(dtype));
    run_case([&] {
      ops::accumulate_(acc_c, value);
      ops::accumulate_(acc_g, base.to(kGpu).narrow(0, i % 5, 1));
    });
  }
  expect_same_bits(acc_c, acc_g);
  count.check();
}

// ---- The recurrent stacks on cuDNN ----

// The stacks' links on the GPU run cuDNN's fused RNN (the registry's n_step cases above compare
// it with the CPU and with finite differences); here: the links over unsorted sequences of
// uneven lengths, with and without given states, the ReLU cell, float32 against the CPU's
// composed stack, every parameter's gradient included; and a captured step replayed.
namespace {

// NStepBiLSTM, NStepRNNReLU and NStepGRU over unsorted uneven sequences, with and without given
// states, on the GPU and on the CPU: the outputs and every parameter's gradient agree.
void expect_nstep_links_equal_cpu() {
  Generator gen(7);
  const std::vector<int64_t> lengths{3, 7, 1, 7, 4};
  std::vector<Variable> xs_cpu;
  for (int64_t n : lengths) xs_cpu.emplace_back(random::normal({n, 5}, 0, 1, kF32, &gen));
  const auto on = [](const std::vector<Variable>& xs, Device d) {
    std::vector<Variable> out;
    for (const Variable& x : xs) out.emplace_back(x.data().to(d));
    return out;
  };
  // Runs LINK's step on DEVICE: the outputs and every parameter's gradient, on DEVICE.
  using Step = std::function<std::vector<Variable>(const std::vector<Variable>& xs, const Variable& hx)>;
  const auto run = [&](Link& link, const Step& step, Device d, bool with_state) {
    link.to_device(d);
    link.cleargrads();
    const Variable hx = with_state ? Variable(random::normal({4, 5, 6}, 0, 1, kF32, &gen).to(d)) : Variable();
    std::vector<Variable> outs = step(on(xs_cpu, d), hx);
    Variable loss = F::sum(outs[0] * outs[0]);
    for (size_t i = 1; i < outs.size(); ++i) loss = loss + F::sum(F::tanh(outs[i]));
    loss.backward();
    std::vector<Tensor> got;
    for (const Variable& o : outs) got.push_back(o.data());
    for (const Variable& p : link.params()) got.push_back(p.grad());
    return got;
  };
  const auto compare = [&](Link& link, const Step& step, bool with_state) {
    const uint64_t seed = gen.below(1000);
    gen = Generator(seed);  // the same states on both devices
    const std::vector<Tensor> want = run(link, step, kCpu, with_state);
    gen = Generator(seed);
    const std::vector<Tensor> got = run(link, step, kGpu, with_state);
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      INFO("output or gradient " << i);
      expect_close(want[i], got[i], {1e-4, 1e-5});
    }
  };
  for (bool with_state : {false, true}) {
    INFO((with_state ? "hx given" : "hx zeros"));
    L::NStepBiLSTM bilstm(2, 5, 6, 0.0);
    compare(bilstm, [&](const std::vector<Variable>& xs, const Variable& hx) {
      auto [hy, cy, ys] = bilstm.forward(hx, hx, xs);
      std::vector<Variable> out{F::concat(ys, 0), hy, cy};
      return out;
    }, with_state);
    L::NStepRNNReLU relu(4, 5, 6, 0.0);
    compare(relu, [&](const std::vector<Variable>& xs, const Variable& hx) {
      auto [hy, ys] = relu.forward(hx, xs);
      return std::vector<Variable>{F::concat(ys, 0), hy};
    }, with_state);
    L::NStepGRU gru(4, 5, 6, 0.0);
    compare(gru, [&](const std::vector<Variable>& xs, const Variable& hx) {
      auto [hy, ys] = gru.forward(hx, xs);
      return std::vector<Variable>{F::concat(ys, 0), hy};
    }, with_state);
  }
}

}  // namespace

TEST_CASE("cuda functions: NStep links run cuDNN's fused stacks and equal the CPU's", "[cuda][functions][rnn]") {
  REQUIRE(ops::has_fused_rnn(kGpu));  // the lent machines have cuDNN: without it this path is not tested
  CHECK_FALSE(ops::has_fused_rnn(kCpu));
  expect_nstep_links_equal_cpu();
}

// Run by the GPU validation in a process of its own with CHAINER_CUDNN=0, as on a machine without
// cuDNN: the stacks are composed of this library's kernels, and a convolution says why it cannot run.
TEST_CASE("cuda functions: without cuDNN the NStep links compose their stacks and equal the CPU's",
          "[.][no_cudnn]") {
  REQUIRE_FALSE(ops::has_fused_rnn(kGpu));
  expect_nstep_links_equal_cpu();
  const Variable x(Tensor::ones({1, 1, 3, 3}, kF32, kGpu)), W(Tensor::ones({1, 1, 2, 2}, kF32, kGpu));
  try {
    (void)F::convolution_2d(x, W);
    FAIL("a convolution ran without cuDNN");
  } catch (const Error& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find("CHAINER_CUDNN=0 turns cuDNN off") != std::string::npos);
  }
}

TEST_CASE("cuda functions: an LSTM stack's forward and backward captured in a graph equal eager steps",
          "[cuda][functions][rnn]") {
  Generator gen(9);
  L::NStepLSTM lstm(2, 4, 8, 0.0);
  lstm.to_device(kGpu);
  std::vector<Variable> xs;
  for (int64_t n : {6, 6, 3, 2}) xs.emplace_back(random::normal({n, 4}, 0, 1, kF32, &gen).to(kGpu));
  const auto step = [&] {
    lstm.cleargrads();
    auto [hy, cy, ys] = lstm.forward(Variable(), Variable(), xs);
    Variable loss = F::sum(F::concat(ys, 0) * F::concat(ys, 0)) + F::sum(hy) + F::sum(cy);
    loss.backward();
    return loss;
  };
  const Tensor eager_loss = step().data().to(kCpu);
  std::vector<Tensor> eager;
  for (const Variable& p : lstm.params()) eager.push_back(p.grad().to(kCpu));
  Tensor captured_loss;
  std::unique_ptr<cuda::Graph> graph = cuda::Graph::capture(kGpu, [&] { captured_loss = step().data(); });
  for (const Variable& p : lstm.params()) Tensor(p.grad()).fill_(0.0);  // the replay must write them again
  graph->replay();
  graph->replay();  // every replay recomputes the same step
  cuda::synchronize();
  expect_close(eager_loss, captured_loss, tol_for(kF32));
  const std::vector<Variable> params = lstm.params();
  REQUIRE(params.size() == eager.size());
  for (size_t i = 0; i < eager.size(); ++i) {
    INFO("gradient of parameter " << i);
    REQUIRE(params[i].grad().defined());
    expect_close(eager[i], params[i].grad(), tol_for(kF32));
  }
}

// ---- The differentiable functions ----

TEST_CASE("cuda functions: gradients on the GPU match finite differences (float64)", "[cuda][functions]") {
  for (const FunctionCase& c : function_cases()) {
    if (!c.differentiable) continue;
    INFO(c.label() << " of " << shapes_of(c.inputs) << ", float64");
    int off_device = 0;  // outputs not on cuda:0: the check would not be testing the GPU
    const std::function<Variable(const Vars&)> on_gpu = [&](const Vars& v) {
      Variable y = c.f(v);
      off_device += y.data().device() != kGpu;
      return y;
    };
    run_case([&] { check_backward(on_gpu, c.inputs, {.no_grads = c.no_grads, .device = kGpu}); });
    CHECK(off_device == 0);
  }
}

TEST_CASE("cuda functions: forward and backward on the GPU equal the CPU's (float32)", "[cuda][functions]") {
  // Small graphs of O(1) values with sums of up to ~35 terms: float32 1e-5 relative with a
  // floor of 1e-5; the cases on cuDNN's convolutions (convolution_2d, depthwise_convolution_2d,
  // deconvolution_2d) as for_convolution says.
  for (const FunctionCase& c : function_cases()) {
    INFO(c.label() << " of " << shapes_of(c.inputs) << ", float32");
    const bool on_cudnn = c.functions.front().find("convolution_2d") != std::string::npos;
    const Tol tol = on_cudnn ? for_convolution({1e-5, 1e-5}, kF32) : Tol{1e-5, 1e-5};
    run_case([&] {
      const auto want = forward_backward(c, kF32, kCpu), got = forward_backward(c, kF32, kGpu);
      CHECK(got.size() == want.size());
      for (size_t i = 0; i < std::min(want.size(), got.size()); ++i) {
        INFO(want[i].first);
        expect_close(want[i].second, got[i].second, tol);
      }
    });
  }
}

TEST_CASE("cuda functions: the kernel cases on the GPU equal the CPU's (float32 and float64)", "[cuda][functions]") {
  for (const KernelCase& c : kernel_cases())
    for (DType dtype : kFloatTypes) {
      INFO("kernel case: " << c.name << " of " << shapes_of(c.inputs) << ", " << dtype_name(dtype));
      run_case([&] {
        const auto want = run_kernel_case(c, dtype, kCpu), got = run_kernel_case(c, dtype, kGpu);
        REQUIRE(got.size() == want.size());
        for (size_t i = 0; i < want.size(); ++i) {
          INFO("output " << i);
          // sum_of_squares comes back as a host value, in a CPU tensor
          expect_close(want[i], want[i].device() == got[i].device() ? got[i].to(kGpu) : got[i], tol_for(dtype, 50));
        }
      });
    }
}
