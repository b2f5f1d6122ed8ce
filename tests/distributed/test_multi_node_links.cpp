// ChainerMN's links (chainermn::links) under mpiexec with 1 to 4 processes. MultiNodeChainList: a
// Linear + sigmoid pipeline over every rank equals the same chain in one process (outputs and
// every parameter's gradient), with fan-out and fan-in over several ranks, a component that
// sends to its own rank, edges carrying several variables, and the errors of add_link.
// create_multi_node_n_step_rnn: encoder, middle and decoder stacks (LSTM and GRU) over the ranks
// equal the same model in one process (loss and every parameter's gradient), and its refusals.
// MultiNodeBatchNormalization
// over the ranks of a communicator equals BatchNormalization on the whole batch in one process
// (computed on every rank) -- outputs, input gradients, parameter gradients summed over the ranks,
// running averages, test mode -- with even and uneven slices; plain per-rank BatchNormalization
// does not; a communicator made by split normalizes each group on its own. create_mnbn_model: a
// chain holding BatchNormalizations in its members and in a Sequential, converted, equals the
// same model on the whole batch (outputs, input and parameter gradients, running averages).
// ParallelConvolution2D (output channels split over the ranks) equals one Convolution2D with the
// same filters: outputs, every rank's W and b slice gradients, the input gradient summed over the
// ranks, for the sum of per-rank losses; channel counts not divisible by the ranks, two layers
// stacked, channel_slice's sizes, and its refusal of fewer channels than ranks.
//
// Every rank runs the same test cases in the same order; checks between collectives use CHECK
// (never REQUIRE), so one rank's failure cannot leave the others waiting in a collective.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/util/config.h"
#include "core/ops/ops.h"
#include "core/util/random.h"
#include "distributed/communicators/communicator.h"
#include "distributed/links/create_mnbn_model.h"
#include "distributed/links/multi_node_batch_normalization.h"
#include "distributed/links/multi_node_chain_list.h"
#include "distributed/links/multi_node_n_step_rnn.h"
#include "distributed/links/parallel_convolution_2d.h"
#include "nn/functions.h"
#include "nn/links/batch_normalization.h"
#include "nn/links/convolution_2d.h"
#include "nn/links/embed_id.h"
#include "nn/links/linear.h"
#include "nn/links/n_step_rnn.h"
#include "nn/sequential.h"

using namespace chainer;
namespace L = chainer::links;
namespace mn = chainermn;

namespace {

std::shared_ptr<mn::Communicator> world() { return mn::create_communicator("naive"); }

// |got - want| / (1 + |want|) at worst, over every element (infinity when the shapes differ).
double worst_difference(const Tensor& got, const Tensor& want) {
  if (got.shape() != want.shape()) return INFINITY;
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i < g.size(); ++i) worst = std::max(worst, std::abs(g[i] - w[i]) / (1 + std::abs(w[i])));
  return worst;
}

// How a batch is spread over the ranks: the rows each rank holds, and the shape of one row.
struct Layout {
  std::string name;
  std::vector<int64_t> rows;  // per rank
  Shape row_shape;            // (C, ...) of one example
  int64_t offset(int rank) const {
    int64_t at = 0;
    for (int r = 0; r < rank; ++r) at += rows[size_t(r)];
    return at;
  }
  int64_t total() const { return offset(int(rows.size())); }
};

// The layouts tested on SIZE ranks: the same rows on each, and different ones (rank r holds
// r + 1 rows; 2-D: r + 2, so one rank alone still has a variance).
std::vector<Layout> layouts(int size) {
  std::vector<Layout> out{{"3 rows of (3, 2, 2) per rank", {}, {3, 2, 2}},
                          {"rank r holds r + 1 rows of (3, 2, 2)", {}, {3, 2, 2}},
                          {"rank r holds r + 2 rows of (4,)", {}, {4}}};
  for (int r = 0; r < size; ++r) {
    out[0].rows.push_back(3);
    out[1].rows.push_back(r + 1);
    out[2].rows.push_back(r + 2);
  }
  return out;
}

// A float32 batch of ROWS rows from SEED, the same on every rank. Row i is shifted by i / 2, so
// the slices of different ranks have different statistics.
Tensor batch(int64_t rows, const Shape& row_shape, uint64_t seed) {
  Shape shape{rows};
  shape.insert(shape.end(), row_shape.begin(), row_shape.end());
  Generator gen(seed);
  Tensor x = random::normal(shape, 0.0, 1.0, DType::Float32, &gen);
  const int64_t per_row = rows ? x.numel() / rows : 0;
  float* p = x.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) p[i] += 0.5f * float(i / per_row);
  return x;
}

Tensor rows_of(const Tensor& x, int64_t offset, int64_t rows) { return x.narrow(0, offset, rows).contiguous(); }

// Gamma and beta away from 1 and 0, the same on every rank.
void set_affine(L::BatchNormalization& link, uint64_t seed) {
  Generator gen(seed);
  const int64_t c = link.size();
  link.gamma()->data().copy_(random::uniform({c}, 0.5, 2.0, DType::Float32, &gen));
  link.beta()->data().copy_(random::uniform({c}, -1.0, 1.0, DType::Float32, &gen));
}

// One training step of LINK: the output for X, the gradients for output gradient GY, and the
// running averages after the step.
struct Step {
  Tensor y, gx, ggamma, gbeta, avg_mean, avg_var;
};
Step train_step(L::BatchNormalization& link, const Tensor& x, const Tensor& gy) {
  link.cleargrads();
  Variable xv(x, true);
  Variable y = link(xv);
  y.set_grad(gy);
  y.backward();
  return {y.data(), xv.grad(), link.gamma()->grad(), link.beta()->grad(), link.avg_mean().clone(),
          link.avg_var().clone()};
}

// Runs two training steps and a test-mode forward of MULTI (over COMM, this rank's slice) and of
// a plain link on the whole batch, and checks that this rank's results are the whole batch's
// rows, its parameter gradients summed over COMM the whole batch's, and the averages equal.
// LAYOUT.rows is indexed by the rank in COMM.
void expect_whole_batch(const std::shared_ptr<mn::Communicator>& comm, const Layout& layout, uint64_t seed) {
  const int64_t c = layout.row_shape[0], offset = layout.offset(comm->rank()), rows = layout.rows[size_t(comm->rank())];
  mn::links::MultiNodeBatchNormalization multi(c, comm);
  L::BatchNormalization whole(c);
  set_affine(multi, seed);
  set_affine(whole, seed);
  for (uint64_t t = 0; t < 2; ++t) {
    INFO("step " << t);
    const Tensor x = batch(layout.total(), layout.row_shape, seed + 10 * t + 1);
    const Tensor gy = batch(layout.total(), layout.row_shape, seed + 10 * t + 2);
    const Step want = train_step(whole, x, gy);
    const Step got = train_step(multi, rows_of(x, offset, rows), rows_of(gy, offset, rows));
    CHECK(worst_difference(got.y, rows_of(want.y, offset, rows)) <= 1e-5);
    CHECK(worst_difference(got.gx, rows_of(want.gx, offset, rows)) <= 1e-5);
    CHECK(worst_difference(comm->allreduce(got.ggamma), want.ggamma) <= 1e-5);
    CHECK(worst_difference(comm->allreduce(got.gbeta), want.gbeta) <= 1e-5);
    CHECK(worst_difference(got.avg_mean, want.avg_mean) <= 1e-5);
    CHECK(worst_difference(got.avg_var, want.avg_var) <= 1e-5);
  }
  config::TrainScope test_mode(false);
  const Tensor x = batch(layout.total(), layout.row_shape, seed + 100);
  const Tensor y = multi(Variable(rows_of(x, offset, rows))).data();
  CHECK(worst_difference(y, rows_of(whole(Variable(x)).data(), offset, rows)) <= 1e-5);
}

}  // namespace

TEST_CASE("MultiNodeBatchNormalization over every rank equals BatchNormalization on the whole batch",
          "[multi_node_links][batch_normalization]") {
  auto comm = world();
  uint64_t seed = 1000;
  for (const Layout& layout : layouts(comm->size())) {
    INFO(layout.name << " on " << comm->size() << " ranks, rank " << comm->rank());
    expect_whole_batch(comm, layout, seed += 1000);
  }
}

TEST_CASE("BatchNormalization on each rank's slice alone differs from the whole batch once there are 2 ranks",
          "[multi_node_links][batch_normalization]") {
  // The contrast that shows the test above measures something: per-rank statistics are not the
  // whole batch's (rows are shifted by their index, so every slice has its own mean).
  auto comm = world();
  const Layout layout = layouts(comm->size())[0];
  const int64_t offset = layout.offset(comm->rank()), rows = layout.rows[size_t(comm->rank())];
  const Tensor x = batch(layout.total(), layout.row_shape, 7);
  L::BatchNormalization alone(3), whole(3);
  const Tensor y = alone(Variable(rows_of(x, offset, rows))).data();
  const double difference = worst_difference(y, rows_of(whole(Variable(x)).data(), offset, rows));
  INFO("rank " << comm->rank() << " of " << comm->size() << ": worst difference " << difference);
  if (comm->size() == 1)
    CHECK(difference <= 1e-6);
  else
    CHECK(difference > 0.1);
}

TEST_CASE("MultiNodeBatchNormalization: one example per rank trains when the ranks together have several",
          "[multi_node_links][batch_normalization]") {
  auto comm = world();
  Layout layout{"one (3,) row per rank", std::vector<int64_t>(size_t(comm->size()), 1), {3}};
  if (comm->size() == 1) {
    // One value per channel in the whole batch: the same error as one process.
    mn::links::MultiNodeBatchNormalization multi(3, comm);
    CHECK_THROWS_WITH(multi(Variable(batch(1, {3}, 5))),
                      Catch::Contains("1 value per channel") && Catch::Contains("counted over all processes"));
  } else {
    expect_whole_batch(comm, layout, 5);
  }
}

TEST_CASE("MultiNodeBatchNormalization over a split communicator normalizes each group over its own ranks",
          "[multi_node_links][batch_normalization]") {
  auto comm = world();
  // Even and odd ranks: each group's batch is its members' slices, one after the other.
  const int color = comm->rank() % 2;
  auto group = comm->split(color, comm->rank());
  CHECK(group->size() == (comm->size() + 1 - color) / 2);
  Layout layout{"group of rank r holds r + 1 rows of (2, 3)", {}, {2, 3}};
  for (int r = color; r < comm->size(); r += 2) layout.rows.push_back(r + 1);
  INFO("rank " << comm->rank() << " of " << comm->size() << ", rank " << group->rank() << " of " << group->size()
               << " in group " << color);
  // Each group's batch from its own seed: the groups' statistics differ.
  expect_whole_batch(group, layout, 3000 + uint64_t(color) * 500);
}

TEST_CASE("MultiNodeBatchNormalization: a null communicator is an error", "[multi_node_links][errors]") {
  CHECK_THROWS_WITH(mn::links::MultiNodeBatchNormalization(3, nullptr),
                    Catch::Contains("MultiNodeBatchNormalization: the communicator is null"));
}

namespace {

// A user's chain holding its links in members: Linear, BatchNormalization, tanh, then a
// Sequential of Linear, relu and BatchNormalization. Built from SEED alike on every rank, with
// gamma, beta and running averages away from their defaults.
class BnNet : public Chain {
 public:
  explicit BnNet(uint64_t seed) {
    Generator gen(seed);
    l1 = add_link("l1", std::make_shared<L::Linear>(4, 3));
    l1->W().set_data(random::normal({3, 4}, 0, 1, DType::Float32, &gen));
    bn1 = add_link("bn1", std::make_shared<L::BatchNormalization>(3));
    auto l2 = std::make_shared<L::Linear>(3, 2);
    l2->W().set_data(random::normal({2, 3}, 0, 1, DType::Float32, &gen));
    bn2 = std::make_shared<L::BatchNormalization>(2);
    seq = add_link("seq", std::make_shared<Sequential>(l2, chainer::functions::relu, bn2));
    set_affine(*bn1, seed + 1);
    set_affine(*bn2, seed + 2);
    bn1->avg_mean().copy_(Tensor::full({3}, 0.25));
    bn2->avg_var().copy_(Tensor::full({2}, 2.0));
  }
  Variable forward(const Variable& x) override { return (*seq)(chainer::functions::tanh((*bn1)((*l1)(x)))); }
  std::shared_ptr<L::Linear> l1;
  std::shared_ptr<L::BatchNormalization> bn1, bn2;
  std::shared_ptr<Sequential> seq;
};

// One training step of NET: its output for X, the input's gradient for output gradient GY,
// every parameter's gradient and every persistent value after the step, in name order.
struct NetStep {
  Tensor y, gx;
  std::vector<Tensor> grads, persistents;
};
NetStep net_step(Link& net, const Tensor& x, const Tensor& gy) {
  net.cleargrads();
  Variable xv(x, true);
  Variable y = net(xv);
  y.set_grad(gy);
  y.backward();
  NetStep step{y.data(), xv.grad(), {}, {}};
  for (const auto& [name, p] : net.namedparams()) step.grads.push_back(p.grad());
  for (const auto& [name, t] : net.namedpersistents()) step.persistents.push_back(t.clone());
  return step;
}

}  // namespace

TEST_CASE("create_mnbn_model: a chain's and a Sequential's BatchNormalizations then train on the whole batch",
          "[multi_node_links][batch_normalization]") {
  auto comm = world();
  const int rank = comm->rank();
  Layout layout{"rank r holds r + 2 rows of (4,)", {}, {4}};
  for (int r = 0; r < comm->size(); ++r) layout.rows.push_back(r + 2);
  const int64_t offset = layout.offset(rank), rows = layout.rows[size_t(rank)];
  INFO("rank " << rank << " of " << comm->size());

  auto whole = std::make_shared<BnNet>(40);
  auto alone = std::make_shared<BnNet>(40);
  auto original = std::make_shared<BnNet>(40);
  std::shared_ptr<BnNet> multi = mn::links::create_mnbn_model(original, comm);
  // In place: the same model, its two links converted, parameters and state untouched.
  CHECK(multi == original);
  CHECK(multi->bn1->sums_over_processes());
  CHECK(multi->bn2->sums_over_processes());
  CHECK_FALSE(whole->bn1->sums_over_processes());
  CHECK(mn::links::convert_batch_normalizations(*multi, comm) == 0);
  CHECK(worst_difference(multi->bn1->avg_mean(), Tensor::full({3}, 0.25)) == 0);
  CHECK(worst_difference(multi->bn2->avg_var(), Tensor::full({2}, 2.0)) == 0);
  CHECK(worst_difference(multi->bn2->gamma()->data(), whole->bn2->gamma()->data()) == 0);

  for (uint64_t t = 0; t < 2; ++t) {
    INFO("step " << t);
    const Tensor x = batch(layout.total(), {4}, 50 + 10 * t);
    const Tensor gy = batch(layout.total(), {2}, 51 + 10 * t);
    const NetStep want = net_step(*whole, x, gy);
    const NetStep got = net_step(*multi, rows_of(x, offset, rows), rows_of(gy, offset, rows));
    CHECK(worst_difference(got.y, rows_of(want.y, offset, rows)) <= 1e-5);
    CHECK(worst_difference(got.gx, rows_of(want.gx, offset, rows)) <= 1e-5);
    // Each rank's parameter gradients are its own rows' sums: over the ranks, the whole batch's.
    REQUIRE(got.grads.size() == want.grads.size());
    for (size_t i = 0; i < got.grads.size(); ++i) {
      INFO("parameter " << multi->namedparams()[i].first);
      CHECK(worst_difference(comm->allreduce(got.grads[i]), want.grads[i]) <= 1e-5);
    }
    REQUIRE(got.persistents.size() == want.persistents.size());
    for (size_t i = 0; i < got.persistents.size(); ++i) {
      INFO("persistent " << multi->namedpersistents()[i].first);
      CHECK(worst_difference(got.persistents[i], want.persistents[i]) <= 1e-5);
    }
    // The contrast: the model left as it was normalizes each rank's rows alone.
    const double difference =
        worst_difference(net_step(*alone, rows_of(x, offset, rows), rows_of(gy, offset, rows)).y,
                         rows_of(want.y, offset, rows));
    if (comm->size() == 1)
      CHECK(difference <= 1e-6);
    else
      CHECK(difference > 1e-3);
  }
  config::TrainScope test_mode(false);
  const Tensor x = batch(layout.total(), {4}, 90);
  CHECK(worst_difference((*multi)(Variable(rows_of(x, offset, rows))).data(),
                         rows_of((*whole)(Variable(x)).data(), offset, rows)) <= 1e-5);
}

TEST_CASE("create_mnbn_model: a null communicator or link is an error, and the model is left as it was",
          "[multi_node_links][errors]") {
  auto net = std::make_shared<BnNet>(1);
  CHECK_THROWS_WITH(mn::links::create_mnbn_model(net, nullptr), "create_mnbn_model: the communicator is null");
  CHECK_FALSE(net->bn1->sums_over_processes());
  CHECK_THROWS_WITH(mn::links::create_mnbn_model(std::shared_ptr<BnNet>(), world()),
                    "create_mnbn_model: the link is null");
}

// =============================================================================================
// MultiNodeChainList
// =============================================================================================

namespace {

namespace F = chainer::functions;

// Linear (seeded by INDEX, so every rank can build any stage) followed by a sigmoid.
class Stage : public Chain {
 public:
  Stage(int64_t in, int64_t out, uint64_t index) {
    Generator gen(100 + index);
    linear = add_link("linear", std::make_shared<L::Linear>(in, out));
    linear->W().set_data(random::normal({out, in}, 0, 0.5, DType::Float64, &gen));
    linear->b()->set_data(random::normal({out}, 0, 0.5, DType::Float64, &gen));
  }
  Variable forward(const Variable& x) override { return F::sigmoid((*linear)(x)); }
  std::shared_ptr<L::Linear> linear;
};

// Sums its inputs: a component that receives from several ranks.
class SumInputs : public Link {
 public:
  std::vector<Variable> forward_args(const std::vector<Variable>& xs) override {
    Variable acc = xs.at(0);
    for (size_t i = 1; i < xs.size(); ++i) acc = F::add(acc, xs[i]);
    return {acc};
  }
};

class Identity : public Link {
 public:
  Variable forward(const Variable& x) override { return x; }
};

Tensor batch(int64_t rows, int64_t cols) {
  Generator gen(7);
  return random::normal({rows, cols}, 0, 1, DType::Float64, &gen);
}

Variable loss_of(const Variable& y) { return F::sum(F::mul(y, y)); }

}  // namespace

TEST_CASE("MultiNodeChainList: a Linear + sigmoid pipeline over every rank equals the chain in one process",
          "[multi_node_links][chain_list]") {
  // Stage i (width 3 + i) on rank i; rank 0 also takes the last stage's output back (an identity
  // component) and computes the loss. One rank: the whole chain there, components kept local.
  auto comm = world();
  const int n = comm->size(), me = comm->rank();
  auto width = [](int i) { return int64_t(3 + i); };
  auto chain = std::make_shared<mn::links::MultiNodeChainList>(comm);
  std::shared_ptr<Stage> mine;
  if (n == 1) {
    mine = std::make_shared<Stage>(width(0), width(1), 0);
    chain->add_link(mine);
  } else if (me == 0) {
    mine = std::make_shared<Stage>(width(0), width(1), 0);
    chain->add_link(mine, std::nullopt, 1);
    chain->add_link(std::make_shared<Identity>(), n - 1, std::nullopt);
  } else {
    mine = std::make_shared<Stage>(width(me), width(me + 1), uint64_t(me));
    chain->add_link(mine, me - 1, (me + 1) % n);
  }
  const Tensor x = batch(5, width(0));
  Variable out = chain->forward_args(me == 0 ? std::vector<Variable>{Variable(x)} : std::vector<Variable>{}).at(0);
  // Rank 0 holds the output; the others hold the delegate of their send.
  Variable start = me == 0 ? loss_of(out) : out;
  start.backward();

  // The same stages in one process, on every rank.
  std::vector<std::shared_ptr<Stage>> stages;
  Variable h(x);
  for (int i = 0; i < n; ++i) {
    stages.push_back(std::make_shared<Stage>(width(i), width(i + 1), uint64_t(i)));
    h = (*stages.back())(h);
  }
  loss_of(h).backward();
  if (me == 0) CHECK(worst_difference(out.data(), h.data()) < 1e-6);
  CHECK(worst_difference(mine->linear->W().grad(), stages[size_t(me)]->linear->W().grad()) < 1e-6);
  CHECK(worst_difference(mine->linear->b()->grad(), stages[size_t(me)]->linear->b()->grad()) < 1e-6);
}

TEST_CASE("MultiNodeChainList: fan-out to several ranks and fan-in from several ranks, and a rank sending to itself",
          "[multi_node_links][chain_list]") {
  // Rank 0 sends its stage's output to every rank (itself included); each rank applies its own
  // stage; rank 0 sums what comes back from all of them. One process: y = sum_i stage_i(stage_0(x)).
  auto comm = world();
  const int n = comm->size(), me = comm->rank();
  std::vector<int> everyone(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) everyone[size_t(r)] = r;
  auto chain = std::make_shared<mn::links::MultiNodeChainList>(comm);
  std::shared_ptr<Stage> first, mine = std::make_shared<Stage>(4, 4, 10 + uint64_t(me));
  if (me == 0) {
    first = std::make_shared<Stage>(4, 4, 0);
    chain->add_link(first, std::nullopt, mn::links::Ranks(everyone));
    chain->add_link(mine, 0, 0);
    chain->add_link(std::make_shared<SumInputs>(), mn::links::Ranks(everyone), std::nullopt);
  } else {
    chain->add_link(mine, 0, 0);
  }
  const Tensor x = batch(3, 4);
  Variable out = chain->forward_args(me == 0 ? std::vector<Variable>{Variable(x)} : std::vector<Variable>{}).at(0);
  (me == 0 ? loss_of(out) : out).backward();

  auto ref_first = std::make_shared<Stage>(4, 4, 0);
  std::vector<std::shared_ptr<Stage>> branches;
  const Variable h = (*ref_first)(Variable(x));
  Variable sum;
  for (int r = 0; r < n; ++r) {
    branches.push_back(std::make_shared<Stage>(4, 4, 10 + uint64_t(r)));
    const Variable y = (*branches.back())(h);
    sum = sum.defined() ? F::add(sum, y) : y;
  }
  loss_of(sum).backward();
  if (me == 0) {
    CHECK(worst_difference(out.data(), sum.data()) < 1e-6);
    CHECK(worst_difference(first->linear->W().grad(), ref_first->linear->W().grad()) < 1e-6);
  }
  CHECK(worst_difference(mine->linear->W().grad(), branches[size_t(me)]->linear->W().grad()) < 1e-6);
}

TEST_CASE("MultiNodeChainList: add_link refuses a second output and ranks outside the communicator",
          "[multi_node_links][chain_list][errors]") {
  auto comm = world();
  mn::links::MultiNodeChainList chain(comm);
  chain.add_link(std::make_shared<Identity>());  // the output
  CHECK_THROWS_WITH(chain.add_link(std::make_shared<Identity>()),
                    Catch::Contains("component 1 has no rank_out, but component 0 has none either"));
  CHECK_THROWS_WITH(chain.add_link(std::make_shared<Identity>(), comm->size(), 0),
                    Catch::Contains(str("rank ", comm->size(), " of component 1 is outside the communicator")));
  CHECK_THROWS_WITH(chain.add_link(std::make_shared<Identity>(), std::nullopt, -1),
                    Catch::Contains("rank -1 of component 1"));
  CHECK_THROWS_WITH(chain.add_link(nullptr), Catch::Contains("null link"));
  CHECK(chain.size() == 1);
  CHECK_THROWS_WITH(mn::links::MultiNodeChainList(nullptr), Catch::Contains("communicator is null"));
  // A component taking input from its own rank with nothing kept there.
  mn::links::MultiNodeChainList lonely(comm);
  lonely.add_link(std::make_shared<Identity>(), comm->rank(), std::nullopt);
  CHECK_THROWS_WITH(lonely.forward_args({}), Catch::Contains("no earlier component sent its output here"));
}

namespace {

// A component with two outputs: {sigmoid(a x), tanh(b x)}.
class TwoHeads : public Chain {
 public:
  TwoHeads() : a(add_link("a", std::make_shared<Stage>(4, 4, 200))), b(add_link("b", std::make_shared<Stage>(4, 4, 201))) {}
  std::vector<Variable> forward_args(const std::vector<Variable>& xs) override {
    return {(*a)(xs.at(0)), F::tanh(b->linear->forward(xs.at(0)))};
  }
  std::shared_ptr<Stage> a, b;
};

// A component with two inputs and two outputs: {u, v} -> {sigmoid(l u) + v, u * v}.
class Mix : public Chain {
 public:
  explicit Mix(uint64_t index) : l(add_link("l", std::make_shared<Stage>(4, 4, 300 + index))) {}
  std::vector<Variable> forward_args(const std::vector<Variable>& xs) override {
    if (xs.size() != 2) throw Error(str("Mix: expected 2 inputs, got ", xs.size()));
    return {F::add((*l)(xs[0]), xs[1]), F::mul(xs[0], xs[1])};
  }
  std::shared_ptr<Stage> l;
};

class PassAll : public Link {
 public:
  std::vector<Variable> forward_args(const std::vector<Variable>& xs) override { return xs; }
};

}  // namespace

TEST_CASE("MultiNodeChainList: a component's several outputs travel on one edge and are the next component's inputs",
          "[multi_node_links][chain_list]") {
  // TwoHeads on rank 0, then Mix(r) on each rank r >= 1 in turn, and back to rank 0, whose list
  // outputs both variables. One process: TwoHeads sends to its own rank, Mix(1) gives the output.
  auto comm = world();
  const int n = comm->size(), me = comm->rank();
  auto chain = std::make_shared<mn::links::MultiNodeChainList>(comm);
  std::shared_ptr<TwoHeads> heads;
  std::shared_ptr<Mix> mine;
  if (n == 1) {
    heads = std::make_shared<TwoHeads>();
    mine = std::make_shared<Mix>(1);
    chain->add_link(heads, std::nullopt, 0);
    chain->add_link(mine, 0, std::nullopt);
  } else if (me == 0) {
    heads = std::make_shared<TwoHeads>();
    chain->add_link(heads, std::nullopt, 1);
    chain->add_link(std::make_shared<PassAll>(), n - 1, std::nullopt);
  } else {
    mine = std::make_shared<Mix>(uint64_t(me));
    chain->add_link(mine, me - 1, (me + 1) % n);
  }
  const Tensor x = batch(3, 4);
  std::vector<Variable> out = chain->forward_args(me == 0 ? std::vector<Variable>{Variable(x)} : std::vector<Variable>{});
  // Only the first output reaches the loss: the second's gradient is zeros on its way back.
  if (me == 0) {
    REQUIRE(out.size() == 2);
    loss_of(out[0]).backward();
  } else {
    REQUIRE(out.size() == 1);  // the delegate
    out[0].backward();
  }

  TwoHeads ref_heads;
  std::vector<std::shared_ptr<Mix>> mixes;
  std::vector<Variable> h = ref_heads.forward_args({Variable(x)});
  for (int r = 1; r <= std::max(n - 1, 1); ++r) {
    mixes.push_back(std::make_shared<Mix>(uint64_t(r)));
    h = mixes.back()->forward_args(h);
  }
  loss_of(h[0]).backward();
  if (me == 0) {
    CHECK(worst_difference(out[0].data(), h[0].data()) < 1e-6);
    CHECK(worst_difference(out[1].data(), h[1].data()) < 1e-6);
    CHECK(worst_difference(heads->a->linear->W().grad(), ref_heads.a->linear->W().grad()) < 1e-6);
    CHECK(worst_difference(heads->b->linear->W().grad(), ref_heads.b->linear->W().grad()) < 1e-6);
  }
  if (mine) CHECK(worst_difference(mine->l->linear->W().grad(), mixes[size_t(std::max(me, 1) - 1)]->l->linear->W().grad()) < 1e-6);
}

// =============================================================================================
// create_multi_node_n_step_rnn
// =============================================================================================

namespace {

constexpr int64_t kVocab = 7, kUnits = 5, kLayers = 2;

// Stage S of a chain of stacked RNNs (ChainerMN's seq2seq split over the ranks, with middle
// stages between encoder and decoder): an EmbedID and a stack; the last stage also has the output
// Linear. Every stage is built, in order, from one seed, so any rank can build any stage and
// the whole model alike.
template <class RNN>
struct Seq2SeqStage {
  std::shared_ptr<L::EmbedID> embed;
  std::shared_ptr<RNN> rnn;
  std::shared_ptr<L::Linear> out;  // the last stage's only
};
template <class RNN>
std::vector<Seq2SeqStage<RNN>> build_stages(int n) {
  random::seed(2024);
  std::vector<Seq2SeqStage<RNN>> stages(static_cast<size_t>(n));
  for (int s = 0; s < n; ++s) {
    stages[size_t(s)].embed = std::make_shared<L::EmbedID>(kVocab, kUnits);
    stages[size_t(s)].rnn = std::make_shared<RNN>(kLayers, kUnits, kUnits, 0.0);
  }
  stages.back().out = std::make_shared<L::Linear>(kUnits, kVocab);
  return stages;
}

// The sequences stage S reads (the decoder: its input, eos first), of lengths 3, 1, 4 (rotated by S).
std::vector<std::vector<int32_t>> stage_ids(int s) {
  const std::vector<int64_t> lengths = {3, 1, 4};
  std::vector<std::vector<int32_t>> seqs;
  for (size_t i = 0; i < lengths.size(); ++i) {
    std::vector<int32_t> ids;
    for (int64_t t = 0; t < lengths[(i + size_t(s)) % lengths.size()]; ++t)
      ids.push_back(int32_t((1 + 3 * s + 2 * int(i) + 5 * t) % kVocab));
    seqs.push_back(ids);
  }
  return seqs;
}

std::vector<Variable> embed_all(L::EmbedID& embed, const std::vector<std::vector<int32_t>>& seqs) {
  std::vector<Variable> xs;
  for (const auto& ids : seqs) xs.push_back(embed(Variable(Tensor::from_vector(ids))));
  return xs;
}

// The decoder's loss, as seq2seq_mp1: the sum over all output positions of the cross entropy
// against the input shifted by one (eos last), divided by the batch size.
Variable decoder_loss(L::Linear& out, const std::vector<Variable>& ys, const std::vector<std::vector<int32_t>>& seqs) {
  std::vector<int32_t> targets;
  for (const auto& ids : seqs) {
    targets.insert(targets.end(), ids.begin() + 1, ids.end());
    targets.push_back(0);
  }
  Variable logits = out(F::concat(ys, 0));
  Variable t(Tensor::from_vector(targets));
  return F::mul(F::sum(F::softmax_cross_entropy(logits, t, true, -1, "no")), 1.0 / double(seqs.size()));
}

std::vector<std::pair<std::string, Tensor>> grads_of(const Link& link) {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [name, p] : link.namedparams()) out.emplace_back(name, p.grad());
  return out;
}

void check_same_grads(const Link& got, const Link& want, const std::string& what) {
  const auto g = grads_of(got), w = grads_of(want);
  REQUIRE(g.size() == w.size());
  for (size_t i = 0; i < g.size(); ++i) {
    INFO(what << g[i].first);
    REQUIRE(g[i].second.defined());
    CHECK(worst_difference(g[i].second, w[i].second) < 1e-5);
  }
}

// The whole chain in one process: each stage's stack starts from the previous one's final states.
template <class RNN>
Variable run_in_one_process(std::vector<Seq2SeqStage<RNN>>& stages) {
  Variable h, c;
  std::vector<Variable> ys;
  for (size_t s = 0; s < stages.size(); ++s) {
    const std::vector<Variable> xs = embed_all(*stages[s].embed, stage_ids(int(s)));
    if constexpr (std::is_base_of_v<L::NStepLSTMBase, RNN>) {
      auto r = stages[s].rnn->forward(h, c, xs);
      h = r.hy, c = r.cy, ys = r.ys;
    } else {
      auto r = stages[s].rnn->forward(h, xs);
      h = r.hy, ys = r.ys;
    }
  }
  return decoder_loss(*stages.back().out, ys, stage_ids(int(stages.size()) - 1));
}

// Stage r on rank r: the encoder on rank 0 sends its states to rank 1; each middle rank receives
// them, runs its own sequences and sends on; the last rank decodes and takes the loss.
template <class RNN>
void check_rnn_pipeline() {
  auto comm = world();
  const int n = comm->size(), me = comm->rank();
  if (n < 2) return;
  std::vector<Seq2SeqStage<RNN>> stages = build_stages<RNN>(n);
  Seq2SeqStage<RNN>& mine = stages[size_t(me)];
  auto link = mn::links::create_multi_node_n_step_rnn(mine.rnn, comm, me > 0 ? std::optional(me - 1) : std::nullopt,
                                                      me < n - 1 ? std::optional(me + 1) : std::nullopt);
  CHECK(link->actual_rnn == mine.rnn);
  CHECK(link->n_cells() == (std::is_base_of_v<L::NStepLSTMBase, RNN> ? 2 : 1));
  for (int step = 0; step < 2; ++step) {  // twice: the channel stays in step, the gradients accumulate alike
    mn::links::MultiNodeNStepRNNResult r = link->forward(embed_all(*mine.embed, stage_ids(me)));
    CHECK(r.cy.defined() == (link->n_cells() == 2));
    double loss = 0;
    if (me < n - 1) {
      REQUIRE(r.delegate.defined());
      r.delegate.backward();
    } else {
      CHECK(!r.delegate.defined());
      Variable l = decoder_loss(*mine.out, r.ys, stage_ids(me));
      loss = l.item();
      l.backward();
    }
    if (step == 0) {
      std::vector<Seq2SeqStage<RNN>> ref = build_stages<RNN>(n);
      Variable ref_loss = run_in_one_process(ref);
      ref_loss.backward();
      INFO("rank " << me << " of " << n);
      if (me == n - 1) {
        CHECK(loss == Approx(ref_loss.item()).epsilon(1e-5));
        check_same_grads(*mine.out, *ref.back().out, "out");
      }
      check_same_grads(*mine.rnn, *ref[size_t(me)].rnn, "rnn");
      check_same_grads(*mine.embed, *ref[size_t(me)].embed, "embed");
    }
  }
}

}  // namespace

TEST_CASE("create_multi_node_n_step_rnn: NStepLSTM encoder, middle stages and decoder over the ranks equal the "
          "model in one process", "[multi_node_links][n_step_rnn][peers]") {
  check_rnn_pipeline<L::NStepLSTM>();
}

TEST_CASE("create_multi_node_n_step_rnn: NStepGRU stages (states without cy) over the ranks equal the model in one "
          "process", "[multi_node_links][n_step_rnn][peers]") {
  check_rnn_pipeline<L::NStepGRU>();
}

TEST_CASE("create_multi_node_n_step_rnn: states of another shape or count than the decoder expects are an error "
          "naming the link and both shapes", "[multi_node_links][n_step_rnn][peers]") {
  auto comm = world();
  const int me = comm->rank();
  if (comm->size() < 2 || me > 1) return;
  if (me == 0) {
    // Three layers where rank 1's decoder has two; then a GRU's hy alone where it expects hy and cy.
    auto enc3 = mn::links::create_multi_node_n_step_rnn(std::make_shared<L::NStepLSTM>(3, 2, kUnits, 0.0), comm,
                                                        std::nullopt, 1);
    auto gru = mn::links::create_multi_node_n_step_rnn(std::make_shared<L::NStepGRU>(kLayers, 2, kUnits, 0.0), comm,
                                                       std::nullopt, 1);
    const std::vector<Variable> xs = {Variable(Tensor::ones({2, 2})), Variable(Tensor::ones({1, 2}))};
    enc3->forward(xs);  // their backward never runs: rank 1 records nothing
    gru->forward(xs);
  } else {
    auto dec = mn::links::create_multi_node_n_step_rnn(std::make_shared<L::NStepLSTM>(kLayers, 2, kUnits, 0.0), comm, 0);
    const std::vector<Variable> xs = {Variable(Tensor::ones({2, 2})), Variable(Tensor::ones({1, 2}))};
    CHECK_THROWS_WITH(dec->forward(xs),
                      Catch::Contains("MultiNodeNStepRNN (chainer::links::NStepLSTM of 2 layers of 5 units, 2 sequences) "
                                      "receiving its initial states from rank 0") &&
                          Catch::Contains("member 0 of shape (2, 2, 5), but rank 0 sent float32 (3, 2, 5)"));
    CHECK_THROWS_WITH(dec->forward(xs), Catch::Contains("expected 2 tensors from rank 0 with tag 0, but rank 0 sent 1 tensor"));
  }
}

TEST_CASE("create_multi_node_n_step_rnn: refuses links other than the stacked RNNs, naming the type, and bad ranks",
          "[multi_node_links][n_step_rnn][errors]") {
  auto comm = world();
  const int n = comm->size(), me = comm->rank();
  CHECK_THROWS_WITH(mn::links::create_multi_node_n_step_rnn(std::make_shared<L::Linear>(3, 4), comm),
                    Catch::Contains("create_multi_node_n_step_rnn: a link of type chainer::links::Linear is not "
                                    "supported") && Catch::Contains("NStepLSTM, NStepBiLSTM, NStepGRU"));
  CHECK_THROWS_WITH(mn::links::create_multi_node_n_step_rnn(nullptr, comm), Catch::Contains("the RNN link is null"));
  auto lstm = std::make_shared<L::NStepBiLSTM>(1, 3, 4, 0.0);
  CHECK_THROWS_WITH(mn::links::create_multi_node_n_step_rnn(lstm, nullptr), Catch::Contains("communicator is null"));
  CHECK_THROWS_WITH(mn::links::create_multi_node_n_step_rnn(lstm, comm, me),
                    Catch::Contains("rank_in: rank " + std::to_string(me) + " is this process's own rank"));
  CHECK_THROWS_WITH(mn::links::create_multi_node_n_step_rnn(lstm, comm, std::nullopt, n),
                    Catch::Contains(str("rank_out: rank ", n, " is outside [0, ", n, ")")));
  // Without ranks it is the stack itself, under the child name "actual_rnn".
  auto alone = mn::links::create_multi_node_n_step_rnn(lstm, comm);
  CHECK(alone->n_cells() == 2);
  CHECK(alone->namedparams().front().first.rfind("/actual_rnn/", 0) == 0);
  const std::vector<Variable> xs = {Variable(Tensor::ones({2, 3})), Variable(Tensor::ones({3, 3}))};
  mn::links::MultiNodeNStepRNNResult r = alone->forward(xs);
  CHECK(!r.delegate.defined());
  auto direct = lstm->forward({}, {}, xs);
  CHECK(worst_difference(r.hy.data(), direct.hy.data()) == 0);
  CHECK(worst_difference(r.ys[1].data(), direct.ys[1].data()) == 0);
}

namespace {

// One convolution layer of a parallel-vs-single comparison.
struct ConvSpec {
  int64_t in, out, ksize, stride, pad;
  bool nobias;
};

// Layers of CHAIN as ParallelConvolution2D over COMM against Convolution2D in this process, with
// the same filters (drawn from SEED, the same on every rank; each parallel link gets its rows).
// Every rank's loss is sum(y * g_rank) over the last layer's output y; the single-process chain's
// is the sum over the ranks of those losses. Checks the outputs, every slice's W and b gradients
// against the rows of the single chain's, and the input gradient summed over the ranks.
void expect_parallel_equals_single(const std::shared_ptr<mn::Communicator>& comm, const std::vector<ConvSpec>& chain,
                                   const Shape& input, uint64_t seed) {
  std::vector<std::shared_ptr<mn::links::ParallelConvolution2D>> parallel;
  std::vector<std::shared_ptr<L::Convolution2D>> single;
  Generator gen(seed);
  for (const ConvSpec& c : chain) {
    parallel.push_back(std::make_shared<mn::links::ParallelConvolution2D>(comm, c.in, c.out, c.ksize, c.stride, c.pad,
                                                                          c.nobias));
    single.push_back(std::make_shared<L::Convolution2D>(c.in, c.out, c.ksize, c.stride, c.pad, c.nobias));
    const Tensor W = random::normal({c.out, c.in, c.ksize, c.ksize}, 0.0, 0.5, DType::Float32, &gen);
    const Tensor b = random::normal({c.out}, 0.0, 0.5, DType::Float32, &gen);
    const mn::links::ChannelSlice slice = parallel.back()->slice();
    single.back()->W().data().copy_(W);
    parallel.back()->W().data().copy_(rows_of(W, slice.offset, slice.count));
    if (!c.nobias) {
      single.back()->b()->data().copy_(b);
      parallel.back()->b()->data().copy_(rows_of(b, slice.offset, slice.count));
    }
  }
  const Tensor x = batch(input[0], Shape(input.begin() + 1, input.end()), seed + 1);
  Variable xp(x, true), xs(x, true);
  Variable yp = xp, ys = xs;
  for (size_t i = 0; i < chain.size(); ++i) {
    yp = (*parallel[i])(yp);
    ys = (*single[i])(ys);
  }
  CHECK(worst_difference(yp.data(), ys.data()) <= 1e-5);
  Shape out_row(ys.shape().begin() + 1, ys.shape().end());
  const Tensor mine = batch(ys.shape()[0], out_row, seed + 100 + uint64_t(comm->rank()));
  functions::sum(yp * Variable(mine)).backward();
  Variable loss_sum;
  for (int r = 0; r < comm->size(); ++r) {
    Variable term = functions::sum(ys * Variable(batch(ys.shape()[0], out_row, seed + 100 + uint64_t(r))));
    loss_sum = r == 0 ? term : loss_sum + term;
  }
  loss_sum.backward();
  for (size_t i = 0; i < chain.size(); ++i) {
    INFO("layer " << i);
    const mn::links::ChannelSlice slice = parallel[i]->slice();
    CHECK(parallel[i]->W().data().shape()[0] == slice.count);
    CHECK(worst_difference(parallel[i]->W().grad(), rows_of(single[i]->W().grad(), slice.offset, slice.count)) <= 1e-4);
    if (!chain[i].nobias)
      CHECK(worst_difference(parallel[i]->b()->grad(), rows_of(single[i]->b()->grad(), slice.offset, slice.count)) <=
            1e-4);
  }
  CHECK(worst_difference(comm->allreduce(xp.grad()), xs.grad()) <= 1e-4);
}

}  // namespace

TEST_CASE("channel_slice: ChainerMN's sizes, the first channels % size ranks one more, in rank order",
          "[multi_node_links][parallel_convolution]") {
  using mn::links::channel_slice;
  CHECK(channel_slice(7, 3, 0).offset == 0);
  CHECK(channel_slice(7, 3, 0).count == 3);
  CHECK(channel_slice(7, 3, 1).offset == 3);
  CHECK(channel_slice(7, 3, 1).count == 2);
  CHECK(channel_slice(7, 3, 2).offset == 5);
  CHECK(channel_slice(7, 3, 2).count == 2);
  for (int64_t channels : {1, 4, 5, 64, 513})
    for (int size = 1; size <= 5; ++size) {
      int64_t next = 0;
      for (int r = 0; r < size; ++r) {
        const mn::links::ChannelSlice s = channel_slice(channels, size, r);
        CHECK(s.offset == next);
        CHECK((s.count == channels / size || s.count == channels / size + 1));
        next += s.count;
      }
      CHECK(next == channels);
    }
  REQUIRE_THROWS_WITH(channel_slice(4, 2, 2), Catch::Contains("rank 2 is not one of 2 ranks"));
}

TEST_CASE("ParallelConvolution2D equals one Convolution2D with the same filters: outputs and every gradient",
          "[multi_node_links][parallel_convolution]") {
  auto comm = world();
  // Output channels divisible by the ranks and not (5 and 7 at 2, 3 and 4 ranks), with and
  // without bias, stride and padding, and two layers stacked (the second's input gradient
  // reaches the first's slices through the allgather).
  const std::vector<std::pair<std::string, std::vector<ConvSpec>>> cases{
      {"3 -> 12 channels, 3x3, pad 1", {{3, 12, 3, 1, 1, false}}},
      {"2 -> 5 channels, 3x3, stride 2, no bias", {{2, 5, 3, 2, 0, true}}},
      {"4 -> 7 -> 5 channels, stacked", {{4, 7, 3, 1, 1, false}, {7, 5, 1, 1, 0, true}}}};
  uint64_t seed = 50000;
  for (const auto& [name, chain] : cases) {
    INFO(name << " on " << comm->size() << " ranks, rank " << comm->rank());
    expect_parallel_equals_single(comm, chain, {2, chain[0].in, 6, 5}, seed += 1000);
  }
}

TEST_CASE("ParallelConvolution2D drawn from the same seed on every rank holds the rows of one Convolution2D's filters",
          "[multi_node_links][parallel_convolution]") {
  auto comm = world();
  random::seed(77);
  auto bias = [](const Shape& s) { return random::uniform(s, -1.0, 1.0); };
  mn::links::ParallelConvolution2D parallel(comm, 3, 7 + comm->size(), 3, 1, 1, false, {}, bias);
  random::seed(77);
  L::Convolution2D single(3, 7 + comm->size(), 3, 1, 1, false, {}, bias);
  const mn::links::ChannelSlice slice = parallel.slice();
  CHECK(parallel.total_out_channels() == 7 + comm->size());
  CHECK(worst_difference(parallel.W().data(), rows_of(single.W().data(), slice.offset, slice.count)) == 0);
  CHECK(worst_difference(parallel.b()->data(), rows_of(single.b()->data(), slice.offset, slice.count)) == 0);
  // An array given as initialW is the whole convolution's filters.
  const Tensor W = random::normal({5, 2, 1, 1}, 0.0, 1.0);
  mn::links::ParallelConvolution2D from_array(comm, 2, 5, 1, 1, 0, true, W);
  const mn::links::ChannelSlice s5 = from_array.slice();
  CHECK(worst_difference(from_array.W().data(), rows_of(W, s5.offset, s5.count)) == 0);
}

TEST_CASE("ParallelConvolution2D refuses fewer output channels than ranks, on every rank alike",
          "[multi_node_links][parallel_convolution][peers]") {
  auto comm = world();
  const int64_t too_few = comm->size() - 1;
  REQUIRE_THROWS_WITH(mn::links::ParallelConvolution2D(comm, 3, too_few, 3),
                      Catch::Contains("ParallelConvolution2D: out_channels " + std::to_string(too_few) +
                                      " is less than the " + std::to_string(comm->size()) + " processes"));
}
