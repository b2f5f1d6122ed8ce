// Tests of batch_normalization and fixed_batch_normalization (nn/functions/batch_normalization.h):
// values against references element by element, for every axis too; finite differences; float32
// against float64; the running statistics; sum_over_processes with K processes as K threads; errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "autograd/gradient_check.h"
#include "core/ops/ops.h"
#include "nn/functions.h"
#include "tests/function_inputs.h"
#include "tests/nn/functions/batch_norm_references.h"
#include "tests/nn/functions/reference_checks.h"

namespace F = chainer::functions;
using namespace chainer;
using namespace chainer::testing;
using Vars = std::vector<Variable>;
using Catch::Contains;

namespace {
// K processes simulated by K threads: the sum_over_processes of process k hands its tensor
// over, waits for the others, and returns the sum of all K (added in process order, so every
// process gets the same bits), as an allreduce would. A process that does not arrive within
// 20 s makes the others throw instead of waiting for ever.
class ThreadAllreduce {
 public:
  explicit ThreadAllreduce(size_t k) : given_(k), calls_(k, 0) {}

  F::SumOverProcesses for_process(size_t k) {
    return [this, k](const Tensor& local) {
      std::unique_lock<std::mutex> lock(mutex_);
      ++calls_[k];
      const int64_t round = round_;
      given_[k] = local;
      if (++arrived_ == given_.size()) {
        total_ = given_[0].clone();
        for (size_t i = 1; i < given_.size(); ++i) total_ = ops::add(total_, given_[i]);
        arrived_ = 0;
        ++round_;
        changed_.notify_all();
      } else if (!changed_.wait_for(lock, std::chrono::seconds(20), [&] { return round_ != round; })) {
        throw Error("ThreadAllreduce: a simulated process did not arrive");
      }
      // Every process reads the total of its round before the last of the next round writes it:
      // the next round needs every process, this one included.
      return total_.clone();
    };
  }
  // How often process k called its sum_over_processes.
  int calls(size_t k) const { return calls_[k]; }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Tensor> given_;
  std::vector<int> calls_;
  size_t arrived_ = 0;
  int64_t round_ = 0;
  Tensor total_;
};

// Runs BODY(k) for k in [0, K) on K threads; rethrows the first exception once all have ended.
void run_processes(size_t k, const std::function<void(size_t)>& body) {
  std::vector<std::exception_ptr> errors(k);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < k; ++i)
    threads.emplace_back([&, i] {
      try {
        body(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

// One forward and backward of batch_normalization: y, gx, ggamma, gbeta.
struct Step {
  Tensor y, gx, ggamma, gbeta;
};
Step step(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& gy,
          const F::BatchNormalizationOptions& options = {}) {
  Variable xv(x, true), g(gamma, true), b(beta, true);
  Variable y = F::batch_normalization(xv, g, b, options);
  y.set_grad(gy);
  y.backward();
  return {y.data(), xv.grad(), g.grad(), b.grad()};
}
}  // namespace

TEST_CASE("batch_normalization: a (3, 2) batch is normalized per column by its mean and biased variance",
          "[batch_normalization]") {
  // Column 0: 1, 3, 5 (mean 3, variance 8/3); column 1: -2, 0, 8 (mean 2, variance 56/3).
  const Tensor x = Tensor::from_vector<double>({1, -2, 3, 0, 5, 8}, {3, 2});
  const Tensor gamma = Tensor::from_vector<double>({2, 0.5}), beta = Tensor::from_vector<double>({0.1, -1});
  const Variable y = F::batch_normalization(Variable(x), Variable(gamma), Variable(beta));
  const double s0 = std::sqrt(8.0 / 3 + kEps), s1 = std::sqrt(56.0 / 3 + kEps);
  expect_close(values(y.data()),
               {2 * -2 / s0 + 0.1, 0.5 * -4 / s1 - 1, 0.1, 0.5 * -2 / s1 - 1, 2 * 2 / s0 + 0.1, 0.5 * 6 / s1 - 1},
               1e-14);
}

TEST_CASE("batch_normalization: a (N, C, H, W) batch is normalized per channel over the batch and both spatial axes",
          "[batch_normalization]") {
  const Tensor x = normal({3, 4, 2, 5}, 1, 0.5, 2.0);
  const Tensor gamma = uniform({4}, 2, 0.5, 2), beta = uniform({4}, 3);
  const Variable y = F::batch_normalization(Variable(x), Variable(gamma), Variable(beta));
  expect_close(values(y.data()), reference(x, values(gamma), values(beta), batch_means(x), batch_vars(x)), 1e-12);
  // Closed form: each channel of y has mean beta and variance gamma^2 var / (var + eps).
  const auto means = batch_means(y.data()), vars = batch_vars(y.data()), var_x = batch_vars(x);
  for (size_t c = 0; c < 4; ++c) {
    CHECK(means[c] == Approx(values(beta)[c]).margin(1e-12));
    CHECK(vars[c] == Approx(values(gamma)[c] * values(gamma)[c] * var_x[c] / (var_x[c] + kEps)).epsilon(1e-12));
  }
}

TEST_CASE("batch_normalization: gradients in x, gamma and beta match finite differences", "[batch_normalization]") {
  const auto bn = [](const Vars& v) { return F::batch_normalization(v[0], v[1], v[2]); };
  check(bn, {uniform({5, 3}, 10), uniform({3}, 11, 0.5, 2), uniform({3}, 12)});
  check(bn, {uniform({2, 3, 2, 2}, 13), uniform({3}, 14, 0.5, 2), uniform({3}, 15)});
  check(bn, {uniform({3, 2, 4}, 16), uniform({2}, 17, -2, -0.5), uniform({2}, 18)});
  check(bn, {uniform({2, 1}, 19), uniform({1}, 20, 0.5, 2), uniform({1}, 21)});  // two values per channel
  // Through a second function, so gy is not the same for every element of a channel's sums.
  check([](const Vars& v) { return F::tanh(F::batch_normalization(v[0], v[1], v[2]) * v[3]); },
        {uniform({4, 3}, 22), uniform({3}, 23, 0.5, 2), uniform({3}, 24), uniform({4, 3}, 25)});
}

TEST_CASE("fixed_batch_normalization: values, and gradients in all five inputs", "[batch_normalization]") {
  const Tensor x = uniform({3, 2, 2, 2}, 30), gamma = uniform({2}, 31, 0.5, 2), beta = uniform({2}, 32),
               mean = uniform({2}, 33), var = uniform({2}, 34, 0.5, 2);
  const Variable y = F::fixed_batch_normalization(Variable(x), Variable(gamma), Variable(beta), Variable(mean),
                                                  Variable(var), 1e-3);
  expect_close(values(y.data()), reference(x, values(gamma), values(beta), values(mean), values(var), 1e-3), 1e-14);
  const auto fixed = [](const Vars& v) { return F::fixed_batch_normalization(v[0], v[1], v[2], v[3], v[4]); };
  check(fixed, {x, gamma, beta, mean, var});
  check(fixed, {uniform({4, 3}, 35), uniform({3}, 36), uniform({3}, 37), uniform({3}, 38), uniform({3}, 39, 0.5, 2)});
}

TEST_CASE("batch_normalization: float32 agrees with float64, even with a mean 100 times the deviation",
          "[batch_normalization]") {
  // Sums of x^2 accumulated in float32 lose the variance here (partial sums ~ 1e7, rounded to
  // ~ 0.5 at each addition: y off by ~5e-4); the float64 sums keep it (y within ~4e-6).
  const Tensor x32 = normal({1024, 3}, 40, 100.0, 1.0, DType::Float32);
  const Tensor gy32 = normal({1024, 3}, 41, 0.0, 1.0, DType::Float32);
  const Tensor gamma = uniform({3}, 42, 0.5, 2), beta = uniform({3}, 43);
  const Step s32 = step(x32, gamma.astype(DType::Float32), beta.astype(DType::Float32), gy32);
  const Step s64 = step(x32.astype(DType::Float64), gamma, beta, gy32.astype(DType::Float64));
  CHECK(s32.y.dtype() == DType::Float32);
  CHECK(s32.gx.dtype() == DType::Float32);
  expect_close(values(s32.y), values(s64.y), 1e-5);
  expect_close(values(s32.gx), values(s64.gx), 1e-5);
  expect_close(values(s32.ggamma), values(s64.ggamma), 1e-5);
  expect_close(values(s32.gbeta), values(s64.gbeta), 1e-5);
}

TEST_CASE("batch_normalization: float32 agrees with float64 over (N, C, H, W), planes not a multiple of the vector width",
          "[batch_normalization]") {
  // The per-channel sums along the planes (vectorized per kernel family, in float64 lanes), with
  // a tail of 15 elements after three blocks of 16, and a mean 100 times the deviation.
  const Tensor x32 = normal({8, 3, 7, 9}, 44, 100.0, 1.0, DType::Float32);
  const Tensor gy32 = normal({8, 3, 7, 9}, 45, 0.0, 1.0, DType::Float32);
  const Tensor gamma = uniform({3}, 46, 0.5, 2), beta = uniform({3}, 47);
  const Step s32 = step(x32, gamma.astype(DType::Float32), beta.astype(DType::Float32), gy32);
  const Step s64 = step(x32.astype(DType::Float64), gamma, beta, gy32.astype(DType::Float64));
  expect_close(values(s32.y), values(s64.y), 1e-5);
  expect_close(values(s32.gx), values(s64.gx), 1e-5);
  expect_close(values(s32.ggamma), values(s64.ggamma), 1e-5);
  expect_close(values(s32.gbeta), values(s64.gbeta), 1e-5);
}

TEST_CASE("batch_normalization: running statistics follow Chainer's rule, with the decay and the unbiased variance",
          "[batch_normalization]") {
  for (DType dtype : {DType::Float64, DType::Float32}) {
    INFO("dtype " << dtype_name(dtype));
    Tensor running_mean = Tensor::zeros({2}, dtype), running_var = Tensor::ones({2}, dtype);
    std::vector<double> want_mean{0, 0}, want_var{1, 1};
    const double decay = 0.7;
    for (uint64_t t = 0; t < 3; ++t) {
      const Tensor x = normal({3, 2, 2, 1}, 50 + t, double(t), 1 + double(t), dtype);  // m = 6 values per channel
      F::batch_normalization(Variable(x), Variable(Tensor::ones({2}, dtype)), Variable(Tensor::zeros({2}, dtype)),
                             {.running_mean = running_mean, .running_var = running_var, .decay = decay});
      const auto mean = batch_means(x), var = batch_vars(x);
      for (size_t c = 0; c < 2; ++c) {
        want_mean[c] = decay * want_mean[c] + (1 - decay) * mean[c];
        want_var[c] = decay * want_var[c] + (1 - decay) * var[c] * 6.0 / 5.0;
      }
    }
    const double tol = dtype == DType::Float32 ? 1e-6 : 1e-14;
    expect_close(values(running_mean), want_mean, tol);
    expect_close(values(running_var), want_var, tol);
  }
}

TEST_CASE("batch_normalization: with K processes summing their statistics, each gets the whole batch's result",
          "[batch_normalization][hook]") {
  // Shards of 1, 4, 0 and 3 rows: one process alone has a single value per channel, one has none.
  const std::vector<int64_t> rows{1, 4, 0, 3};
  const Tensor x = normal({8, 3}, 60, 2.0, 3.0), gy = normal({8, 3}, 61), gamma = uniform({3}, 62, 0.5, 2),
               beta = uniform({3}, 63);
  Tensor whole_mean = Tensor::zeros({3}, DType::Float64), whole_var = Tensor::ones({3}, DType::Float64);
  const Step whole = step(x, gamma, beta, gy, {.running_mean = whole_mean, .running_var = whole_var});

  const size_t K = rows.size();
  ThreadAllreduce allreduce(K);
  std::vector<Step> shard(K);
  std::vector<Tensor> means(K), vars(K);
  std::vector<int64_t> offsets(K, 0);
  for (size_t k = 1; k < K; ++k) offsets[k] = offsets[k - 1] + rows[k - 1];
  run_processes(K, [&](size_t k) {
    means[k] = Tensor::zeros({3}, DType::Float64);
    vars[k] = Tensor::ones({3}, DType::Float64);
    shard[k] = step(x.narrow(0, offsets[k], rows[k]).contiguous(), gamma.clone(), beta.clone(),
                    gy.narrow(0, offsets[k], rows[k]).contiguous(),
                    {.running_mean = means[k], .running_var = vars[k], .sum_over_processes = allreduce.for_process(k)});
  });

  Tensor ggamma_sum = Tensor::zeros({3}, DType::Float64), gbeta_sum = Tensor::zeros({3}, DType::Float64);
  for (size_t k = 0; k < K; ++k) {
    INFO("process " << k << " of " << K << " (" << rows[k] << " rows)");
    CHECK(allreduce.calls(k) == 2);  // once in forward, once in backward
    expect_close(values(shard[k].y), values(whole.y.narrow(0, offsets[k], rows[k])), 1e-12);
    expect_close(values(shard[k].gx), values(whole.gx.narrow(0, offsets[k], rows[k])), 1e-12);
    expect_close(values(means[k]), values(whole_mean), 1e-12);
    expect_close(values(vars[k]), values(whole_var), 1e-12);  // unbiased with the whole batch's count
    ggamma_sum = ops::add(ggamma_sum, shard[k].ggamma);
    gbeta_sum = ops::add(gbeta_sum, shard[k].gbeta);
  }
  // Each process returns its own parameter gradients; their sum is the whole batch's.
  expect_close(values(ggamma_sum), values(whole.ggamma), 1e-12);
  expect_close(values(gbeta_sum), values(whole.gbeta), 1e-12);
  CHECK(std::abs(values(shard[1].ggamma)[0] - values(whole.ggamma)[0]) > 1e-3);
}

TEST_CASE("batch_normalization: backward calls sum_over_processes only when x needs a gradient",
          "[batch_normalization][hook]") {
  int calls = 0;
  const F::SumOverProcesses count_calls = [&](const Tensor& t) {
    ++calls;
    return t;
  };
  Variable x(uniform({4, 2}, 70)), gamma(Tensor::ones({2}, DType::Float64), true);
  Variable y = F::batch_normalization(x, gamma, Variable(Tensor::zeros({2}, DType::Float64)),
                                      {.sum_over_processes = count_calls});
  CHECK(calls == 1);
  F::sum(y * y).backward();
  CHECK(calls == 1);
  CHECK(gamma.grad().defined());
}

TEST_CASE("batch_normalization and fixed_batch_normalization: errors name the op, the value and the expectation",
          "[batch_normalization][errors]") {
  const Variable x(Tensor::zeros({4, 3})), g(Tensor::ones({3})), b(Tensor::zeros({3}));
  using Catch::Contains;
  CHECK_THAT(error_of([&] { F::batch_normalization(x, Variable(Tensor::ones({4})), b); }),
             Contains("batch_normalization: gamma has shape (4,)") && Contains("expected (3,)"));
  CHECK_THAT(error_of([&] { F::batch_normalization(x, g, Variable(Tensor::zeros({3, 1}))); }),
             Contains("batch_normalization: beta has shape (3, 1)") && Contains("expected (3,)"));
  CHECK_THAT(error_of([&] { F::batch_normalization(Variable(Tensor::zeros({3})), g, b); }),
             Contains("batch_normalization: x has shape (3,)") && Contains("expected (N, C) or (N, C, ...)"));
  CHECK_THAT(error_of([&] { F::batch_normalization(x, Variable(Tensor::ones({3}, DType::Float64)), b); }),
             Contains("batch_normalization: gamma has dtype float64 but x has dtype float32"));
  CHECK_THAT(error_of([&] { F::batch_normalization(Variable(Tensor::zeros({1, 3})), g, b); }),
             Contains("batch_normalization: the batch has 1 value per channel (x has shape (1, 3))") &&
                 Contains("more than 1 to estimate a variance"));
  CHECK_THAT(error_of([&] { F::batch_normalization(x, g, b, {.running_var = Tensor::ones({2})}); }),
             Contains("batch_normalization: running_var has shape (2,)") && Contains("expected (3,)"));
  const F::SumOverProcesses too_short = [](const Tensor& t) { return t.narrow(0, 0, 2); };
  CHECK_THAT(error_of([&] { F::batch_normalization(x, g, b, {.sum_over_processes = too_short}); }),
             Contains("batch_normalization: sum_over_processes returned float64 (2,) for the float64 (7,)"));
  CHECK_THAT(error_of([&] { F::fixed_batch_normalization(x, g, b, Variable(Tensor::zeros({2})), g); }),
             Contains("fixed_batch_normalization: mean has shape (2,)") && Contains("expected (3,)"));
  CHECK_THAT(error_of([&] { F::fixed_batch_normalization(Variable(Tensor::zeros({3}, DType::Int32)), g, b, b, g); }),
             Contains("fixed_batch_normalization: x has dtype int32; expected float32, float64, float16 or bfloat16"));
  // One example is fine at test time: the statistics are given.
  CHECK(error_of([&] { F::fixed_batch_normalization(Variable(Tensor::zeros({1, 3})), g, b, b, g); }).empty());
}

// ---- the axis argument ----

namespace {
// Batch normalization of X over AXES (sorted), gamma/beta of the other axes' extents, in float64.
Tensor naive_batch_norm(const Tensor& x, const std::vector<int64_t>& axes, const Tensor& gamma, const Tensor& beta,
                        double eps = 2e-5) {
  const int64_t nd = x.ndim();
  const std::vector<double> v = values(x), g = values(gamma), b = values(beta);
  const std::vector<int64_t> strides = contiguous_strides(x.shape());
  // The channel of each element: its coordinates on the kept axes, row-major.
  std::vector<size_t> channel(v.size(), 0);
  for (size_t k = 0; k < v.size(); ++k)
    for (int64_t d = 0; d < nd; ++d)
      if (std::find(axes.begin(), axes.end(), d) == axes.end())
        channel[k] = channel[k] * size_t(x.shape()[size_t(d)]) +
                     size_t(int64_t(k) / strides[size_t(d)] % x.shape()[size_t(d)]);
  std::vector<double> mean(g.size(), 0.0), var(g.size(), 0.0), count(g.size(), 0.0);
  for (size_t k = 0; k < v.size(); ++k) mean[channel[k]] += v[k], count[channel[k]] += 1;
  for (size_t c = 0; c < g.size(); ++c) mean[c] /= count[c];
  for (size_t k = 0; k < v.size(); ++k) var[channel[k]] += (v[k] - mean[channel[k]]) * (v[k] - mean[channel[k]]);
  std::vector<double> y(v.size());
  for (size_t k = 0; k < v.size(); ++k) {
    const size_t c = channel[k];
    y[k] = g[c] * (v[k] - mean[c]) / std::sqrt(var[c] / count[c] + eps) + b[c];
  }
  return Tensor::from_vector(y, x.shape());
}

struct AxisCase {
  std::string name;
  Shape x, gamma;
  F::Axes axis;
  std::vector<int64_t> reduced;
};
std::vector<AxisCase> axis_cases() {
  return {
      {"(N, C, H, W), default axis (0, 2, 3)", {3, 4, 3, 2}, {4}, {}, {0, 2, 3}},
      {"(N, C, H, W), axis (0, 2, 3) given", {2, 3, 3, 5}, {3}, F::Axes{0, 2, 3}, {0, 2, 3}},
      {"(N, C, H, W), gamma (C, H, W): default axis 0", {4, 2, 3, 2}, {2, 3, 2}, {}, {0}},
      {"(N, C, H, W), axis 0 given", {3, 2, 2, 3}, {2, 2, 3}, 0, {0}},
      {"(N, C), default axis 0", {5, 3}, {3}, {}, {0}},
      {"(N, C, L), axis (0, 1): channels last", {2, 3, 4}, {4}, F::Axes{0, 1}, {0, 1}},
      {"(N, C, L), axis 1: channels apart (a transposed copy)", {3, 4, 2}, {3, 2}, 1, {1}},
      {"(N, H, W, C), axis (0, 1, 2) with negative axes", {2, 3, 2, 3}, {3}, F::Axes{-4, -3, -2}, {0, 1, 2}},
      {"batch 1, (1, C, H, W)", {1, 3, 2, 3}, {3}, {}, {0, 2, 3}},
  };
}
}  // namespace

TEST_CASE("batch_normalization: axis picks the statistics' axes, as Chainer's; the output equals a naive reference",
          "[batch_normalization][axis]") {
  for (const AxisCase& c : axis_cases()) {
    INFO(c.name);
    const Tensor x = uniform(c.x, 71, -2, 3), gamma = uniform(c.gamma, 72, 0.5, 2), beta = uniform(c.gamma, 73);
    F::BatchNormalizationOptions options;
    options.axis = c.axis;
    CHECK_THAT(values(F::batch_normalization(Variable(x), Variable(gamma), Variable(beta), options)),
               Catch::Matchers::Approx(values(naive_batch_norm(x, c.reduced, gamma, beta))).margin(1e-9));
    // float32 follows: the kernels' float32 path with float64 statistics.
    const Variable y32 = F::batch_normalization(Variable(x.astype(DType::Float32)),
                                                Variable(gamma.astype(DType::Float32)),
                                                Variable(beta.astype(DType::Float32)), options);
    CHECK_THAT(values(y32), Catch::Matchers::Approx(values(naive_batch_norm(x, c.reduced, gamma, beta))).margin(1e-5));
  }
}

TEST_CASE("batch_normalization and fixed_batch_normalization: gradients match finite differences for every axis",
          "[batch_normalization][axis][gradient]") {
  // Channels of as few as 3 values can have a small spread: a step of 1e-4 keeps the central
  // differences of the batch statistics within the tolerance.
  const GradientCheckOptions small_step{.eps = 1e-4};
  for (const AxisCase& c : axis_cases()) {
    INFO(c.name);
    F::BatchNormalizationOptions options;
    options.axis = c.axis;
    check([&](const Vars& v) { return F::batch_normalization(v[0], v[1], v[2], options); },
          {uniform(c.x, 81), uniform(c.gamma, 82, 0.5, 2), uniform(c.gamma, 83)}, small_step);
    check([&](const Vars& v) { return F::fixed_batch_normalization(v[0], v[1], v[2], v[3], v[4], 2e-5, c.axis); },
          {uniform(c.x, 84), uniform(c.gamma, 85, 0.5, 2), uniform(c.gamma, 86), uniform(c.gamma, 87),
           uniform(c.gamma, 88, 0.5, 2)});
  }
}

TEST_CASE("batch_normalization: the running statistics take gamma's shape under axis", "[batch_normalization][axis]") {
  const Tensor x = uniform({4, 3, 2}, 91);
  Tensor mean = Tensor::zeros({3, 2}, DType::Float64), var = Tensor::ones({3, 2}, DType::Float64);
  F::BatchNormalizationOptions options;
  options.running_mean = mean;
  options.running_var = var;
  options.axis = 0;
  F::batch_normalization(Variable(x), Variable(Tensor::ones({3, 2}, DType::Float64)),
                         Variable(Tensor::zeros({3, 2}, DType::Float64)), options);
  // decay 0.9: 0.1 of the batch mean over axis 0.
  const std::vector<double> v = values(x), m = values(mean);
  for (int64_t c = 0; c < 6; ++c)
    CHECK(m[size_t(c)] == Approx(0.1 * (v[size_t(c)] + v[size_t(6 + c)] + v[size_t(12 + c)] + v[size_t(18 + c)]) / 4));
}

TEST_CASE("batch_normalization: errors for axis name the op, the axes and the expected shape",
          "[batch_normalization][axis][errors]") {
  const Variable x(Tensor::zeros({4, 3, 2}));
  F::BatchNormalizationOptions options;
  options.axis = 0;
  CHECK_THAT(error_of([&] { F::batch_normalization(x, Variable(Tensor::ones({3})), Variable(Tensor::zeros({3})),
                                                   options); }),
             Contains("batch_normalization: gamma has shape (3,) but x of shape (4, 3, 2) normalized over axis 0") &&
                 Contains("expected (3, 2)"));
  options.axis = 3;
  CHECK_THAT(error_of([&] { F::batch_normalization(x, Variable(Tensor::ones({3})), Variable(Tensor::zeros({3})),
                                                   options); }),
             Contains("batch_normalization: axis 3 is out of range for an array of 3 dimensions"));
  const Variable g(Tensor::ones({3})), b(Tensor::zeros({3}));
  CHECK_THAT(error_of([&] { F::fixed_batch_normalization(x, g, b, b, g, 2e-5, F::Axes{0, 1}); }),
             Contains("fixed_batch_normalization: gamma has shape (3,) but x of shape (4, 3, 2) normalized over axis "
                      "(0, 1)") &&
                 Contains("expected (2,)"));
}
