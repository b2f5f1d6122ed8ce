// Batch normalization in one process: functions::batch_normalization and
// fixed_batch_normalization against a reference computed element by element (2-D and 4-D
// inputs), against finite differences (float64), float32 against float64, the running
// statistics by Chainer's rule, the sum_over_processes hook with K processes simulated by K
// threads, the errors; then links::BatchNormalization: parameters, training and test mode,
// fine-tuning and serialization. tests/distributed/test_multi_node_links.cpp checks the multi-node link.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "autograd/gradient_check.h"
#include "core/util/config.h"
#include "core/ops/ops.h"
#include "core/util/random.h"
#include "core/io/serializer.h"
#include "nn/functions.h"
#include "nn/links/batch_normalization.h"

namespace F = chainer::functions;
namespace L = chainer::links;
using namespace chainer;
using Vars = std::vector<Variable>;

namespace {
constexpr double kEps = 2e-5;  // Chainer's default

Tensor uniform(const Shape& shape, uint64_t seed, double lo = -1.0, double hi = 1.0, DType dtype = DType::Float64) {
  Generator gen(seed);
  return random::uniform(shape, lo, hi, dtype, &gen);
}

Tensor normal(const Shape& shape, uint64_t seed, double mean = 0.0, double stddev = 1.0, DType dtype = DType::Float64) {
  Generator gen(seed);
  return random::normal(shape, mean, stddev, dtype, &gen);
}

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

// The values of X (N, C, ...) grouped by channel, in the reference's plain vectors.
std::vector<std::vector<double>> by_channel(const Tensor& x) {
  const std::vector<double> v = values(x);
  const int64_t n = x.size(0), c = x.size(1), inner = x.numel() / (n * c);
  std::vector<std::vector<double>> out(static_cast<size_t>(c));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t s = 0; s < inner; ++s) out[size_t(ch)].push_back(v[size_t((i * c + ch) * inner + s)]);
  return out;
}

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double a : v) s += a;
  return s / double(v.size());
}

double biased_var_of(const std::vector<double>& v) {
  const double m = mean_of(v);
  double s = 0;
  for (double a : v) s += (a - m) * (a - m);
  return s / double(v.size());
}

std::vector<double> batch_means(const Tensor& x) {
  std::vector<double> out;
  for (const auto& v : by_channel(x)) out.push_back(mean_of(v));
  return out;
}

std::vector<double> batch_vars(const Tensor& x) {
  std::vector<double> out;
  for (const auto& v : by_channel(x)) out.push_back(biased_var_of(v));
  return out;
}

// y = gamma (x - mean) / sqrt(var + eps) + beta, element by element in float64 (row-major).
std::vector<double> reference(const Tensor& x, const std::vector<double>& gamma, const std::vector<double>& beta,
                              const std::vector<double>& mean, const std::vector<double>& var, double eps = kEps) {
  const std::vector<double> v = values(x);
  const int64_t c = x.size(1), inner = x.numel() / (x.size(0) * c);
  std::vector<double> y(v.size());
  for (size_t k = 0; k < v.size(); ++k) {
    const size_t ch = size_t((int64_t(k) / inner) % c);
    y[k] = gamma[ch] * (v[k] - mean[ch]) / std::sqrt(var[ch] + eps) + beta[ch];
  }
  return y;
}

// Every |got - want| within tol (1 + |want|), with the worst named.
void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  if (got.empty()) return;
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(got[i] - want[i]) / (1 + std::abs(want[i]));
    if (!(err <= worst)) worst = err, at = i;
  }
  INFO("worst relative difference " << worst << " at flat index " << at << ": got " << got[at] << ", want "
                                     << want[at]);
  CHECK(worst <= tol);
}

void check(const std::function<Variable(const Vars&)>& f, const std::vector<Tensor>& inputs) {
  REQUIRE_NOTHROW(check_backward(f, inputs));
}

// The message of the chainer::Error F throws ("" when it throws none).
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

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

// ---- functions::batch_normalization ----

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
             Contains("fixed_batch_normalization: x has dtype int32; expected float32 or float64"));
  // One example is fine at test time: the statistics are given.
  CHECK(error_of([&] { F::fixed_batch_normalization(Variable(Tensor::zeros({1, 3})), g, b, b, g); }).empty());
}

// ---- links::BatchNormalization ----

TEST_CASE("BatchNormalization link: gamma and beta are parameters, avg_mean and avg_var persistents, as Chainer's",
          "[batch_normalization][link]") {
  L::BatchNormalization bn(3);
  std::vector<std::string> names;
  for (auto& [name, p] : bn.namedparams()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"/beta", "/gamma"});
  CHECK(values(bn.gamma()->data()) == std::vector<double>{1, 1, 1});
  CHECK(values(bn.beta()->data()) == std::vector<double>{0, 0, 0});
  CHECK(values(bn.avg_mean()) == std::vector<double>{0, 0, 0});
  CHECK(values(bn.avg_var()) == std::vector<double>{1, 1, 1});
  CHECK(bn.gamma()->data().dtype() == DType::Float32);

  L::BatchNormalization fixed_affine(2, {.dtype = DType::Float64, .use_gamma = false, .initial_beta = 0.5});
  names.clear();
  for (auto& [name, p] : fixed_affine.namedparams()) names.push_back(name);
  CHECK(names == std::vector<std::string>{"/beta"});
  CHECK(fixed_affine.gamma() == nullptr);
  CHECK(values(fixed_affine.beta()->data()) == std::vector<double>{0.5, 0.5});
  // Without gamma the output is x_hat + beta.
  const Tensor x = uniform({4, 2}, 80);
  const Variable y = fixed_affine(Variable(x));
  expect_close(values(y.data()), reference(x, {1, 1}, {0.5, 0.5}, batch_means(x), batch_vars(x)), 1e-12);
  CHECK_THAT(error_of([] { L::BatchNormalization(0); }),
             Catch::Contains("BatchNormalization: size must be positive, got 0"));
}

TEST_CASE("BatchNormalization link: training uses the batch and updates the averages; test mode uses the averages",
          "[batch_normalization][link]") {
  L::BatchNormalization bn(3, {.decay = 0.8, .dtype = DType::Float64});
  bn.gamma()->data().copy_(uniform({3}, 90, 0.5, 2));
  bn.beta()->data().copy_(uniform({3}, 91));
  const std::vector<double> gamma = values(bn.gamma()->data()), beta = values(bn.beta()->data());
  std::vector<double> want_mean{0, 0, 0}, want_var{1, 1, 1};
  for (uint64_t t = 0; t < 2; ++t) {
    const Tensor x = normal({4, 3, 2}, 92 + t, 1.0, 2.0);  // m = 8
    Variable xv(x, true);
    const Variable y = bn(xv);
    expect_close(values(y.data()), reference(x, gamma, beta, batch_means(x), batch_vars(x)), 1e-12);
    F::sum(y * y).backward();
    CHECK(bn.gamma()->grad().defined());
    CHECK(xv.grad().defined());
    bn.cleargrads();
    const auto mean = batch_means(x), var = batch_vars(x);
    for (size_t c = 0; c < 3; ++c) {
      want_mean[c] = 0.8 * want_mean[c] + 0.2 * mean[c];
      want_var[c] = 0.8 * want_var[c] + 0.2 * var[c] * 8.0 / 7.0;
    }
    expect_close(values(bn.avg_mean()), want_mean, 1e-14);
    expect_close(values(bn.avg_var()), want_var, 1e-14);
  }
  config::TrainScope test_mode(false);
  const Tensor x = normal({1, 3, 2}, 99);  // one example is fine in test mode
  const Variable y = bn(Variable(x));
  expect_close(values(y.data()), reference(x, gamma, beta, want_mean, want_var), 1e-12);
  expect_close(values(bn.avg_mean()), want_mean, 1e-14);  // unchanged
  expect_close(values(bn.avg_var()), want_var, 1e-14);
  CHECK(bn.N() == 0);
}

TEST_CASE("BatchNormalization link: fine-tuning averages the batch statistics since start_finetuning",
          "[batch_normalization][link]") {
  L::BatchNormalization bn(2, {.dtype = DType::Float64});
  bn(Variable(normal({5, 2}, 100, 4.0)));  // a plain step first: fine-tuning starts over
  std::vector<double> sum_mean{0, 0}, sum_var{0, 0};
  for (uint64_t t = 0; t < 3; ++t) {
    const Tensor x = normal({5, 2}, 101 + t, double(t), 1.0 + double(t));
    bn.forward(Variable(x), true);
    CHECK(bn.N() == int64_t(t) + 1);
    const auto mean = batch_means(x), var = batch_vars(x);
    for (size_t c = 0; c < 2; ++c) sum_mean[c] += mean[c], sum_var[c] += var[c] * 5.0 / 4.0;
  }
  expect_close(values(bn.avg_mean()), {sum_mean[0] / 3, sum_mean[1] / 3}, 1e-14);
  expect_close(values(bn.avg_var()), {sum_var[0] / 3, sum_var[1] / 3}, 1e-14);
  bn.start_finetuning();
  CHECK(bn.N() == 0);
  // A rejected input does not count.
  CHECK_FALSE(error_of([&] { bn.forward(Variable(Tensor::zeros({1, 2}, DType::Float64)), true); }).empty());
  CHECK(bn.N() == 0);
}

TEST_CASE("BatchNormalization link: serialize saves gamma, beta, avg_mean, avg_var and N, and loads them back",
          "[batch_normalization][link]") {
  L::BatchNormalization a(3);
  a.gamma()->data().copy_(uniform({3}, 110, 0.5, 2));
  a.forward(Variable(normal({4, 3}, 111, 1.0, 3.0, DType::Float32)), true);
  a.forward(Variable(normal({4, 3}, 112, 1.0, 3.0, DType::Float32)), true);
  Serializer writer = Serializer::writer();
  a.serialize(writer);
  std::vector<std::string> keys;
  for (const auto& [key, t] : writer.entries()) keys.push_back(key);
  CHECK(keys == std::vector<std::string>{"N", "avg_mean", "avg_var", "beta", "gamma"});

  L::BatchNormalization b(3);
  Serializer reader = Serializer::reader(writer.entries());
  b.serialize(reader);
  CHECK(b.N() == 2);
  CHECK(values(b.gamma()->data()) == values(a.gamma()->data()));
  CHECK(values(b.beta()->data()) == values(a.beta()->data()));
  CHECK(values(b.avg_mean()) == values(a.avg_mean()));
  CHECK(values(b.avg_var()) == values(a.avg_var()));
  CHECK(values(b.avg_mean()) != std::vector<double>{0, 0, 0});
}
