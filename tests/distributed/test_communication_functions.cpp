// Communication as differentiable functions (chainermn::functions: send, recv, pseudo_connect and
// the collectives) under mpiexec -n 1..4 (tests/mpi_main.cpp runs them). Forward against
// closed-form values, backward against the adjoint in closed form, finite differences of whole
// multi-process computations, a model split over the ranks against the same model in one
// process, and the errors. Every rank runs every test case in the same order and takes the same
// branches, so the collectives inside them meet; cases that need a peer skip their body with one
// process. Checks between collectives are CHECKs, so that one rank's failure cannot leave the
// others waiting.
#include <catch2/catch.hpp>

#include "catch_session.h"

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "chainermn.h"
#include "distributed/functions/collective_communication.h"
#include "distributed/functions/point_to_point.h"
#include "distributed/functions/pseudo_connect.h"
#include "nn/functions/activation.h"
#include "nn/functions/arithmetic.h"
#include "nn/functions/linear.h"
#include "nn/functions/reduction.h"

using Catch::Matchers::Contains;
using chainer::DType;
using chainer::Shape;
using chainer::Tensor;
using chainer::Variable;
using chainermn::Communicator;
namespace F = chainer::functions;
namespace MF = chainermn::functions;

namespace {

std::shared_ptr<Communicator> make() { return chainermn::create_communicator("naive"); }

// A tensor of SHAPE whose element k (row-major) is VALUE(k).
Tensor tensor_of(const Shape& shape, const std::function<double(int64_t)>& value, DType dtype = DType::Float64) {
  std::vector<double> v(size_t(chainer::shape_numel(shape)));
  for (size_t k = 0; k < v.size(); ++k) v[k] = value(int64_t(k));
  return Tensor::from_vector(v, shape).astype(dtype);
}
// OFFSET, OFFSET + 1, OFFSET + 2, ...
Tensor iota(const Shape& shape, double offset, DType dtype = DType::Float64) {
  return tensor_of(shape, [offset](int64_t k) { return offset + double(k); }, dtype);
}
Tensor full(const Shape& shape, double value, DType dtype = DType::Float64) {
  return Tensor::full(shape, value, dtype);
}

// Same shape and dtype, values within TOL.
bool near(const Tensor& a, const Tensor& b, double tol = 1e-6) {
  if (!a.defined() || !b.defined() || a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i)
    if (std::abs(x[i] - y[i]) > tol) return false;
  return true;
}

Variable param(const Tensor& t) { return Variable(t.clone(), true); }

// sum(y * w) for a constant W: its gradient with respect to y is exactly W.
Variable weighted_sum(const Variable& y, const Tensor& w) { return F::sum(y * Variable(w)); }
Variable weighted_sum(const Variable& y, double w) { return F::sum(y * w); }

Variable add_all(const std::vector<Variable>& parts) {
  Variable acc = parts.at(0);
  for (size_t i = 1; i < parts.size(); ++i) acc = acc + parts[i];
  return acc;
}

// The gradient check of a computation spread over the ranks. FORWARD maps this rank's inputs
// (possibly none) to this rank's part of a scalar loss, the sum of the parts over the ranks. Every
// rank runs backward from its part once; then each element of each rank's inputs in turn is moved
// by +-EPS on its rank while every rank re-runs FORWARD (in lockstep, so their communication
// meets; without recording), and the rank that moved it compares the central difference of the
// summed loss with its gradient.
void check_distributed_backward(const std::shared_ptr<Communicator>& comm, const std::vector<Tensor>& inputs,
                                const std::function<Variable(const std::vector<Variable>&)>& forward) {
  std::vector<Variable> vars;
  for (const Tensor& t : inputs) vars.push_back(param(t));
  forward(vars).backward();
  std::vector<double> analytic;
  for (const Variable& v : vars) {
    const std::vector<double> g =
        v.grad().defined() ? v.grad().to_vector<double>() : std::vector<double>(size_t(v.numel()), 0.0);
    analytic.insert(analytic.end(), g.begin(), g.end());
  }
  auto total_loss = [&](int64_t moved, double by) {
    std::vector<Variable> xs;
    int64_t k = moved;
    for (const Tensor& t : inputs) {
      Tensor c = t.clone();
      if (k >= 0 && k < c.numel()) {
        std::vector<double> v = c.to_vector<double>();
        v[size_t(k)] += by;
        c = Tensor::from_vector(v, c.shape()).astype(c.dtype());
      }
      k -= t.numel();
      xs.emplace_back(c);
    }
    chainer::NoBackpropMode no_graph;
    return comm->allreduce_obj(forward(xs).item());
  };
  const double eps = 1e-6;
  const std::vector<int64_t> counts = comm->allgather_obj(int64_t(analytic.size()));
  for (int p = 0; p < comm->size(); ++p) {
    for (int64_t k = 0; k < counts[size_t(p)]; ++k) {
      const bool mine = p == comm->rank();
      const double plus = total_loss(mine ? k : -1, eps), minus = total_loss(mine ? k : -1, -eps);
      if (mine) {
        INFO("rank " << p << ", input element " << k);
        CHECK(analytic[size_t(k)] == Approx((plus - minus) / (2 * eps)).margin(1e-7).epsilon(1e-6));
      }
    }
  }
}

// ---- A model split over the ranks ----

// Stage s of the pipeline: sigmoid(linear(x, W_s, b_s)), from DIMS[s] to DIMS[s + 1] features.
const std::vector<int64_t> kDims = {3, 5, 4, 6, 2};
Tensor stage_W(int s) {
  const int64_t in = kDims[size_t(s)], out = kDims[size_t(s) + 1];
  return tensor_of({out, in}, [&](int64_t k) { return 0.6 * std::sin(1.0 + 1.3 * s + 0.7 * double(k / in) + 0.3 * double(k % in)); });
}
Tensor stage_b(int s) {
  return tensor_of({kDims[size_t(s) + 1]}, [&](int64_t k) { return 0.1 * std::cos(double(s + k)); });
}
Tensor pipeline_input(int step) {
  return tensor_of({2, kDims[0]}, [&](int64_t k) { return 0.25 * double(k) - 0.6 + 0.1 * step; });
}
Tensor loss_weights(int stages) { return iota({2, kDims[size_t(stages)]}, 1.0); }

}  // namespace

// ---- send and recv ----

TEST_CASE("functions: a Linear+sigmoid pipeline over the ranks equals the same chain in one process", "[peers]") {
  auto comm = make();
  const int r = comm->rank(), n = comm->size();
  SKIP_UNLESS(n >= 2, "needs a peer: 2 or more processes");
  REQUIRE(n < int(kDims.size()));
  for (int step = 0; step < 2; ++step) {  // twice: the channel stays in step between iterations
    // Stage r on rank r: receive from r - 1, compute, send to r + 1; the last rank takes the loss.
    Variable x0 = param(pipeline_input(step));
    Variable W = param(stage_W(r)), b = param(stage_b(r));
    Variable h = r == 0 ? x0 : MF::recv(comm, r - 1);
    Variable out = F::sigmoid(F::linear(h, W, b));
    double loss_value = 0;
    if (r < n - 1) {
      Variable phi = MF::send(out, comm, r + 1);
      CHECK(phi.shape() == Shape{});
      phi.backward();
    } else {
      Variable loss = weighted_sum(out, loss_weights(n));
      loss_value = loss.item();
      loss.backward();
    }

    // The same chain in one process.
    Variable x_ref = param(pipeline_input(step));
    std::vector<Variable> Ws, bs, outs;
    Variable a = x_ref;
    for (int s = 0; s < n; ++s) {
      Ws.push_back(param(stage_W(s)));
      bs.push_back(param(stage_b(s)));
      a = F::sigmoid(F::linear(a, Ws.back(), bs.back()));
      outs.push_back(a);
    }
    Variable loss_ref = weighted_sum(a, loss_weights(n));
    loss_ref.backward();

    INFO("rank " << r << ", step " << step);
    CHECK(near(out.data(), outs[size_t(r)].data()));
    CHECK(near(W.grad(), Ws[size_t(r)].grad()));
    CHECK(near(b.grad(), bs[size_t(r)].grad()));
    if (r == 0) CHECK(near(x0.grad(), x_ref.grad()));  // send's backward went on into x's graph
    if (r == n - 1) CHECK(loss_value == Approx(loss_ref.item()).margin(1e-6));
  }
}

TEST_CASE("functions: a round trip 0 -> 1 -> 0 joined by recv(..., delegate) backpropagates through both ranks", "[peers]") {
  auto comm = make();
  const int r = comm->rank();
  SKIP_UNLESS(comm->size() >= 2, "needs a peer: 2 or more processes");
  if (r > 1) return;  // ranks 0 and 1 only
  const Tensor x_value = iota({2, 3}, -2.0), W0_value = stage_W(0), W1_value = stage_W(1);
  const Tensor w = iota({2, kDims[2]}, 0.5);  // y: (2, 3) -> W0 (5, 3) -> W1 (4, 5) -> (2, 4)
  if (r == 0) {
    Variable x = param(x_value), W0 = param(W0_value);
    Variable phi = MF::send(F::tanh(F::linear(x, W0)), comm, 1);
    Variable y = MF::recv(comm, 1, phi);  // one backward from y's loss covers the send too
    weighted_sum(y, w).backward();

    Variable xr = param(x_value), W0r = param(W0_value), W1r = param(W1_value);
    Variable yr = F::sigmoid(F::linear(F::tanh(F::linear(xr, W0r)), W1r));
    weighted_sum(yr, w).backward();
    CHECK(near(y.data(), yr.data()));
    CHECK(near(W0.grad(), W0r.grad()));
    CHECK(near(x.grad(), xr.grad()));
  } else {
    Variable W1 = param(W1_value);
    Variable h = MF::recv(comm, 0);
    MF::send(F::sigmoid(F::linear(h, W1)), comm, 0).backward();

    Variable W0r = param(W0_value), W1r = param(W1_value);
    weighted_sum(F::sigmoid(F::linear(F::tanh(F::linear(Variable(x_value), W0r)), W1r)), w).backward();
    CHECK(near(W1.grad(), W1r.grad()));
  }
}

TEST_CASE("functions: recv gets the values, shape, dtype and tag that send sent; send's backward gets the gradient", "[peers]") {
  auto comm = make();
  const int r = comm->rank();
  SKIP_UNLESS(comm->size() >= 2, "needs a peer: 2 or more processes");
  if (r > 1) return;
  for (DType dtype : {DType::Float32, DType::Float64}) {
    if (r == 0) {
      Variable x = param(iota({2, 3}, 1.0, dtype));
      Variable phi = MF::send(x, comm, 1, 7);
      CHECK(phi.dtype() == DType::Float32);
      CHECK(phi.item() == 0.0);
      phi.backward();
      CHECK(near(x.grad(), iota({2, 3}, 10.0, dtype)));  // what rank 1 seeded
    } else {
      MF::RecvOptions options;
      options.shape = Shape{2, 3};
      options.dtype = dtype;
      Variable y = MF::recv(comm, 0, {}, 7, options);
      CHECK(near(y.data(), iota({2, 3}, 1.0, dtype)));
      CHECK(y.data().device().is_cpu());
      y.set_grad(iota({2, 3}, 10.0, dtype));
      y.backward();
    }
  }
}

TEST_CASE("functions: send and recv travel apart from the communicator's own send and recv", "[peers]") {
  auto comm = make();
  const int r = comm->rank();
  SKIP_UNLESS(comm->size() >= 2, "needs a peer: 2 or more processes");
  if (r > 1) return;
  if (r == 0) {
    comm->send(full({1}, 11.0), 1, 0);  // the caller's own message, same tag, sent first
    MF::send(Variable(full({2}, 22.0)), comm, 1, 0).backward();
  } else {
    // Received in the other order: each kind of message waits on its own channel.
    Variable y = MF::recv(comm, 0, {}, 0);
    CHECK(near(y.data(), full({2}, 22.0)));
    CHECK(near(comm->recv(0, 0), full({1}, 11.0)));
    y.set_grad(full({2}, 1.0));
    y.backward();  // rank 0's send takes this gradient although its x needs none
  }
}

TEST_CASE("functions: a send whose x needs no gradient still takes its gradient, so the channel stays in step", "[peers]") {
  auto comm = make();
  const int r = comm->rank();
  SKIP_UNLESS(comm->size() >= 2, "needs a peer: 2 or more processes");
  if (r > 1) return;
  for (int round = 0; round < 2; ++round) {
    if (r == 0) {
      Variable x(iota({3}, double(round)));  // data: needs no gradient
      Variable phi = MF::send(x, comm, 1, round);
      CHECK_FALSE(phi.is_leaf());  // recorded all the same
      phi.backward();              // receives rank 1's gradient and drops it
      CHECK_FALSE(x.grad().defined());
    } else {
      // Round 1 finds the value of round 1, not the gradient of round 0 left unreceived.
      Variable y = MF::recv(comm, 0, {}, round);
      CHECK(near(y.data(), iota({3}, double(round))));
      weighted_sum(y, 2.0).backward();
    }
  }
}

TEST_CASE("functions: in NoBackpropMode send and recv record nothing, so inference needs no backward", "[peers]") {
  auto comm = make();
  const int r = comm->rank();
  SKIP_UNLESS(comm->size() >= 2, "needs a peer: 2 or more processes");
  if (r > 1) return;
  {
    chainer::NoBackpropMode inference;
    for (int i = 0; i < 3; ++i) {
      if (r == 0) {
        Variable phi = MF::send(param(full({2}, double(i))), comm, 1);
        CHECK(phi.is_leaf());
      } else {
        Variable y = MF::recv(comm, 0);
        CHECK(y.is_leaf());
        CHECK(near(y.data(), full({2}, double(i))));
      }
    }
  }
  // No gradient traffic was left behind: a training exchange follows in step.
  if (r == 0) {
    Variable x = param(full({2}, 5.0));
    MF::send(x, comm, 1).backward();
    CHECK(near(x.grad(), full({2}, 3.0)));
  } else {
    Variable y = MF::recv(comm, 0);
    CHECK(near(y.data(), full({2}, 5.0)));
    weighted_sum(y, 3.0).backward();
  }
}

// ---- pseudo_connect ----

TEST_CASE("functions: pseudo_connect: one backward covers the delegate and the actual output", "[peers]") {
  auto comm = make();
  const int r = comm->rank();
  SKIP_UNLESS(comm->size() >= 2, "needs a peer: 2 or more processes");
  if (r > 1) return;
  const Tensor x_value = iota({4}, -1.5);
  if (r == 0) {
    Variable x = param(x_value);
    Variable phi = MF::send(x, comm, 1);
    Variable local = weighted_sum(x, 3.0);
    Variable y = MF::pseudo_connect(phi, local);
    CHECK(y.item() == Approx(local.item()));
    y.backward();
    // 3 from the local loss, 2 x from rank 1's loss sum(h * h).
    CHECK(near(x.grad(), tensor_of({4}, [&](int64_t k) { return 3.0 + 2.0 * x_value.to_vector<double>()[size_t(k)]; })));

    // The vector form: one node for both variables, so the delegate's backward runs once.
    Variable x2 = param(x_value);
    Variable phi2 = MF::send(x2, comm, 1);
    Variable a = param(full({2}, 1.0, DType::Float32)), b = param(full({3}, 2.0));
    std::vector<Variable> ys = MF::pseudo_connect(phi2, std::vector<Variable>{a, b});
    REQUIRE(ys.size() == 2);
    CHECK(near(ys[0].data(), a.data()));
    CHECK(near(ys[1].data(), b.data()));
    weighted_sum(ys[1], 5.0).backward();  // ys[0] unused: its gradient is zeros, in a's dtype
    CHECK(near(a.grad(), full({2}, 0.0, DType::Float32)));
    CHECK(near(b.grad(), full({3}, 5.0)));
    CHECK(near(x2.grad(), tensor_of({4}, [&](int64_t k) { return 2.0 * x_value.to_vector<double>()[size_t(k)]; })));
  } else {
    for (int i = 0; i < 2; ++i) {
      Variable h = MF::recv(comm, 0);
      F::sum(h * h).backward();
    }
  }
}

TEST_CASE("functions: pseudo_connect gives the delegate zeros of its shape, and without a delegate returns actual") {
  Variable delegate = param(full({2, 2}, 7.0));
  Variable actual = param(iota({3}, 1.0));
  Variable y = MF::pseudo_connect(delegate, actual);
  CHECK_FALSE(y.is(actual));
  F::sum(y * 2.0).backward();
  CHECK(near(delegate.grad(), full({2, 2}, 0.0)));
  CHECK(near(actual.grad(), full({3}, 2.0)));

  Variable alone = MF::pseudo_connect(Variable(), actual);
  CHECK(alone.is(actual));
  CHECK_THROWS_WITH(MF::pseudo_connect(delegate, std::vector<Variable>{}),
                    Contains("pseudo_connect") && Contains("no actual variable"));
}

// ---- Collectives: forward and backward in closed form ----
// Rank r's inputs and output gradients are known functions of r; with n ranks each expected value
// is a closed form in r and n.

TEST_CASE("functions: bcast gives the root's x to every rank; the root's gradient is the sum of the gradients") {
  auto comm = make();
  const int r = comm->rank(), n = comm->size(), root = n - 1;
  Variable x = param(iota({2, 3}, 10.0 * r));  // off the root x is ignored, and gets no gradient
  Variable y = MF::bcast(comm, x, root);
  CHECK(near(y.data(), iota({2, 3}, 10.0 * root)));
  weighted_sum(y, r + 1.0).backward();
  if (r == root)
    CHECK(near(x.grad(), full({2, 3}, n * (n + 1) / 2.0)));
  else
    CHECK_FALSE(x.grad().defined());
  // Off the root x may be undefined.
  Variable y2 = MF::bcast(comm, r == root ? x : Variable(), root);
  CHECK(near(y2.data(), iota({2, 3}, 10.0 * root)));
}

TEST_CASE("functions: gather gives the root every rank's x; backward scatters the root's gradients") {
  auto comm = make();
  const int r = comm->rank(), n = comm->size(), root = n - 1;
  Variable x = param(iota({r + 1, 2}, 10.0 * r));  // shapes differ across ranks
  std::vector<Variable> ys = MF::gather(comm, x, root);
  if (r == root) {
    REQUIRE(int(ys.size()) == n);
    std::vector<Variable> parts;
    for (int i = 0; i < n; ++i) {
      CHECK(near(ys[size_t(i)].data(), iota({i + 1, 2}, 10.0 * i)));
      parts.push_back(weighted_sum(ys[size_t(i)], i + 1.0));
    }
    add_all(parts).backward();
  } else {
    REQUIRE(ys.size() == 1);
    CHECK(ys[0].shape() == Shape{});  // the delegate
    ys[0].backward();
  }
  CHECK(near(x.grad(), full({r + 1, 2}, r + 1.0)));
}

TEST_CASE("functions: scatter gives rank i the root's xs[i]; backward gathers the gradients to the root") {
  auto comm = make();
  const int r = comm->rank(), n = comm->size(), root = n - 1;
  std::vector<Variable> xs;
  if (r == root)
    for (int i = 0; i < n; ++i) xs.push_back(param(iota({i + 1, 2}, 10.0 * i)));
  Variable y = MF::scatter(comm, xs, root);
  CHECK(near(y.data(), iota({r + 1, 2}, 10.0 * r)));
  weighted_sum(y, r + 1.0).backward();
  for (int i = 0; i < int(xs.size()); ++i) CHECK(near(xs[size_t(i)].grad(), full({i + 1, 2}, i + 1.0)));
}

TEST_CASE("functions: allgather gives every rank every x; each x's gradient is the sum over ranks of its piece's") {
  auto comm = make();
  const int r = comm->rank(), n = comm->size();
  Variable x = param(iota({r + 1, 2}, 10.0 * r));
  std::vector<Variable> ys = MF::allgather(comm, x);
  REQUIRE(int(ys.size()) == n);
  std::vector<Variable> parts;
  for (int i = 0; i < n; ++i) {
    CHECK(near(ys[size_t(i)].data(), iota({i + 1, 2}, 10.0 * i)));
    parts.push_back(weighted_sum(ys[size_t(i)], r + 1.0 + 10.0 * i));  // rank r seeds piece i with r + 1 + 10 i
  }
  add_all(parts).backward();
  CHECK(near(x.grad(), full({r + 1, 2}, n * (n + 1) / 2.0 + 10.0 * r * n)));
}

TEST_CASE("functions: allgather: outputs nobody uses and outputs of different dtypes get zero gradients") {
  auto comm = make();
  const int r = comm->rank(), n = comm->size();
  const DType dtype = r % 2 == 0 ? DType::Float32 : DType::Float64;
  Variable x = param(full({2}, r + 1.0, dtype));
  std::vector<Variable> ys = MF::allgather(comm, x);
  CHECK(ys[size_t(n - 1)].dtype() == (n % 2 == 1 ? DType::Float32 : DType::Float64));
  F::sum(ys[size_t(n - 1)] * 3.0).backward();  // only the last piece is used
  CHECK(near(x.grad(), full({2}, r == n - 1 ? 3.0 * n : 0.0, dtype)));
}

TEST_CASE("functions: alltoall sends xs[i] to rank i; backward sends each gradient back") {
  auto comm = make();
  const int r = comm->rank(), n = comm->size();
  std::vector<Variable> xs;
  for (int j = 0; j < n; ++j) xs.push_back(param(full({r + 1, j + 1}, 100.0 * r + j)));  // from r, for j
  std::vector<Variable> ys = MF::alltoall(comm, xs);
  REQUIRE(int(ys.size()) == n);
  std::vector<Variable> parts;
  for (int i = 0; i < n; ++i) {
    CHECK(near(ys[size_t(i)].data(), full({i + 1, r + 1}, 100.0 * i + r)));
    parts.push_back(weighted_sum(ys[size_t(i)], 1000.0 * r + i));
  }
  add_all(parts).backward();
  for (int j = 0; j < n; ++j) CHECK(near(xs[size_t(j)].grad(), full({r + 1, j + 1}, 1000.0 * j + r)));
}

TEST_CASE("functions: allreduce sums x over the ranks; backward sums the gradients") {
  auto comm = make();
  const int r = comm->rank(), n = comm->size();
  Variable x = param(iota({2, 3}, double(r)));
  Variable y = MF::allreduce(comm, x);
  CHECK(near(y.data(), tensor_of({2, 3}, [&](int64_t k) { return n * double(k) + n * (n - 1) / 2.0; })));
  weighted_sum(y, r + 1.0).backward();
  CHECK(near(x.grad(), full({2, 3}, n * (n + 1) / 2.0)));
}

// ---- Finite differences of whole multi-process computations ----

TEST_CASE("functions: finite differences: a pipeline of send and recv over every rank", "[peers]") {
  auto comm = make();
  const int r = comm->rank(), n = comm->size();
  SKIP_UNLESS(n >= 2, "needs a peer: 2 or more processes");
  const std::vector<int64_t> dims = {2, 3, 2, 2, 1};
  std::vector<Tensor> inputs;
  if (r == 0) inputs.push_back(iota({1, dims[0]}, -0.5));
  inputs.push_back(tensor_of({dims[size_t(r) + 1], dims[size_t(r)]}, [&](int64_t k) { return 0.4 * std::sin(r + 0.9 * k); }));
  check_distributed_backward(comm, inputs, [&](const std::vector<Variable>& v) {
    const Variable& W = v.back();
    Variable h = r == 0 ? v[0] : MF::recv(comm, r - 1);
    Variable out = F::tanh(F::linear(h, W));
    if (r < n - 1) return MF::send(out, comm, r + 1);  // the delegate: this rank's part is 0
    return F::sum(out * out);
  });
}

TEST_CASE("functions: finite differences: each collective within a computation over every rank") {
  auto comm = make();
  const int r = comm->rank(), n = comm->size(), root = n / 2;
  // A nonlinear part of the loss, weighted by rank and position.
  auto part = [&](const Variable& y) {
    return F::sum(F::tanh(y) * Variable(tensor_of(y.shape(), [&](int64_t k) { return 1.0 + r + 0.3 * k; })));
  };
  auto small = [&](int64_t rows, double offset) {
    return tensor_of({rows, 2}, [&](int64_t k) { return 0.3 * std::cos(offset + 1.7 * k); });
  };
  SECTION("bcast") {
    check_distributed_backward(comm, {small(1, r)}, [&](const std::vector<Variable>& v) {
      return part(MF::bcast(comm, v[0] * 1.5, root));
    });
  }
  SECTION("gather") {
    check_distributed_backward(comm, {small(1 + r % 2, r)}, [&](const std::vector<Variable>& v) {
      std::vector<Variable> ys = MF::gather(comm, v[0] * 1.5, root);
      if (r != root) return ys[0];
      std::vector<Variable> parts;
      for (const Variable& y : ys) parts.push_back(part(y));
      return add_all(parts);
    });
  }
  SECTION("scatter") {
    std::vector<Tensor> xs;
    if (r == root)
      for (int i = 0; i < n; ++i) xs.push_back(small(1 + i % 2, i));
    check_distributed_backward(comm, xs, [&](const std::vector<Variable>& v) {
      std::vector<Variable> scaled;
      for (const Variable& x : v) scaled.push_back(x * 1.5);
      return part(MF::scatter(comm, scaled, root));
    });
  }
  SECTION("allgather") {
    check_distributed_backward(comm, {small(1 + r % 2, r)}, [&](const std::vector<Variable>& v) {
      std::vector<Variable> parts;
      for (const Variable& y : MF::allgather(comm, v[0] * 1.5)) parts.push_back(part(y));
      return add_all(parts);
    });
  }
  SECTION("alltoall") {
    std::vector<Tensor> xs;
    for (int j = 0; j < n; ++j) xs.push_back(small(1, r + 0.5 * j));
    check_distributed_backward(comm, xs, [&](const std::vector<Variable>& v) {
      std::vector<Variable> scaled;
      for (const Variable& x : v) scaled.push_back(x * 1.5);
      std::vector<Variable> parts;
      for (const Variable& y : MF::alltoall(comm, scaled)) parts.push_back(part(y));
      return add_all(parts);
    });
  }
  SECTION("allreduce") {
    check_distributed_backward(comm, {small(1, r)}, [&](const std::vector<Variable>& v) {
      return part(MF::allreduce(comm, v[0] * 1.5));
    });
  }
}

// ---- Errors ----

TEST_CASE("functions: sending to or receiving from one's own rank, or a rank outside the communicator, is an error") {
  auto comm = make();
  const int r = comm->rank(), n = comm->size();
  Variable x = param(full({2}, 1.0));
  CHECK_THROWS_WITH(MF::send(x, comm, r), Contains("chainermn::functions::send") && Contains(std::to_string(r)) &&
                                              Contains("own rank"));
  CHECK_THROWS_WITH(MF::recv(comm, r), Contains("chainermn::functions::recv") && Contains("own rank"));
  for (int bad : {-1, n}) {
    const std::string range = "outside [0, " + std::to_string(n) + ")";
    CHECK_THROWS_WITH(MF::send(x, comm, bad), Contains("chainermn::functions::send") &&
                                                  Contains("rank " + std::to_string(bad)) && Contains(range));
    CHECK_THROWS_WITH(MF::recv(comm, bad, {}, 3), Contains("chainermn::functions::recv") && Contains(range));
    CHECK_THROWS_WITH(MF::bcast(comm, x, bad), Contains("chainermn::functions::bcast") && Contains(range));
    CHECK_THROWS_WITH(MF::gather(comm, x, bad), Contains("chainermn::functions::gather") && Contains(range));
    CHECK_THROWS_WITH(MF::scatter(comm, {}, bad), Contains("chainermn::functions::scatter") && Contains(range));
  }
  CHECK_THROWS_WITH(MF::send(x, nullptr, 0), Contains("chainermn::functions::send") && Contains("null"));
  CHECK_THROWS_WITH(MF::alltoall(comm, std::vector<Variable>(size_t(n) + 1, x)),
                    Contains("chainermn::functions::alltoall") && Contains(std::to_string(n + 1) + " variables"));
}

TEST_CASE("functions: recv of another tag, kind, shape or dtype is an error naming both, and the channel stays in step", "[peers]") {
  auto comm = make();
  const int r = comm->rank();
  SKIP_UNLESS(comm->size() >= 2, "needs a peer: 2 or more processes");
  if (r > 1) return;
  if (r == 0) {
    Variable x(iota({2, 2}, 0.0));
    MF::send(x, comm, 1, 1);  // rank 1 expects tag 2
    MF::send(x, comm, 1, 4);  // rank 1 expects shape (3)
    MF::send(x, comm, 1, 5);  // rank 1 expects float32
    Variable phi = MF::send(x, comm, 1, 6);  // its backward never runs: this rank waits for a value instead
    CHECK_THROWS_WITH(MF::recv(comm, 1, {}, 6),
                      Contains("chainermn::functions::recv: rank 0 expected a tensor from rank 1 with tag 6") &&
                          Contains("is the gradient that chainermn::functions::recv's backward sent with tag 6"));
    MF::send(Variable(full({1}, 9.0)), comm, 1, 8);
  } else {
    CHECK_THROWS_WITH(MF::recv(comm, 0, {}, 2),
                      Contains("chainermn::functions::recv: rank 1 expected a tensor with tag 2 from rank 0") &&
                          Contains("has tag 1"));
    MF::RecvOptions shape;
    shape.shape = Shape{3};
    CHECK_THROWS_WITH(MF::recv(comm, 0, {}, 4, shape),
                      Contains("expected a tensor of shape (3,) from rank 0 with tag 4") &&
                          Contains("rank 0 sent float64 (2, 2)"));
    MF::RecvOptions dtype;
    dtype.dtype = DType::Float32;
    CHECK_THROWS_WITH(MF::recv(comm, 0, {}, 5, dtype),
                      Contains("expected a tensor of dtype float32") && Contains("sent float64 (2, 2)"));
    F::sum(MF::recv(comm, 0, {}, 6)).backward();  // sends the gradient rank 0 does not wait for
    Variable z = MF::recv(comm, 0, {}, 8);         // after the mistakes, the channel is in step
    CHECK(near(z.data(), full({1}, 9.0)));
  }
}

TEST_CASE("functions: a gradient of another shape arriving in send's backward is an error naming both shapes", "[peers]") {
  auto comm = make();
  const int r = comm->rank();
  SKIP_UNLESS(comm->size() >= 2, "needs a peer: 2 or more processes");
  if (r > 1) return;
  if (r == 0) {
    Variable x1 = param(full({2}, 1.0)), x2 = param(full({3}, 1.0));
    Variable phi1 = MF::send(x1, comm, 1), phi2 = MF::send(x2, comm, 1);
    // Rank 1's backward sends the gradient of its later recv first; this rank asks for x1's first.
    CHECK_THROWS_WITH(phi1.backward(), Contains("chainermn::functions::send's backward: rank 0 expected the gradient "
                                                "of x of float64 (2,) from rank 1 with tag 0") &&
                                           Contains("rank 1 sent float64 (3,)"));
    CHECK_THROWS_WITH(phi2.backward(), Contains("float64 (3,)") && Contains("sent float64 (2,)"));
    Variable x3 = param(full({1}, 1.0));
    MF::send(x3, comm, 1).backward();  // in step again
    CHECK(near(x3.grad(), full({1}, 1.0)));
  } else {
    Variable y1 = MF::recv(comm, 0), y2 = MF::recv(comm, 0);
    (F::sum(y1) + F::sum(y2)).backward();
    F::sum(MF::recv(comm, 0)).backward();
  }
}

// ---- Several variables at once (ChainerMN's tuples) ----

TEST_CASE("functions: send of several variables is one message: recv(..., force_tuple) gets them all; the gradients "
          "come back, zeros for a member the receiver did not use", "[peers]") {
  auto comm = make();
  const int r = comm->rank();
  SKIP_UNLESS(comm->size() >= 2, "needs a peer: 2 or more processes");
  if (r > 1) return;
  const Tensor wa = iota({2, 3}, 0.5), wc = full({1}, 3.0);
  if (r == 0) {
    // Of three dtypes and shapes; c needs no gradient, b's copy goes unused on rank 1.
    Variable a = param(iota({2, 3}, 1.0)), b = param(iota({4}, -1.0, DType::Float32));
    Variable c(full({1}, 5.0));
    Variable phi = MF::send({a, b, c}, comm, 1, 3);
    CHECK(phi.shape() == Shape{});
    phi.backward();  // one message with the three gradients
    CHECK(near(a.grad(), wa));
    CHECK(near(b.grad(), full({4}, 0.0, DType::Float32)));  // the engine's zeros for an unused output
    CHECK(!c.grad().defined());                               // received, but c takes none
    // One variable through the tuple form, and a tuple of one through the plain recv.
    Variable d = param(full({2}, 1.0));
    MF::send(d, comm, 1).backward();
    CHECK(near(d.grad(), full({2}, 2.0)));
    Variable e = param(full({3}, 1.0));
    MF::send(std::vector<Variable>{e}, comm, 1).backward();
    CHECK(near(e.grad(), full({3}, 4.0)));
  } else {
    std::vector<Variable> ys = MF::recv(comm, 0, {}, 3, MF::force_tuple);
    REQUIRE(ys.size() == 3);
    CHECK(near(ys[0].data(), iota({2, 3}, 1.0)));
    CHECK(near(ys[1].data(), iota({4}, -1.0, DType::Float32)));
    CHECK(near(ys[2].data(), full({1}, 5.0)));
    (weighted_sum(ys[0], wa) + weighted_sum(ys[2], wc)).backward();
    std::vector<Variable> one = MF::recv(comm, 0, {}, 0, MF::force_tuple);
    REQUIRE(one.size() == 1);
    weighted_sum(one[0], 2.0).backward();
    weighted_sum(MF::recv(comm, 0), 4.0).backward();
  }
}

TEST_CASE("functions: tuples of 1 and 2 variables relayed over every rank: values and gradients in closed form", "[peers]") {
  // Rank 0 sends {1 x, 2 x, ...}; every middle rank receives the tuple and sends it on whole; the
  // last rank sums the members: z = (1 + ... + L) x, and x's gradient is (1 + ... + L) w.
  auto comm = make();
  const int r = comm->rank(), n = comm->size();
  SKIP_UNLESS(n >= 2, "needs a peer: 2 or more processes");
  const Tensor x_value = iota({2, 2}, -1.0), w = iota({2, 2}, 1.0);
  for (int length : {1, 2}) {
    const double total = length * (length + 1) / 2.0;
    INFO("rank " << r << ", length " << length);
    if (r == 0) {
      Variable x = param(x_value);
      std::vector<Variable> parts;
      for (int k = 1; k <= length; ++k) parts.push_back(F::mul(x, double(k)));
      MF::send(parts, comm, 1).backward();
      CHECK(near(x.grad(), chainer::ops::mul_scalar(w, total)));
    } else if (r < n - 1) {
      std::vector<Variable> ys = MF::recv(comm, r - 1, {}, 0, MF::force_tuple);
      CHECK(int(ys.size()) == length);
      MF::send(ys, comm, r + 1).backward();  // the gradients of all members come back, and go on
    } else {
      std::vector<Variable> ys = MF::recv(comm, r - 1, {}, 0, MF::force_tuple);
      REQUIRE(int(ys.size()) == length);
      Variable z = add_all(ys);
      CHECK(near(z.data(), chainer::ops::mul_scalar(x_value, total)));
      weighted_sum(z, w).backward();
    }
  }
}

TEST_CASE("functions: a message of another number of tensors is an error naming both counts, and the channel stays "
          "in step", "[peers]") {
  auto comm = make();
  const int r = comm->rank();
  SKIP_UNLESS(comm->size() >= 2, "needs a peer: 2 or more processes");
  if (r > 1) return;
  if (r == 0) {
    Variable a(full({2}, 1.0)), b(full({3}, 2.0));
    CHECK_THROWS_WITH(MF::send(std::vector<Variable>{}, comm, 1),
                      Contains("chainermn::functions::send: no variable to send (sending to rank 1"));
    CHECK_THROWS_WITH(MF::send({a, Variable()}, comm, 1), Contains("chainermn::functions::send: xs[1] is undefined"));
    MF::send({a, b}, comm, 1, 2);  // rank 1 receives one variable
    MF::send({a, b}, comm, 1, 3);  // rank 1 expects three
    MF::send({a, b}, comm, 1, 4);  // rank 1 expects shape (2,) of each
    MF::send(Variable(full({1}, 9.0)), comm, 1, 8);
  } else {
    CHECK_THROWS_WITH(MF::recv(comm, 0, {}, 2),
                      Contains("chainermn::functions::recv: rank 1 expected a tensor from rank 0 with tag 2, but rank 0 "
                               "sent 2 tensors") && Contains("force_tuple"));
    MF::RecvOptions three;
    three.count = 3;
    CHECK_THROWS_WITH(MF::recv(comm, 0, {}, 3, MF::force_tuple, three),
                      Contains("rank 1 expected 3 tensors from rank 0 with tag 3, but rank 0 sent 2 tensors"));
    CHECK_THROWS_WITH(MF::recv(comm, 0, {}, 3, three),
                      Contains("RecvOptions::count is 3, but a recv of one variable receives 1"));  // nothing received
    MF::RecvOptions shape;
    shape.shape = Shape{2};
    CHECK_THROWS_WITH(MF::recv(comm, 0, {}, 4, MF::force_tuple, shape),
                      Contains("rank 1 expected tensors from rank 0 with tag 4, member 1 of shape (2,), but rank 0 sent "
                               "float64 (3,) as member 1 of 2"));
    Variable z = MF::recv(comm, 0, {}, 8);
    CHECK(near(z.data(), full({1}, 9.0)));
  }
}

// ---- A communicator made by split ----

TEST_CASE("functions: send, recv and the collectives work on a communicator made by split (pairs of ranks)") {
  auto world = make();
  const int r = world->rank();
  auto pair = world->split(r / 2, r);
  REQUIRE(pair);
  CHECK(pair->rank() == r % 2);
  // Within the pair: its rank 0 (world rank 2p) sends to its rank 1 (world rank 2p + 1).
  if (pair->size() == 2) {
    if (pair->rank() == 0) {
      Variable x = param(full({2}, r + 1.0));
      MF::send(x, pair, 1, 3).backward();
      CHECK(near(x.grad(), full({2}, 3.0)));
    } else {
      Variable y = MF::recv(pair, 0, {}, 3);
      CHECK(near(y.data(), full({2}, double(r))));  // world rank r - 1, plus one
      weighted_sum(y, 3.0).backward();
    }
  }
  // A collective over the pair (a lone last rank has a pair of one).
  Variable x = param(full({2}, r + 1.0));
  Variable y = MF::allreduce(pair, x);
  double expected = 0;
  for (int q = r - pair->rank(); q < r - pair->rank() + pair->size(); ++q) expected += q + 1.0;
  CHECK(near(y.data(), full({2}, expected)));
  weighted_sum(y, 2.0).backward();
  CHECK(near(x.grad(), full({2}, 2.0 * pair->size())));
  std::vector<Variable> ys = MF::allgather(pair, Variable(full({1}, double(r))));
  REQUIRE(int(ys.size()) == pair->size());
  for (int i = 0; i < pair->size(); ++i) CHECK(near(ys[size_t(i)].data(), full({1}, double(r - pair->rank() + i))));
}
