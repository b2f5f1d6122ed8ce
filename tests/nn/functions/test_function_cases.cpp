// The generic checks over the registry of function cases (function_cases.h), on the CPU under the
// kernel family of the run (tests/meson.build runs this binary once per family): gradients
// against finite differences in float64, float32 against float64 forward and backward, no graph
// where none is needed, function hooks around the forward of every node, and the registry's
// completeness: every public function of chainer::functions and every kernel of
// core/ops/kernel_list.def reached by some case.
#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "autograd/function_hook.h"
#include "autograd/function_node.h"
#include "autograd/gradient_check.h"
#include "core/cpu/family.h"
#include "core/ops/kernels.h"
#include "tests/function_inputs.h"
#include "tests/nn/functions/function_cases.h"

using namespace chainer;
using namespace chainer::testing;

namespace {

const Device kCpu = Device::cpu();

// WANT (float64) and GOT (float32) of one shape; NaN and infinities at the same places, every other
// element within rtol |want| + atol. Float32 results of O(1) inputs through sums of a few dozen
// terms: 1e-5 relative with a floor of 1e-5 (the CPU's float32 kernels against the float64 ones).
void expect_close_to_float64(const Tensor& want, const Tensor& got, double rtol = 1e-5, double atol = 1e-5) {
  REQUIRE(shape_str(got.shape()) == shape_str(want.shape()));
  const std::vector<double> w = want.to_vector<double>(), g = got.to_vector<double>();
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    const bool same_special = (std::isnan(w[i]) && std::isnan(g[i])) || (std::isinf(w[i]) && w[i] == g[i]);
    const bool ok = same_special || (std::isfinite(w[i]) && std::abs(g[i] - w[i]) <= rtol * std::abs(w[i]) + atol);
    if (!ok && bad++ == 0) first = i;
  }
  INFO(bad << " of " << w.size() << " elements differ"
            << (bad ? str("; the first at flat index ", first, ": float64 ", w[first], ", float32 ", g[first]) : ""));
  CHECK(bad == 0);
}

void run_case(const std::function<void()>& body) {
  try {
    body();
  } catch (const std::exception& e) {
    FAIL_CHECK("threw: " << e.what());
  }
}

// ---- the kernels the cases reach: a table of counting wrappers around the family's own ----

enum : size_t {
#define CHAINER_KERNEL(RETURN, NAME, PARAMETERS) kIndex_##NAME,
#include "core/ops/kernel_list.def"
};
std::array<std::atomic<int64_t>, kKernelCount> g_calls;
const Kernels* g_inner = nullptr;

template <size_t I, typename Pointer>
struct Counted;
template <size_t I, typename R, typename... A>
struct Counted<I, R (*)(A...)> {
  template <auto Member>
  static R call(A... a) {
    g_calls[I].fetch_add(1, std::memory_order_relaxed);
    return (g_inner->*Member)(std::forward<A>(a)...);
  }
};

// Installs the counting table while it lives.
struct CountingKernels {
  Kernels table{};
  CountingKernels() {
    g_inner = &cpu::kernel_table();
    for (auto& c : g_calls) c = 0;
#define CHAINER_KERNEL(RETURN, NAME, PARAMETERS) \
  table.NAME = &Counted<kIndex_##NAME, decltype(Kernels::NAME)>::template call<&Kernels::NAME>;
#define CHAINER_LIBRARY_KERNEL(RETURN, NAME, PARAMETERS)  // the CPU has none: left null
#include "core/ops/kernel_list.def"
    cpu::set_kernel_table(&table);
  }
  ~CountingKernels() { cpu::set_kernel_table(nullptr); }
};

// The public functions of chainer::functions: the names of the functions declared in
// nn/functions/*.h (returning a Variable, a list or a pair of them, or a result struct of them),
// read from the source tree.
std::set<std::string> public_functions() {
  const char* root = std::getenv("CHAINER_SOURCE_ROOT");
  REQUIRE(root != nullptr);  // tests/meson.build sets it
  const std::filesystem::path dir = std::filesystem::path(root) / "nn" / "functions";
  const std::regex declaration(
      R"(^\s*(?:inline\s+)?(?:Variable|std::vector<Variable>|std::pair<Variable, Variable>|[A-Za-z]+Result)\s+([a-z_0-9]+)\()");
  std::set<std::string> names;
  int headers = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".h") continue;
    ++headers;
    std::ifstream in(entry.path());
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (std::regex_search(line, m, declaration)) names.insert(m[1]);
    }
  }
  REQUIRE(headers >= 20);
  return names;
}

}  // namespace

TEST_CASE("function cases: gradients match finite differences in float64", "[function_cases]") {
  int checked = 0;
  for (const FunctionCase& c : function_cases()) {
    if (!c.differentiable) continue;
    INFO(c.label() << " of " << shapes_of(c.inputs));
    run_case([&] { check_backward(c.f, c.inputs, {.no_grads = c.no_grads}); });
    ++checked;
  }
  CHECK(checked >= 90);
}

TEST_CASE("function cases: float32 forward and backward equal float64's under the kernel family in use",
          "[function_cases]") {
  for (const FunctionCase& c : function_cases()) {
    INFO(c.label() << " of " << shapes_of(c.inputs));
    run_case([&] {
      const auto want = forward_backward(c, DType::Float64, kCpu), got = forward_backward(c, DType::Float32, kCpu);
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        INFO(want[i].first);
        CHECK(got[i].second.dtype() == (is_floating(want[i].second.dtype()) ? DType::Float32 : want[i].second.dtype()));
        expect_close_to_float64(want[i].second, got[i].second);
      }
    });
  }
}

TEST_CASE("function cases: no graph under NoBackpropMode, nor when no input requires a gradient",
          "[function_cases]") {
  for (const FunctionCase& c : function_cases()) {
    INFO(c.label() << " of " << shapes_of(c.inputs));
    run_case([&] {
      {
        NoBackpropMode no_backprop;
        const Variable y = c.f(case_variables(c, DType::Float32, kCpu));
        CHECK(y.is_leaf());
        CHECK_FALSE(y.requires_grad());
      }
      Vars plain;
      for (const Tensor& x : c.inputs) plain.emplace_back(x);
      CHECK(c.f(plain).is_leaf());
      const Variable y = c.f(case_variables(c, DType::Float64, kCpu));
      CHECK(bool(y.creator()) == c.differentiable);
    });
  }
}

namespace {
// Counts, per function name, the forward hook calls (pre and post) and the nodes backward runs.
class HookCounter : public FunctionHook {
 public:
  std::string name() const override { return "HookCounter"; }
  void forward_preprocess(const std::string& f, const std::vector<Tensor>&) override { ++pre[f]; }
  void forward_postprocess(const std::string& f, const std::vector<Tensor>&) override { ++post[f]; }
  void backward_preprocess(const FunctionNode& f, const std::vector<Tensor>&, const std::vector<Tensor>&) override {
    ++backward[f.name()];
  }
  std::map<std::string, int> pre, post, backward;
};
}  // namespace

TEST_CASE("function cases: function hooks see the forward of every node that backward runs, under its name",
          "[function_cases]") {
  for (const FunctionCase& c : function_cases()) {
    if (!c.differentiable) continue;
    INFO(c.label() << " of " << shapes_of(c.inputs));
    run_case([&] {
      HookCounter counter;
      {
        FunctionHook::Scope scope(counter);
        forward_backward(c, DType::Float64, kCpu);
      }
      CHECK(counter.pre == counter.post);
      CHECK_FALSE(counter.backward.empty());
      // A node whose function opens no ForwardHooks (or opens it under another name) shows here.
      for (const auto& [function, count] : counter.backward) {
        INFO("backward ran " << count << " node(s) named " << function);
        CHECK(counter.pre[function] >= count);
      }
    });
  }
}

TEST_CASE("kernel cases: float32 equals float64 under the kernel family in use", "[function_cases]") {
  REQUIRE(!kernel_cases().empty());
  for (const KernelCase& c : kernel_cases()) {
    INFO("kernel case: " << c.name << " of " << shapes_of(c.inputs));
    run_case([&] {
      const auto want = run_kernel_case(c, DType::Float64, kCpu), got = run_kernel_case(c, DType::Float32, kCpu);
      REQUIRE(got.size() == want.size());
      REQUIRE(!want.empty());
      for (size_t i = 0; i < want.size(); ++i) {
        INFO("output " << i);
        expect_close_to_float64(want[i], got[i]);
      }
    });
  }
}

TEST_CASE("function cases: every public function of chainer::functions has a case, and every case names one",
          "[function_cases][registry]") {
  const std::set<std::string> declared = public_functions();
  std::set<std::string> covered;
  for (const FunctionCase& c : function_cases()) covered.insert(c.functions.begin(), c.functions.end());
  for (const std::string& name : declared) {
    INFO("chainer::functions::" << name << " (nn/functions/) has no case in tests/nn/functions/function_cases.cpp");
    CHECK(covered.count(name) == 1);
  }
  for (const std::string& name : covered) {
    INFO("a case names '" << name << "', which nn/functions/ does not declare");
    CHECK(declared.count(name) == 1);
  }
  CHECK(declared.size() >= 50);  // the headers were read
}

TEST_CASE("function cases: every kernel of core/ops/kernel_list.def is reached by some case",
          "[function_cases][registry]") {
  {
    CountingKernels counting;
    for (const FunctionCase& c : function_cases())
      for (DType dtype : {DType::Float32, DType::Float64}) run_case([&] { forward_backward(c, dtype, kCpu); });
    for (const KernelCase& c : kernel_cases())
      for (DType dtype : {DType::Float32, DType::Float64}) run_case([&] { run_kernel_case(c, dtype, kCpu); });
  }
  CHECK(&cpu::kernel_table() == cpu::kernel_family().kernels);  // the family's own again
  for (size_t i = 0; i < kKernelCount; ++i) {
    if (kKernelFromLibrary[i]) continue;  // none on the CPU: the cases reach them on CUDA (test_cuda_ops)
    INFO("kernel " << kKernelNames[i] << " is reached by no function case or kernel case");
    CHECK(g_calls[i] > 0);
  }
}
