#include <catch2/catch.hpp>
#include <pmmintrin.h>
#include <xmmintrin.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <atomic>
#include <thread>
#include <filesystem>
#include <limits>
#include <sstream>
#include <string>

#include "tests/catch_session.h"
#include "core/memory/allocator.h"
#include "core/util/config.h"
#include "core/cpu/family.h"
#include "core/cpu/gemm_blocking.h"
#include "core/device/cuda.h"
#include "core/io/npz.h"
#include "core/ops/ops.h"
#include "core/util/parallel.h"
#include "core/util/parse.h"
#include "core/util/philox.h"
#include "core/util/random.h"
#include "core/tensor/tensor.h"
#include "core/ops/update_ops.h"

using namespace chainer;

// First in this file, so that it runs before anything sizes the team: a program that never
// calls set_num_threads computes with flush-to-zero on the thread that computes first (Adam's
// moments would otherwise decay into slow subnormals).
TEST_CASE("threads: the first thread to compute runs with flush-to-zero and denormals-are-zero") {
  const Tensor big = Tensor::full({1 << 16}, 1.0);
  CHECK(ops::add(big, big).numel() == 1 << 16);  // parallel_for: the team is made here
  CHECK(_MM_GET_FLUSH_ZERO_MODE() == _MM_FLUSH_ZERO_ON);
  CHECK(_MM_GET_DENORMALS_ZERO_MODE() == _MM_DENORMALS_ZERO_ON);
}

TEST_CASE("tensor: creation, shape and element access") {
  Tensor t = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  REQUIRE(t.shape() == Shape{2, 3});
  REQUIRE(t.numel() == 6);
  REQUIRE(t.is_contiguous());
  REQUIRE(t.dtype() == DType::Float32);
  REQUIRE(t.data<float>()[4] == 5.f);
  REQUIRE_THROWS_WITH(t.data<int32_t>(), Catch::Contains("float32") && Catch::Contains("int32"));
  REQUIRE(Tensor::zeros({3}, DType::Int32).to_vector<int32_t>() == std::vector<int32_t>{0, 0, 0});
  REQUIRE(Tensor::full({2}, 2.5, DType::Float64).to_vector<double>() == std::vector<double>{2.5, 2.5});
  REQUIRE(Tensor::scalar(7, DType::Int64).item<int64_t>() == 7);
  REQUIRE_THROWS_WITH(Tensor::from_vector<float>({1, 2}, {3}), Catch::Contains("(3,)"));
}

TEST_CASE("tensor: views share storage") {
  Tensor t = Tensor::arange(12).reshape({3, 4});
  Tensor row = t[1];
  REQUIRE(row.shape() == Shape{4});
  REQUIRE(row.shares_storage(t));
  REQUIRE(row.to_vector<float>() == std::vector<float>{4, 5, 6, 7});
  row.fill_(0);
  REQUIRE(t.to_vector<float>()[5] == 0.f);

  Tensor tt = t.transpose();
  REQUIRE(tt.shape() == Shape{4, 3});
  REQUIRE_FALSE(tt.is_contiguous());
  REQUIRE(tt.shares_storage(t));
  REQUIRE(tt.contiguous().to_vector<float>() == std::vector<float>{0, 0, 8, 1, 0, 9, 2, 0, 10, 3, 0, 11});

  Tensor col = t.narrow(1, 1, 2);
  REQUIRE(col.shape() == Shape{3, 2});
  REQUIRE(col.to_vector<float>() == std::vector<float>{1, 2, 0, 0, 9, 10});
  REQUIRE(t.reshape({-1}).shape() == Shape{12});
  REQUIRE_THROWS_WITH(t.reshape({5, -1}), Catch::Contains("(3, 4)") && Catch::Contains("(5, -1)"));
  REQUIRE_THROWS_WITH(t[3], Catch::Contains("out of range"));
}

TEST_CASE("tensor: a tensor over memory another object owns keeps that owner alive") {
  auto owner = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3, 4, 5, 6});
  std::weak_ptr<std::vector<float>> watch = owner;
  Tensor t = Tensor::from_storage(
      std::make_shared<Storage>(owner->data(), owner->size() * sizeof(float), Device{}, owner), {2, 2}, DType::Float32, 2);
  owner.reset();
  REQUIRE_FALSE(watch.expired());  // the storage holds it
  REQUIRE(t.to_vector<float>() == std::vector<float>{3, 4, 5, 6});
  t.fill_(0);
  REQUIRE(watch.lock()->at(2) == 0.f);  // no copy was made
  REQUIRE_THROWS_WITH(Tensor::from_storage(t.storage(), {7}, DType::Float32),
                      Catch::Contains("from_storage") && Catch::Contains("24 bytes"));
  t = Tensor();
  REQUIRE(watch.expired());  // the last view gone, the owner goes and frees its own memory
}

TEST_CASE("tensor: a tensor too large for memory is an Error naming its shape, not std::bad_alloc") {
  REQUIRE_THROWS_WITH(Tensor::empty({int64_t(1) << 25, int64_t(1) << 25}, DType::Float32),
                      Catch::Contains("out of memory") && Catch::Contains("(33554432, 33554432)") &&
                          Catch::Contains("needs 4194304.0 GiB on cpu"));
  // Element counts beyond 64 bits are an error too, not a silently wrapped (empty) tensor.
  REQUIRE_THROWS_WITH(Tensor::empty({int64_t(1) << 31, int64_t(1) << 31, int64_t(1) << 2}, DType::Float64),
                      Catch::Contains("(2147483648, 2147483648, 4)") && Catch::Contains("64-bit"));
  REQUIRE_THROWS_WITH(Tensor::empty({int64_t(1) << 31, int64_t(1) << 31}, DType::Float64),
                      Catch::Contains("out of memory"));
}

TEST_CASE("tensor: dtype conversion and copy across layouts") {
  Tensor a = Tensor::from_vector<double>({1.5, -2.5, 3.25, 4}, {2, 2});
  Tensor b = a.astype(DType::Float32);
  REQUIRE(b.to_vector<float>() == std::vector<float>{1.5f, -2.5f, 3.25f, 4.f});
  Tensor c = Tensor::empty({2, 2}, DType::Float64);
  c.copy_(a.transpose());
  REQUIRE(c.to_vector<double>() == std::vector<double>{1.5, 3.25, -2.5, 4});
  REQUIRE_THROWS_WITH(c.copy_(Tensor::zeros({3})), Catch::Contains("(3,)") && Catch::Contains("(2, 2)"));
}

// Sums with an empty axis anywhere: every subset of axes gives zeros of the kept shape, with
// no division by the empty extent when the work is split (reduced runs of no elements).
TEST_CASE("ops: sums of empty tensors over every subset of axes") {
  for (const Shape& shape : {Shape{0, 7, 11}, Shape{4, 0, 3}, Shape{5, 7, 0}})
    for (int mask = 0; mask < 8; ++mask) {
      std::vector<int64_t> axes;
      Shape kept;
      for (int64_t d = 0; d < 3; ++d)
        if (mask >> d & 1) axes.push_back(d);
        else kept.push_back(shape[size_t(d)]);
      if (mask == 0) kept = {};  // no axes given: a sum over all of them
      INFO("sum over " << axes.size() << " axes (mask " << mask << ") of (" << shape[0] << ", " << shape[1] << ", "
                       << shape[2] << ")");
      const Tensor s = ops::sum(Tensor::zeros(shape), axes);
      REQUIRE(s.shape() == kept);
      for (float v : s.to_vector<float>()) REQUIRE(v == 0.f);
    }
}

TEST_CASE("ops: broadcasting arithmetic and reductions") {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor row = Tensor::from_vector<float>({10, 20, 30}, {3});
  REQUIRE(ops::add(x, row).to_vector<float>() == std::vector<float>{11, 22, 33, 14, 25, 36});
  Tensor col = Tensor::from_vector<float>({1, 2}, {2, 1});
  REQUIRE(ops::mul(x, col).to_vector<float>() == std::vector<float>{1, 2, 3, 8, 10, 12});
  REQUIRE(ops::sub(x.transpose(), Tensor::from_vector<float>({1, 1}, {2})).to_vector<float>() ==
          std::vector<float>{0, 3, 1, 4, 2, 5});
  REQUIRE_THROWS_WITH(ops::add(x, Tensor::zeros({4})), Catch::Contains("(2, 3)") && Catch::Contains("(4,)"));
  REQUIRE(ops::sum(x).item<float>() == 21.f);
  REQUIRE(ops::sum(x, {0}).to_vector<float>() == std::vector<float>{5, 7, 9});
  REQUIRE(ops::sum(x, {-1}, true).shape() == Shape{2, 1});
  REQUIRE(ops::sum(x, {1}).to_vector<float>() == std::vector<float>{6, 15});
  REQUIRE(ops::sum_to(x, {1, 3}).to_vector<float>() == std::vector<float>{5, 7, 9});
  REQUIRE(ops::argmax(Tensor::from_vector<float>({1, 9, 3, 7, 2, 8}, {2, 3}), 1).to_vector<int32_t>() ==
          std::vector<int32_t>{1, 2});
  REQUIRE(ops::concat({x, x}, 0).shape() == Shape{4, 3});
  REQUIRE(ops::stack({x, x}, 1).shape() == Shape{2, 2, 3});
  // broadcast_to: from a column, from a transposed (strided) source, int32, and the error.
  REQUIRE(ops::broadcast_to(col, {2, 2, 3}).to_vector<float>() ==
          std::vector<float>{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2});
  REQUIRE(ops::broadcast_to(x.transpose().narrow(1, 0, 1), {3, 2}).to_vector<float>() ==
          std::vector<float>{1, 1, 2, 2, 3, 3});
  REQUIRE(ops::broadcast_to(Tensor::from_vector<int32_t>({7, 8, 9}), {2, 3}).to_vector<int32_t>() ==
          std::vector<int32_t>{7, 8, 9, 7, 8, 9});
  REQUIRE_THROWS_WITH(ops::broadcast_to(x, {3, 3}), Catch::Contains("broadcast_to") && Catch::Contains("(2, 3)"));
}

TEST_CASE("ops: matrix products match a naive reference in every transpose mode") {
  Generator gen(3);
  // Shapes crossing every blocking edge of the packed GEMM: partial tiles, K > KC, M > MC, N > NC.
  // Few columns (n <= 16, B transposed) take their own kernel: widths on both sides of its
  // 8-column passes, depths on both sides of 16-wide vectors.
  for (auto [m, n, k] : {std::tuple{1, 1, 1}, {7, 5, 3}, {64, 33, 17}, {100, 130, 257}, {250, 70, 600}, {3, 4200, 5},
                         {100, 10, 1000}, {33, 16, 31}, {9, 9, 16}, {100, 1000, 10}, {21, 67, 16}, {5, 17, 1}}) {
    for (int mode = 0; mode < 4; ++mode) {
      const bool ta = mode & 1, tb = mode & 2;
      Tensor a = random::normal(ta ? Shape{k, m} : Shape{m, k}, 0, 1, DType::Float64, &gen);
      Tensor b = random::normal(tb ? Shape{n, k} : Shape{k, n}, 0, 1, DType::Float64, &gen);
      Tensor c = ops::matmul(a, b, ta, tb);
      Tensor c32 = ops::matmul(a.astype(DType::Float32), b.astype(DType::Float32), ta, tb);
      auto A = a.to_vector<double>(), B = b.to_vector<double>();
      auto C = c.to_vector<double>(), C32 = c32.to_vector<double>();
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
          double ref = 0;
          for (int p = 0; p < k; ++p) ref += A[ta ? p * m + i : i * k + p] * B[tb ? j * k + p : p * n + j];
          REQUIRE(C[i * n + j] == Approx(ref).margin(1e-9));
          REQUIRE(C32[i * n + j] == Approx(ref).margin(1e-3 * std::sqrt(double(k))));
        }
    }
  }
  REQUIRE_THROWS_WITH(ops::matmul(Tensor::zeros({2, 3}), Tensor::zeros({4, 2})), Catch::Contains("not aligned"));
}

TEST_CASE("parse_integer: the whole text is the number, within bounds; errors name the source and the text") {
  CHECK(parse_integer("12", "--x") == 12);
  CHECK(parse_integer("+3", "--x", 1, 5) == 3);
  CHECK(parse_integer("-7", "--x") == -7);
  CHECK_THROWS_WITH(parse_integer("2.5", "--x"), "--x expects an integer, got '2.5'");
  CHECK_THROWS_WITH(parse_integer("x", "--x"), "--x expects an integer, got 'x'");
  CHECK_THROWS_WITH(parse_integer("", "--x"), "--x expects an integer, got ''");
  CHECK_THROWS_WITH(parse_integer("10x", "--x"), "--x expects an integer, got '10x'");
  CHECK_THROWS_WITH(parse_integer(" 1", "--x"), "--x expects an integer, got ' 1'");
  CHECK_THROWS_WITH(parse_integer("0", "--x", 1, 5), "--x must be at least 1, got 0");
  CHECK_THROWS_WITH(parse_integer("6", "--x", 1, 5), "--x must be at most 5, got 6");
  CHECK_THROWS_WITH(parse_integer("99999999999999999999", "-e/--epoch", 1), Catch::Contains("-e/--epoch must be at most"));
  CHECK_THROWS_WITH(parse_integer("-99999999999999999999", "--x"), Catch::Contains("--x must be at least"));
}

TEST_CASE("threads: CHAINER_NUM_THREADS is an integer from 1 to kMaxThreads, or an error naming it") {
  const char* saved = std::getenv("CHAINER_NUM_THREADS");
  const std::string restore = saved ? saved : "";
  setenv("CHAINER_NUM_THREADS", "3", 1);
  CHECK(default_num_threads() == 3);
  setenv("CHAINER_NUM_THREADS", "1000", 1);
  CHECK(default_num_threads() == 1000);
  for (const char* bad : {"0", "-1", "x", "2.5", "1025"}) {
    setenv("CHAINER_NUM_THREADS", bad, 1);
    CHECK_THROWS_WITH(default_num_threads(), Catch::StartsWith("CHAINER_NUM_THREADS ") && Catch::Contains(bad));
  }
  if (saved) setenv("CHAINER_NUM_THREADS", restore.c_str(), 1);
  else unsetenv("CHAINER_NUM_THREADS");
}

TEST_CASE("threads: OMP_NUM_THREADS, read when CHAINER_NUM_THREADS is unset, is OpenMP's list or an error naming it") {
  const char* saved_chainer = std::getenv("CHAINER_NUM_THREADS");
  const char* saved_omp = std::getenv("OMP_NUM_THREADS");
  const std::string restore_chainer = saved_chainer ? saved_chainer : "", restore_omp = saved_omp ? saved_omp : "";
  unsetenv("CHAINER_NUM_THREADS");
  setenv("OMP_NUM_THREADS", "3", 1);
  CHECK(default_num_threads() == 3);
  setenv("OMP_NUM_THREADS", "4,2", 1);  // threads per nesting level: the first is the team's
  CHECK(default_num_threads() == 4);
  for (const char* bad : {"abc", "0", "-2", "3x", ",4", "1025"}) {
    setenv("OMP_NUM_THREADS", bad, 1);
    CHECK_THROWS_WITH(default_num_threads(), Catch::StartsWith("OMP_NUM_THREADS "));
  }
  if (saved_chainer) setenv("CHAINER_NUM_THREADS", restore_chainer.c_str(), 1);
  if (saved_omp) setenv("OMP_NUM_THREADS", restore_omp.c_str(), 1);
  else unsetenv("OMP_NUM_THREADS");
}

TEST_CASE("threads: parallel_tasks runs every task exactly once, for any count and team size") {
  const int saved = num_threads();
  for (int team : {1, 2, 3, 8}) {  // 8: more threads than this machine's cores
    set_num_threads(team);
    REQUIRE(num_threads() == team);
    for (int64_t count : {0, 1, 2, 7, 1000}) {
      for (int max_threads : {1, 2, 64}) {
        std::vector<std::atomic<int>> runs(static_cast<size_t>(count));
        parallel_tasks(count, max_threads, [&](int64_t i) { runs[size_t(i)].fetch_add(1); });
        int64_t once = 0;
        for (auto& r : runs) once += r.load() == 1;
        INFO("team " << team << ", count " << count << ", max_threads " << max_threads);
        CHECK(once == count);
      }
    }
  }
  set_num_threads(saved);
}

TEST_CASE("threads: a task's exception reaches the caller, nested and concurrent calls complete, teams are replaced") {
  const int saved = num_threads();
  set_num_threads(3);
  // The first exception is rethrown in the caller; the team then runs the next job as usual.
  CHECK_THROWS_WITH(parallel_tasks(100, 3, [](int64_t i) {
                      if (i == 17) throw Error("task 17 failed");
                    }),
                    "task 17 failed");
  std::atomic<int64_t> sum{0};
  parallel_tasks(100, 3, [&](int64_t i) { sum += i; });
  CHECK(sum.load() == 4950);
  // A parallel_for inside a task runs on the task's thread, in full.
  std::atomic<int64_t> inner{0};
  parallel_tasks(8, 3, [&](int64_t) {
    parallel_for(1 << 16, 16, [&](int64_t b, int64_t e) { inner += e - b; });
  });
  CHECK(inner.load() == 8 << 16);
  // Two threads computing at once: one gets the team, the other runs its tasks itself.
  std::vector<int64_t> totals(2, 0);
  std::vector<std::thread> callers;
  for (int c = 0; c < 2; ++c)
    callers.emplace_back([&totals, c] {
      for (int rep = 0; rep < 200; ++rep) {
        std::atomic<int64_t> n{0};
        parallel_for(1 << 14, 64, [&](int64_t b, int64_t e) { n += e - b; });
        totals[size_t(c)] += n.load();
      }
    });
  for (std::thread& t : callers) t.join();
  CHECK(totals == std::vector<int64_t>{200 << 14, 200 << 14});
  // Teams made and replaced at once, before their workers have looked at anything, end cleanly.
  for (int rep = 0; rep < 200; ++rep) set_num_threads(1 + rep % 4);
  CHECK_THROWS_WITH(set_num_threads(kMaxThreads + 1), Catch::Contains("at most 1024"));
  set_num_threads(saved);
}

TEST_CASE("ops: a sum over the leading axis, split over threads, equals the column sums and ignores the thread count") {
  // Large enough that the columns are split over the team (the bias gradients of the tutorial).
  Generator gen(11);
  const int saved = num_threads();
  for (auto [rows, cols] : {std::pair{100, 1000}, {300, 37}, {7, 4099}}) {
    Tensor x = random::normal({rows, cols}, 0, 1, DType::Float32, &gen);
    const std::vector<float> v = x.to_vector<float>();
    std::vector<float> expected(static_cast<size_t>(cols), 0.f);
    for (int j = 0; j < cols; ++j) {
      double s = 0;
      for (int r = 0; r < rows; ++r) s += double(v[size_t(r) * cols + j]);
      expected[size_t(j)] = float(s);
    }
    set_num_threads(1);
    const std::vector<float> one = ops::sum(x, {0}).to_vector<float>();
    REQUIRE(one == expected);
    for (int t : {2, 3}) {
      set_num_threads(t);
      REQUIRE(ops::sum(x, {0}).to_vector<float>() == one);
    }
  }
  set_num_threads(saved);
}

TEST_CASE("ops: float32 matrix products do not depend on the number of threads") {
  // Our packed GEMM (AVX2 and AVX-512) computes every element of C by one micro-kernel sequence
  // in a fixed order, whichever thread takes its chunk: bit-identical results with 1, 2 and 3
  // threads. Eigen's product (the generic kernels) splits the sums by thread count, so there only
  // repeated runs with the same count must agree.
  const bool packed = std::string(cpu::gemm_backend()).rfind("packed-", 0) == 0;
  Generator gen(5);
  const int saved = num_threads();
  // (100, 10, 1000) with B transposed: the few-columns kernel.
  for (auto [m, n, k, tb] : {std::tuple{100, 1000, 784, false}, {1000, 784, 100, false}, {37, 300, 600, false},
                             {100, 10, 1000, true}, {100, 1000, 10, false}}) {
    Tensor a = random::normal({m, k}, 0, 1, DType::Float32, &gen);
    Tensor b = random::normal(tb ? Shape{n, k} : Shape{k, n}, 0, 1, DType::Float32, &gen);
    set_num_threads(1);
    const std::vector<float> one = ops::matmul(a, b, false, tb).to_vector<float>();
    for (int t : {2, 3}) {
      set_num_threads(t);
      const std::vector<float> first = ops::matmul(a, b, false, tb).to_vector<float>();
      REQUIRE(ops::matmul(a, b, false, tb).to_vector<float>() == first);
      if (packed) REQUIRE(first == one);
    }
  }
  set_num_threads(saved);
}

TEST_CASE("ops: the GEMM's blocking follows the CPU's caches and the micro-tile; CHAINER_GEMM_KC overrides its depth") {
  const cpu::GemmTile avx512{14, 32}, avx2{6, 16};
  const auto zen5 = cpu::gemm_blocking_for(avx512, 48 << 10, 1 << 20, nullptr);
  CHECK(zen5.kc == 256);  // the blocking measured best on the Zen 5
  CHECK(zen5.cw == 128);
  const auto zen4 = cpu::gemm_blocking_for(avx512, 32 << 10, 1 << 20, "");
  CHECK(zen4.kc == 192);  // the A micro-panel in a third of a 32 KiB L1d
  CHECK(zen4.cw == 160);
  // AVX2's 6-row panel fits a third of any L1d at the deepest slice; CW in whole 16-column panels.
  const auto zen3 = cpu::gemm_blocking_for(avx2, 32 << 10, 512 << 10, nullptr);
  CHECK(zen3.kc == 256);
  CHECK(zen3.cw == 64);
  CHECK(cpu::gemm_blocking_for(avx2, 48 << 10, 1 << 20, nullptr).cw == 128);
  CHECK(cpu::gemm_blocking_for(avx512, 48 << 10, 1 << 20, "64").kc == 64);
  CHECK(cpu::gemm_blocking_for(avx512, 48 << 10, 1 << 20, "64").cw == 512);
  for (const char* bad : {"100", "0", "528", "abc", "64x"})
    CHECK_THROWS_WITH(cpu::gemm_blocking_for(avx512, 48 << 10, 1 << 20, bad),
                      Catch::Contains("CHAINER_GEMM_KC must be a multiple of 16 from 16 to 512") &&
                          Catch::Contains(std::string("'") + bad + "'"));
}

TEST_CASE("ops: float32 products equal float64 ones at this CPU's blocking") {
  // The slice depth comes from the CPU's caches (CHAINER_GEMM_KC in the environment overrides it:
  // meson runs this case again with the depth a Zen 4 gets and a shallow one, in each kernel
  // family). Depths that cross slice edges unevenly, rows beyond one micro-panel, columns beyond
  // one chunk; the edges of both families' tiles (AVX2 6 x 16, AVX-512 14 x 32: a row or a
  // column past a whole tile, one tile exactly, less than one); the few-columns kernel with a
  // depth past its last whole vector; one element.
  CAPTURE(cpu::gemm_blocking());
  Generator gen(7);
  for (auto [m, n, k, ta, tb] : {std::tuple{29, 300, 700, false, false}, {100, 1000, 784, false, false},
                                 {1000, 784, 100, true, false}, {15, 33, 1025, false, true}, {3, 700, 257, true, true},
                                 {7, 17, 9, false, false}, {6, 16, 16, true, false}, {14, 32, 5, false, true},
                                 {13, 31, 40, true, true}, {100, 10, 1001, false, true}, {1, 1, 1, false, false}}) {
    Tensor a = random::normal(ta ? Shape{k, m} : Shape{m, k}, 0, 1, DType::Float32, &gen);
    Tensor b = random::normal(tb ? Shape{n, k} : Shape{k, n}, 0, 1, DType::Float32, &gen);
    const std::vector<float> got = ops::matmul(a, b, ta, tb).to_vector<float>();
    const std::vector<double> want =
        ops::matmul(a.astype(DType::Float64), b.astype(DType::Float64), ta, tb).to_vector<double>();
    size_t worst = 0;
    for (size_t i = 0; i < got.size(); ++i)
      if (std::abs(got[i] - want[i]) > std::abs(got[worst] - want[worst])) worst = i;
    CAPTURE(m, n, k, ta, tb, worst);
    REQUIRE(got[worst] == Approx(want[worst]).margin(1e-4 * std::sqrt(double(k))));
  }
}

TEST_CASE("ops: gemm accumulates with alpha and beta") {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  Tensor c = Tensor::from_vector<float>({10, 20, 30, 40}, {2, 2});
  ops::gemm(a, false, a, true, 2.0, 0.5, c);  // 2 * a a^T + 0.5 c (the few-columns kernel)
  REQUIRE(c.to_vector<float>() == std::vector<float>{15, 32, 37, 70});
  c = Tensor::from_vector<float>({10, 20, 30, 40}, {2, 2});
  ops::gemm(a, false, a, false, 2.0, 0.5, c);  // 2 * a a + 0.5 c (the packed kernel)
  REQUIRE(c.to_vector<float>() == std::vector<float>{19, 30, 45, 64});
  Tensor big = random::normal({40, 300}, 0, 1, DType::Float32);
  Tensor acc = random::normal({40, 40}, 0, 1, DType::Float32);  // the packed kernel
  Tensor expect = ops::add(ops::mul_scalar(ops::matmul(big, big, false, true), 2.0), ops::mul_scalar(acc, 0.5));
  ops::gemm(big, false, big, true, 2.0, 0.5, acc);
  auto got = acc.to_vector<float>(), want = expect.to_vector<float>();
  for (size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == Approx(want[i]).margin(1e-3));
  Tensor empty_k = Tensor::zeros({2, 0});
  Tensor d = Tensor::full({2, 2}, 3.0);
  ops::gemm(empty_k, false, empty_k, true, 1.0, 0.0, d);
  REQUIRE(d.to_vector<float>() == std::vector<float>{0, 0, 0, 0});
}

TEST_CASE("random: seeded streams repeat and restore") {
  Generator a(42), b(42);
  REQUIRE(a.next_u64() == b.next_u64());
  a.normal();
  auto state = a.state();
  double x = a.normal(), y = a.normal();
  a.set_state(state);
  REQUIRE(a.normal() == x);
  REQUIRE(a.normal() == y);
  auto perm = Generator(1).permutation(100);
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 100; ++i) REQUIRE(sorted[size_t(i)] == i);
  Tensor n = random::normal({20000}, 0, 2, DType::Float64, &b);
  auto v = n.to_vector<double>();
  double mean = 0, var = 0;
  for (double e : v) mean += e / double(v.size());
  for (double e : v) var += (e - mean) * (e - mean) / double(v.size());
  REQUIRE(mean == Approx(0).margin(0.05));
  REQUIRE(var == Approx(4).epsilon(0.05));
}

TEST_CASE("config: env_flag reads yes/no switches one way, and anything else is an error naming the variable") {
  const char* name = "CHAINER_TEST_ENV_FLAG";
  unsetenv(name);
  CHECK(config::env_flag(name, true));
  CHECK_FALSE(config::env_flag(name, false));
  setenv(name, "", 1);  // empty: as unset
  CHECK(config::env_flag(name, true));
  CHECK_FALSE(config::env_flag(name, false));
  for (const char* off : {"0", "false"}) {
    setenv(name, off, 1);
    CHECK_FALSE(config::env_flag(name, true));
  }
  for (const char* off : {"no", "off", "FALSE", "Off"}) {
    setenv(name, off, 1);
    CHECK_FALSE(config::env_flag(name, true));
  }
  for (const char* on : {"1", "yes", "true", "on", "TRUE", "Yes"}) {
    setenv(name, on, 1);
    CHECK(config::env_flag(name, false));
  }
  for (const char* bad : {"abc", "2", "enabled", "0 "}) {
    setenv(name, bad, 1);
    CHECK_THROWS_WITH(config::env_flag(name, true),
                      Catch::StartsWith("CHAINER_TEST_ENV_FLAG expects a yes/no value") && Catch::Contains(bad));
  }
  unsetenv(name);
}

TEST_CASE("allocator: large blocks are recycled, small and huge ones are not cached") {
  using namespace chainer;
  host_empty_cache();
  const AllocatorStats before = host_allocator_stats();
  const void* first = nullptr;
  {
    Tensor a = Tensor::empty({1000, 1000}, DType::Float32);  // 4 MB: cached when freed
    first = a.raw_data();
    REQUIRE(reinterpret_cast<uintptr_t>(first) % 64 == 0);
    // 2 MiB and more: on huge-page boundaries, so the advice can give it huge pages.
    if (config::env_flag("CHAINER_HUGEPAGES", true)) REQUIRE(reinterpret_cast<uintptr_t>(first) % (size_t(2) << 20) == 0);
  }
  REQUIRE(host_allocator_stats().cached_bytes >= size_t(4000000));
  {
    Tensor b = Tensor::empty({1000, 1000}, DType::Float32);  // the same size class: the same block
    REQUIRE(b.raw_data() == first);
    Tensor c = Tensor::empty({990, 1000}, DType::Float32);  // a little smaller: same class, a new block
    REQUIRE(c.raw_data() != first);
    REQUIRE(reinterpret_cast<uintptr_t>(c.raw_data()) % 64 == 0);
  }
  const AllocatorStats after = host_allocator_stats();
  REQUIRE(after.allocations - before.allocations == 3);
  REQUIRE(after.cache_hits - before.cache_hits == 1);
  REQUIRE(after.in_use_bytes == before.in_use_bytes);
  {
    Tensor small = Tensor::empty({100}, DType::Float32);  // below kCachedBlockMinBytes
    (void)small;
  }
  REQUIRE(host_allocator_stats().allocations == after.allocations);
  {
    Tensor huge = Tensor::empty({int64_t(kCachedBlockMaxBytes / 4) + 1}, DType::Float32);  // above the largest cached
    REQUIRE(host_allocator_stats().in_use_bytes > after.in_use_bytes);
  }
  REQUIRE(host_allocator_stats().cached_bytes == after.cached_bytes);  // back to the system, not kept
  REQUIRE(host_allocator_stats().in_use_bytes == after.in_use_bytes);

  // A lower limit returns blocks to the system; an empty cache holds nothing.
  const size_t limit = host_cache_limit();
  set_host_cache_limit(size_t(1) << 20);
  REQUIRE(host_allocator_stats().cached_bytes <= size_t(1) << 20);
  set_host_cache_limit(limit);
  host_empty_cache();
  REQUIRE(host_allocator_stats().cached_bytes == 0);
}

TEST_CASE("random: Philox4x32-10 matches the published test vector; dropout masks are Philox values of one key") {
  const philox::Block b = philox::block(0, 0);  // Random123's known-answer test, counter and key 0
  CHECK(b.v[0] == 0x6627e8d5u);
  CHECK(b.v[1] == 0xe169c58du);
  CHECK(b.v[2] == 0xbc57ac4cu);
  CHECK(b.v[3] == 0x9b00dbd8u);
  // The mask draws one key and thresholds Philox values of it: the same on every device, for any
  // thread count (so a CUDA mask equals this one).
  Generator gen(11), copy(11);
  const Tensor mask = ops::dropout_mask({7, 13}, 0.3, DType::Float32, Device::cpu(), gen);
  const uint64_t key = copy.next_u64();
  const std::vector<float> got = mask.to_vector<float>();
  for (int64_t i = 0; i < 91; ++i)
    REQUIRE(got[size_t(i)] == (philox::uniform(key, uint64_t(i)) >= 0.3 ? float(1.0 / 0.7) : 0.f));
  CHECK(gen.next_u64() == copy.next_u64());  // exactly one draw per mask
  set_num_threads(1);
  Generator again(11);
  CHECK(ops::dropout_mask({7, 13}, 0.3, DType::Float32, Device::cpu(), again).to_vector<float>() == got);
  set_num_threads(0);
}

TEST_CASE("random: random_normal is Box-Muller of one key's Philox words, for any thread count") {
  Generator gen(5), copy(5);
  const Tensor z = ops::random_normal({3, 7}, 2.0, 0.5, DType::Float64, Device::cpu(), gen);
  const uint64_t key = copy.next_u64();
  const std::vector<double> got = z.to_vector<double>();
  for (int64_t i = 0; i < 21; ++i) {
    const philox::Block w = philox::block(key, uint64_t(i / 4));
    const int pair = int(i % 4) / 2;
    const double u1 = (double(w.v[2 * pair]) + 1.0) / 4294967296.0, u2 = double(w.v[2 * pair + 1]) / 4294967296.0;
    const double r = std::sqrt(-2.0 * std::log(u1)), angle = 2.0 * M_PI * u2;
    REQUIRE(got[size_t(i)] == Approx(2.0 + 0.5 * (i % 2 ? r * std::sin(angle) : r * std::cos(angle))).epsilon(1e-14));
  }
  CHECK(gen.next_u64() == copy.next_u64());  // exactly one draw per tensor
  // A million samples: the mean and deviation asked for (standard errors 0.001 and 0.0007).
  Generator big(9);
  const std::vector<float> many = ops::random_normal({1000, 1000}, -1.0, 3.0, DType::Float32, Device::cpu(), big)
                                      .to_vector<float>();
  double sum = 0, sq = 0;
  for (float v : many) sum += v, sq += double(v) * v;
  const double mean = sum / 1e6, sd = std::sqrt(sq / 1e6 - mean * mean);
  CHECK(mean == Approx(-1.0).margin(0.015));
  CHECK(sd == Approx(3.0).margin(0.01));
  set_num_threads(1);
  Generator again(9);
  CHECK(ops::random_normal({1000, 1000}, -1.0, 3.0, DType::Float32, Device::cpu(), again).to_vector<float>() == many);
  set_num_threads(0);
  CHECK(ops::random_normal({0}, 0, 1, DType::Float32, Device::cpu(), gen).numel() == 0);
  CHECK_THROWS_WITH(ops::random_normal({2}, 0, -1, DType::Float32, Device::cpu(), gen),
                    Catch::Contains("random_normal: mean 0 and stddev -1 are not valid"));
  CHECK_THROWS_WITH(ops::random_normal({2}, 0, 1, DType::Int32, Device::cpu(), gen),
                    Catch::Contains("random_normal: dtype int32 is not supported"));
}

TEST_CASE("ops: take_rows, scale_to_ and accumulate_") {
  const Tensor src = Tensor::arange(12, DType::Float64).reshape({4, 3});
  CHECK(ops::take_rows(src, {3, 0, 3}).to_vector<double>() == std::vector<double>{9, 10, 11, 0, 1, 2, 9, 10, 11});
  CHECK(ops::take_rows(src.transpose(), {1}).to_vector<double>() == std::vector<double>{1, 4, 7, 10});
  CHECK(ops::take_rows(src, {}).shape() == Shape{0, 3});
  REQUIRE_THROWS_WITH(ops::take_rows(src, {4}), Catch::Contains("take_rows: row 4 is out of range") &&
                                                     Catch::Contains("4 rows"));
  Tensor out = Tensor::zeros({3, 4}, DType::Float64);
  ops::scale_to_(out, src.transpose(), 0.5);
  CHECK(out.to_vector<double>() == std::vector<double>{0, 1.5, 3, 4.5, 0.5, 2, 3.5, 5, 1, 2.5, 4, 5.5});
  REQUIRE_THROWS_WITH(ops::scale_to_(out, src, 1.0), Catch::Contains("scale_to: shapes (3, 4) and (4, 3) differ"));
  Tensor acc = Tensor::zeros({}, DType::Float64);
  ops::accumulate_(acc, Tensor::scalar(0.25, DType::Float32));
  ops::accumulate_(acc, Tensor::scalar(1.5, DType::Float64));
  CHECK(acc.item_double() == 1.75);
  REQUIRE_THROWS_WITH(ops::accumulate_(out, acc), Catch::Contains("accumulate: the accumulator must be one float64"));
}

TEST_CASE("cuda: a device that cannot be used is an error naming it and why, not a crash", "[no-gpu]") {
  SKIP_UNLESS(!cuda::is_available(), "a CUDA device is usable here: the GPU suite covers this case");
  CHECK(cuda::device_count() == 0);
  const std::string why = cuda::unavailable_reason();
  CHECK_FALSE(why.empty());
  REQUIRE_THROWS_WITH(Tensor::ones({2}).to(Device::cuda(0)),
                      Catch::Contains("cuda:0: no CUDA device is available") && Catch::Contains(why));
  REQUIRE_THROWS_WITH(cuda::get_device(1), Catch::Contains("cuda:1"));
  // The CPU is untouched by the failed attempts.
  CHECK(ops::add(Tensor::ones({2}), Tensor::ones({2})).to_vector<float>() == std::vector<float>{2, 2});
}

// ---- float16 and bfloat16: storage types (core/tensor/float16.h) ----

namespace {
// The bits of each element of T (float16 or bfloat16, any layout).
std::vector<uint16_t> bits16(const Tensor& t) {
  const Tensor c = t.contiguous();
  std::vector<uint16_t> out(size_t(c.numel()));
  if (!out.empty()) std::memcpy(out.data(), c.raw_data(), out.size() * 2);
  return out;
}
bool is_nan16(uint16_t bits, DType dtype) {
  const uint16_t exponent = dtype == DType::Float16 ? 0x7c00 : 0x7f80;
  return (bits & exponent) == exponent && (bits & ~exponent & 0x7fff) != 0;
}
const float kNaN32 = std::numeric_limits<float>::quiet_NaN();
const float kInf32 = std::numeric_limits<float>::infinity();
std::string fmt_hex(float v) {
  std::ostringstream os;
  os << std::hexfloat << v;
  return os.str();
}
}  // namespace

TEST_CASE("tensor: float32 to float16 rounds to nearest even, overflows to infinity, keeps subnormals") {
  struct Case {
    float value;
    uint16_t bits;
  };
  const float ulp1 = 0x1p-10f;  // float16's spacing at 1
  const std::vector<Case> cases = {
      {1.0f, 0x3c00}, {-2.0f, 0xc000}, {0.0f, 0x0000}, {-0.0f, 0x8000}, {0.1f, 0x2e66},
      {65504.0f, 0x7bff},            // the largest float16
      {65519.996f, 0x7bff},          // just below halfway to 65536: still the largest
      {65520.0f, 0x7c00},            // halfway: ties to even, which is infinity
      {-65520.0f, 0xfc00}, {1e10f, 0x7c00}, {kInf32, 0x7c00}, {-kInf32, 0xfc00},
      {0x1p-24f, 0x0001},            // the smallest subnormal
      {0x1p-25f, 0x0000},            // half of it: a tie, to even (zero)
      {0x1.8p-25f, 0x0001},          // above the tie
      {0x1.8p-24f, 0x0002},          // 1.5 units: a tie between 1 and 2, to even
      {0x1.4p-23f, 0x0002},          // 2.5 units: a tie between 2 and 3, to even
      {1023 * 0x1p-24f, 0x03ff},     // the largest subnormal
      {0x1.ffcp-15f, 0x0400},        // rounds up into the smallest normal
      {0x1p-14f, 0x0400},
      {1 + ulp1 / 2, 0x3c00},        // ties to even in the normal range: down to 1 ...
      {1 + 3 * ulp1 / 2, 0x3c02},    // ... and up to 1 + 2 ulp
      {1 + ulp1 / 2 + 0x1p-20f, 0x3c01},  // just above a tie: up
      {2047.0f, 0x67ff}, {2049.0f, 0x6800},  // 2049 ties between 2048 and 2050: even (2048)
  };
  std::vector<float> values;
  for (const Case& c : cases) values.push_back(c.value);
  const std::vector<uint16_t> got = bits16(Tensor::from_vector(values).astype(DType::Float16));
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO("float32 " << fmt_hex(cases[i].value) << " -> float16 0x" << std::hex << got[i] << ", expected 0x"
                    << cases[i].bits);
    CHECK(got[i] == cases[i].bits);
  }
  const std::vector<uint16_t> nans = bits16(Tensor::from_vector(std::vector<float>{kNaN32, -kNaN32}).astype(DType::Float16));
  CHECK(is_nan16(nans[0], DType::Float16));
  CHECK(is_nan16(nans[1], DType::Float16));
  CHECK((nans[1] & 0x8000) != 0);  // the sign stays
}

TEST_CASE("tensor: float32 to bfloat16 rounds to nearest even; NaN stays NaN") {
  struct Case {
    float value;
    uint16_t bits;
  };
  const float ulp1 = 0x1p-7f;  // bfloat16's spacing at 1
  const std::vector<Case> cases = {
      {1.0f, 0x3f80}, {-2.0f, 0xc000}, {-0.0f, 0x8000}, {3.0f, 0x4040},
      {1 + ulp1 / 2, 0x3f80}, {1 + 3 * ulp1 / 2, 0x3f82}, {1 + ulp1 / 2 + 0x1p-20f, 0x3f81},
      {0x1.fep127f, 0x7f7f},                            // the largest bfloat16
      {std::numeric_limits<float>::max(), 0x7f80},      // above halfway to 2^128: infinity
      {kInf32, 0x7f80}, {-kInf32, 0xff80},
      {0x1p-133f, 0x0001},                              // the smallest bfloat16 subnormal
      {0x1p-134f, 0x0000},                              // half of it: to even (zero)
      {0x1p-149f, 0x0000},                              // the smallest float32 subnormal
  };
  std::vector<float> values;
  for (const Case& c : cases) values.push_back(c.value);
  const std::vector<uint16_t> got = bits16(Tensor::from_vector(values).astype(DType::BFloat16));
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO("float32 " << fmt_hex(cases[i].value) << " -> bfloat16 0x" << std::hex << got[i] << ", expected 0x"
                    << cases[i].bits);
    CHECK(got[i] == cases[i].bits);
  }
  // A NaN whose payload lies only in the bits that are cut off must not become infinity.
  float low_payload_nan;
  const uint32_t nan_bits = 0x7f800001u;
  std::memcpy(&low_payload_nan, &nan_bits, 4);
  const std::vector<uint16_t> nans =
      bits16(Tensor::from_vector(std::vector<float>{kNaN32, low_payload_nan, -kNaN32}).astype(DType::BFloat16));
  for (uint16_t b : nans) CHECK(is_nan16(b, DType::BFloat16));
  CHECK((nans[2] & 0x8000) != 0);
}

// The CPU kernels run with flush-to-zero and denormals-are-zero (the first test case above), which
// would turn float32 subnormals into zeros on their way to and from float64: the 16-bit
// conversions keep them, as CUDA's do.
TEST_CASE("tensor: float64 to and from bfloat16 keeps float32 subnormals under flush-to-zero") {
  REQUIRE(_MM_GET_FLUSH_ZERO_MODE() == _MM_FLUSH_ZERO_ON);
  REQUIRE(_MM_GET_DENORMALS_ZERO_MODE() == _MM_DENORMALS_ZERO_ON);
  const std::vector<double> values = {0x1p-133, -0x1p-133, 0x1p-134, 0x1.8p-134, 0x1.8p-133, 0x1p-127 + 0x1p-140,
                                      0x1p-1074, -0x1p-149, 0x1.fcp-127};
  const std::vector<uint16_t> want = {0x0001, 0x8001, 0x0000, 0x0001, 0x0002, 0x0040, 0x0000, 0x8000, 0x007f};
  const std::vector<uint16_t> got = bits16(Tensor::from_vector(values).astype(DType::BFloat16));
  for (size_t i = 0; i < values.size(); ++i) {
    INFO("float64 " << values[i] << " -> bfloat16 0x" << std::hex << got[i] << ", expected 0x" << want[i]);
    CHECK(got[i] == want[i]);
  }
  Tensor all = Tensor::empty({65536}, DType::BFloat16);
  for (uint32_t i = 0; i < 65536; ++i) static_cast<uint16_t*>(all.raw_data())[i] = uint16_t(i);
  const std::vector<double> wide = all.astype(DType::Float64).to_vector<double>();
  size_t bad = 0;
  for (uint32_t i = 0; i < 65536; ++i) {
    if ((i & 0x7f80u) != 0) continue;  // normal values: float's own conversion
    const double value = double(i & 0x7fu) * 0x1p-133 * (i & 0x8000u ? -1 : 1);
    bad += wide[i] != value || std::signbit(wide[i]) != bool(i & 0x8000u);
  }
  CHECK(bad == 0);
}

TEST_CASE("tensor: every float16 and bfloat16 value converts to float32 and back to the same bits") {
  for (DType dtype : {DType::Float16, DType::BFloat16}) {
    INFO(dtype_name(dtype));
    Tensor all = Tensor::empty({65536}, dtype);
    for (uint32_t i = 0; i < 65536; ++i) static_cast<uint16_t*>(all.raw_data())[i] = uint16_t(i);
    const Tensor wide = all.astype(DType::Float32);
    const std::vector<float> values = wide.to_vector<float>();
    const std::vector<uint16_t> back = bits16(wide.astype(dtype));
    size_t bad = 0;
    for (uint32_t i = 0; i < 65536; ++i) {
      const bool nan = is_nan16(uint16_t(i), dtype);
      if (nan ? !(std::isnan(values[i]) && is_nan16(back[i], dtype)) : back[i] != i) ++bad;
    }
    CHECK(bad == 0);
    // Known values on the way out: float16 0x0001 is 2^-24, 0x7bff is 65504, 0x7c00 infinity.
    if (dtype == DType::Float16) {
      CHECK(values[0x0001] == 0x1p-24f);
      CHECK(values[0x03ff] == 1023 * 0x1p-24f);
      CHECK(values[0x3c00] == 1.0f);
      CHECK(values[0x7bff] == 65504.0f);
      CHECK(values[0x7c00] == kInf32);
      CHECK(values[0xfc00] == -kInf32);
    } else {
      CHECK(values[0x3f80] == 1.0f);
      CHECK(values[0x0001] == 0x1p-133f);
      CHECK(values[0x7f80] == kInf32);
    }
  }
}

TEST_CASE("tensor: widen and narrow convert whole float16 arrays as the element conversions do") {
  // The arrays' conversions are the CPU kernel family's (F16C in the vector families; this binary
  // runs once per family): every float16 pattern widens to its value, and floats of every kind
  // (ties, overflow, subnormals, infinities, NaN) narrow to the element conversion's bits. The
  // lengths leave tails after the 8-element blocks.
  std::vector<float16> all(65536 + 5);
  for (size_t i = 0; i < all.size(); ++i) all[i].bits = uint16_t(i);
  std::vector<float> wide(all.size());
  widen(all.data(), wide.data(), int64_t(all.size()));
  size_t bad = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const float want = float(all[i]);
    bad += std::isnan(want) ? !std::isnan(wide[i]) : wide[i] != want;
  }
  CHECK(bad == 0);
  std::vector<float> floats;
  Generator gen(21);
  for (int i = 0; i < 4003; ++i) floats.push_back(float(gen.normal()) * std::ldexp(1.f, i % 60 - 30));
  for (float f : {0.f, -0.f, 65504.f, 65520.f, 65519.99f, 1e9f, -1e9f, 0x1p-24f, 0x1p-25f, 0x1.8p-25f, 0x1p-26f,
                  1.00048828125f, 1.00146484375f, kInf32, -kInf32, std::nanf("")})
    floats.push_back(f);
  std::vector<float16> narrowed(floats.size());
  narrow(floats.data(), narrowed.data(), int64_t(floats.size()));
  bad = 0;
  for (size_t i = 0; i < floats.size(); ++i) {
    const float16 want(floats[i]);
    bad += std::isnan(floats[i]) ? !std::isnan(float(narrowed[i])) : narrowed[i].bits != want.bits;
  }
  CHECK(bad == 0);
}

TEST_CASE("tensor: float64 to float16 and bfloat16 rounds once (no double rounding through float32)") {
  // 1 + 2^-11 + 2^-40 lies just above the float16 tie between 1 and 1 + 2^-10, but float32 rounds
  // it onto the tie itself; rounding that again would give 1. Likewise for bfloat16 at 1 + 2^-8.
  const Tensor h = Tensor::from_vector(std::vector<double>{1 + 0x1p-11 + 0x1p-40, 1 + 0x1p-11, 65519.999999, 65520.0,
                                                           0x1p-25 + 0x1p-60})
                       .astype(DType::Float16);
  CHECK(bits16(h) == std::vector<uint16_t>{0x3c01, 0x3c00, 0x7bff, 0x7c00, 0x0001});
  const Tensor b = Tensor::from_vector(std::vector<double>{1 + 0x1p-8 + 0x1p-40, 1 + 0x1p-8, -(1 + 0x1p-8 + 0x1p-40)})
                       .astype(DType::BFloat16);
  CHECK(bits16(b) == std::vector<uint16_t>{0x3f81, 0x3f80, 0xbf81});
  // Integers and float64 values come back through float16 exactly where float16 holds them.
  const Tensor ints = Tensor::from_vector(std::vector<int32_t>{-2048, 0, 7, 2048, 70000}).astype(DType::Float16);
  CHECK(ints.to_vector<double>() == std::vector<double>{-2048, 0, 7, 2048, INFINITY});
  CHECK(ints.narrow(0, 0, 4).astype(DType::Int64).to_vector<int64_t>() == std::vector<int64_t>{-2048, 0, 7, 2048});
}

TEST_CASE("tensor: float16 and bfloat16 tensors are made, filled, copied across layouts and read") {
  for (DType dtype : {DType::Float16, DType::BFloat16}) {
    INFO(dtype_name(dtype));
    CHECK(dtype_size(dtype) == 2);
    CHECK(is_floating(dtype));
    CHECK(is_half(dtype));
    CHECK(Tensor::zeros({3}, dtype).to_vector<float>() == std::vector<float>{0, 0, 0});
    CHECK(Tensor::full({2, 2}, 2.5, dtype).to_vector<double>() == std::vector<double>{2.5, 2.5, 2.5, 2.5});
    CHECK(Tensor::ones({}, dtype).item<float>() == 1.0f);
    CHECK(Tensor::arange(5, dtype).to_vector<int32_t>() == std::vector<int32_t>{0, 1, 2, 3, 4});
    CHECK(Tensor::scalar(-0.75, dtype).astype(DType::Float64).item_double() == -0.75);
    // Copies between layouts and dtypes, both ways: the transpose of integer-valued data.
    const Tensor base = Tensor::arange(12, DType::Float32).reshape({3, 4});
    Tensor h = Tensor::empty({4, 3}, dtype);
    h.copy_(base.transpose());  // strided source, converting
    CHECK(h.to_vector<float>() == base.transpose().contiguous().to_vector<float>());
    Tensor back = Tensor::zeros({3, 4}, DType::Float64);
    back.transpose().copy_(h);  // strided destination, converting
    CHECK(back.to_vector<double>() == base.to_vector<double>());
    const Tensor view = h.narrow(1, 1, 2);  // non-contiguous 16-bit source
    CHECK(view.clone().to_vector<float>() == std::vector<float>{4, 8, 5, 9, 6, 10, 7, 11});
    CHECK(view.astype(dtype == DType::Float16 ? DType::BFloat16 : DType::Float16).to_vector<float>() ==
          std::vector<float>{4, 8, 5, 9, 6, 10, 7, 11});
    h.narrow(0, 1, 2).fill_(-1.0);  // a view: only its rows
    CHECK(h.to_vector<float>() == std::vector<float>{0, 4, 8, -1, -1, -1, -1, -1, -1, 3, 7, 11});
    CHECK(ops::take_rows(h, {3, 0}).to_vector<float>() == std::vector<float>{3, 7, 11, 0, 4, 8});
    CHECK(ops::concat({h, h}, 0).shape() == Shape{8, 3});
  }
  CHECK(std::string(dtype_name(DType::Float16)) == "float16");
  CHECK(std::string(dtype_name(DType::BFloat16)) == "bfloat16");
  REQUIRE_THROWS_WITH(Tensor::zeros({2}, DType::BFloat16).data<float16>(),
                      Catch::Contains("bfloat16") && Catch::Contains("float16 was requested"));
  // A large conversion runs over the thread team: every element lands where it belongs, both ways.
  std::vector<float> values(100003);
  for (size_t i = 0; i < values.size(); ++i) values[i] = float(int(i % 4096) - 2048);  // exact in float16
  const Tensor wide = Tensor::from_vector(values);
  CHECK(wide.astype(DType::Float16).astype(DType::Float32).to_vector<float>() == values);
  CHECK(wide.astype(DType::Float16).to_vector<float>() == values);
}

TEST_CASE("tensor: NPZ saves and loads float16 as numpy's '<f2'; bfloat16 is refused by name") {
  const std::string path = (std::filesystem::temp_directory_path() / "chainer_test_float16.npz").string();
  const Tensor h = Tensor::from_vector(std::vector<float>{1.5f, -65504.0f, 0x1p-24f}).astype(DType::Float16);
  save_npz(path, {{"h", h}, {"f", Tensor::ones({2})}});
  const TensorMap loaded = load_npz(path);
  REQUIRE(loaded.count("h") == 1);
  CHECK(loaded.at("h").dtype() == DType::Float16);
  CHECK(bits16(loaded.at("h")) == bits16(h));
  std::remove(path.c_str());
  REQUIRE_THROWS_WITH(save_npz(path, {{"w", Tensor::ones({2}, DType::BFloat16)}}),
                      Catch::Contains("save_npz: entry 'w' is bfloat16"));
}

// ---- as_strided ----

namespace {
// The values of T, as doubles in row-major order.
std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }
}  // namespace

TEST_CASE("as_strided views any strides inside the storage and refuses to reach outside it", "[tensor][get_item]") {
  const Tensor t = Tensor::arange(12, DType::Float64);
  CHECK(values(t.as_strided({3, 2}, {-4, 1}, 9)) == std::vector<double>{9, 10, 5, 6, 1, 2});
  CHECK(values(t.as_strided({2, 1, 2}, {6, 0, 5}, 0)) == std::vector<double>{0, 5, 6, 11});
  CHECK(t.as_strided({0, 5}, {100, 100}, 50).numel() == 0);  // reaches nothing
  REQUIRE_THROWS_WITH(t.as_strided({3}, {5}, 2),
                      Catch::Contains("as_strided: shape (3,) with strides (5,) from offset 2 reaches elements [2, 12] "
                                      "outside the storage of 12 elements"));
  REQUIRE_THROWS_WITH(t.as_strided({2}, {-1}, 0), Catch::Contains("reaches elements [-1, 0]"));
  REQUIRE_THROWS_WITH(t.as_strided({2}, {1, 1}, 0), Catch::Contains("have different lengths"));
}
