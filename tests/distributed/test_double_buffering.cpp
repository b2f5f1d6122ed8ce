// The multi-node optimizer's double buffering, as ChainerMN's _DoubleBufferingOptimizer: the
// first update broadcasts, the second only starts averaging its gradients, and update k steps
// with the mean of update k-1's gradients. Run under mpiexec with 1 to 4 processes; every rank
// runs the same cases in the same order, and checks between collectives use CHECK (never
// REQUIRE), so one rank's failure cannot leave the others waiting in a collective.
//
// The results are compared EXACTLY with a hand run on one process: the model is one Linear in
// float64 with small dyadic parameters, integer inputs and a power-of-two learning rate, and
// every rank's loss is multiplied by the number of ranks, so each gradient, its share
// (gradient / size) and any sum of shares are exact; the mean over the ranks is then the plain
// sum of the unscaled gradients, whatever order the ranks are added in.
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <vector>

#include "distributed/communicators/communicator.h"
#include "distributed/optimizers/multi_node_optimizer.h"
#include "nn/functions.h"
#include "nn/links/linear.h"
#include "nn/optimizers/sgd.h"

using namespace chainer;
namespace F = chainer::functions;
namespace L = chainer::links;
namespace mn = chainermn;

namespace {

constexpr int64_t kIn = 3, kOut = 2, kBatch = 2;
constexpr double kLr = 1.0 / 32;

// W and b in multiples of 1/4; OFFSET is added to b (other values on other ranks, which the
// first update's broadcast replaces with rank 0's).
std::shared_ptr<L::Linear> make_linear(double offset = 0) {
  auto lin = std::make_shared<L::Linear>(kIn, kOut);
  std::vector<double> w(size_t(kOut * kIn));
  for (size_t i = 0; i < w.size(); ++i) w[i] = double(int(i % 5) - 2) / 4;
  lin->W().set_data(Tensor::from_vector(w, {kOut, kIn}));
  lin->b()->set_data(Tensor::from_vector(std::vector<double>{0.25 + offset, -0.5 + offset}, {kOut}));
  return lin;
}

// Rank RANK's examples at update UPDATE: integers in [-1, 2], other ones on every rank and update.
Tensor examples(int rank, int update) {
  std::vector<double> x(size_t(kBatch * kIn));
  for (size_t i = 0; i < x.size(); ++i) x[i] = double(int((7 * rank + 3 * update + 5 * int(i) + rank * update) % 4) - 1);
  return Tensor::from_vector(x, {kBatch, kIn});
}

// sum(y^2) / 8 times SCALE, for y = lin(x).
Variable loss_of(L::Linear& lin, const Tensor& x, double scale) {
  const Variable y = lin(Variable(x));
  return F::sum(y * y) * (scale / 8);
}

// W then b, flat.
std::vector<double> params_of(L::Linear& lin) {
  std::vector<double> out = lin.W().data().to_vector<double>();
  for (double v : lin.b()->data().to_vector<double>()) out.push_back(v);
  return out;
}

// One process's hand run of UPDATES updates by SIZE ranks: the first only broadcasts; from the
// second on, each update's gradients are summed over the ranks (the mean, see above) and applied
// by SGD either at once or, LAGGED, one update later (so the second update does not step).
std::vector<double> hand_run(int size, int updates, bool lagged) {
  auto lin = make_linear();
  std::optional<std::vector<double>> previous;
  auto step = [&](const std::vector<double>& g) {
    std::vector<double> p = params_of(*lin);
    for (size_t i = 0; i < p.size(); ++i) p[i] -= kLr * g[i];
    lin->W().set_data(Tensor::from_vector(std::vector<double>(p.begin(), p.begin() + kOut * kIn), {kOut, kIn}));
    lin->b()->set_data(Tensor::from_vector(std::vector<double>(p.begin() + kOut * kIn, p.end()), {kOut}));
  };
  for (int u = 2; u <= updates; ++u) {
    std::vector<double> mean(size_t(kOut * kIn + kOut), 0.0);
    for (int r = 0; r < size; ++r) {
      lin->cleargrads();
      loss_of(*lin, examples(r, u), 1.0).backward();
      std::vector<double> g = lin->W().grad().to_vector<double>();
      for (double v : lin->b()->grad().to_vector<double>()) g.push_back(v);
      for (size_t i = 0; i < g.size(); ++i) mean[i] += g[i];
    }
    if (!lagged) {
      step(mean);
    } else {
      if (previous) step(*previous);
      previous = mean;
    }
  }
  return params_of(*lin);
}

// A communicator and reducer setting of the table below.
struct Variant {
  std::string comm;
  bool shared_memory;  // on one host, the reducer's shared segment (sums at once) or messages
};
const std::vector<Variant> kVariants = {{"naive", true},         {"naive", false},          {"flat", false},
                                        {"hierarchical", false}, {"two_dimensional", false}, {"single_node", false}};

mn::MultiNodeOptimizerOptions options_for(const Variant& v, bool double_buffering) {
  mn::MultiNodeOptimizerOptions o;
  o.double_buffering = double_buffering;
  o.reducer.shared_memory = v.shared_memory;
  o.reducer.first_bucket_bytes = 1;  // W and b in buckets of their own: two sums in flight
  o.reducer.bucket_bytes = 1;
  return o;
}

// UPDATES updates of a fresh model on every rank, from update FIRST (1: a fresh run).
void run_updates(Optimizer& opt, L::Linear& lin, int size, int rank, int first, int updates) {
  for (int u = first; u <= updates; ++u) opt.update([&] { return loss_of(lin, examples(rank, u), double(size)); });
}

}  // namespace

TEST_CASE("double_buffering: the hand run discriminates the lagged update from the plain one") {
  // Otherwise the equality below could not tell the two apart.
  for (int size = 1; size <= 4; ++size) {
    CAPTURE(size);
    CHECK(hand_run(size, 5, true) != hand_run(size, 5, false));
    CHECK(hand_run(size, 2, true) == params_of(*make_linear()));  // no step yet
  }
}

TEST_CASE("double_buffering: update k steps with the mean of update k-1's gradients, on every communicator") {
  auto world = mn::create_communicator("naive");
  const int size = world->size(), rank = world->rank();
  for (const Variant& v : kVariants) {
    CAPTURE(v.comm, v.shared_memory);
    auto comm = mn::create_communicator(v.comm);
    auto lin = make_linear(0.25 * rank);
    auto opt = mn::create_multi_node_optimizer(std::make_shared<optimizers::SGD>(kLr), comm, options_for(v, true));
    opt->setup(lin);
    auto& mno = dynamic_cast<mn::MultiNodeOptimizer&>(*opt);
    run_updates(*opt, *lin, size, rank, 1, 2);
    CHECK(opt->t() == 0);  // a broadcast, then an update that only starts averaging
    CHECK(mno.reducer()->has_lagged());
    CHECK(params_of(*lin) == hand_run(size, 2, true));
    run_updates(*opt, *lin, size, rank, 3, 6);
    CHECK(opt->t() == 4);
    CHECK(mno.broadcast_count() == 1);
    const std::vector<double> got = params_of(*lin);
    CHECK(got == hand_run(size, 6, true));
    CHECK(got != hand_run(size, 6, false));  // the current gradients were not applied
    if (size > 1 && !v.shared_memory && (v.comm == "naive" || v.comm == "flat"))
      CHECK(mno.reducer()->stats().buckets_from_hooks > 0);  // started during backward, behind the last step's
  }
}

TEST_CASE("double_buffering: with gradient accumulation (no_sync), the lagged means are of the summed passes") {
  // Each rank's batch of 2 in two passes of one example; the loss is a sum, so the two passes'
  // gradients add up to the batch's exactly, and the result is the hand run's.
  auto world = mn::create_communicator("naive");
  const int size = world->size(), rank = world->rank();
  for (const Variant& v : kVariants) {
    CAPTURE(v.comm, v.shared_memory);
    auto comm = mn::create_communicator(v.comm);
    auto lin = make_linear(0.25 * rank);
    auto opt = mn::create_multi_node_optimizer(std::make_shared<optimizers::SGD>(kLr), comm, options_for(v, true));
    opt->setup(lin);
    for (int u = 1; u <= 6; ++u) {
      const Tensor x = examples(rank, u);
      lin->cleargrads();
      {
        auto local = opt->no_sync();
        loss_of(*lin, x.narrow(0, 0, 1), double(size)).backward();
      }
      loss_of(*lin, x.narrow(0, 1, 1), double(size)).backward();
      opt->update();
    }
    CHECK(opt->t() == 4);
    CHECK(params_of(*lin) == hand_run(size, 6, true));
    const auto& stats = dynamic_cast<mn::MultiNodeOptimizer&>(*opt).reducer()->stats();
    CHECK(stats.restarts == 0);
    CHECK(stats.buckets_discarded == 0);
    CHECK(stats.deferred_grads == 5 * 2);  // W and b, in the first pass of every update after the broadcast
  }
}

TEST_CASE("double_buffering: off (the default), each update steps with its own gradients, as before") {
  auto world = mn::create_communicator("naive");
  const int size = world->size(), rank = world->rank();
  for (const Variant& v : kVariants) {
    CAPTURE(v.comm, v.shared_memory);
    auto comm = mn::create_communicator(v.comm);
    auto lin = make_linear(0.25 * rank);
    auto opt = mn::create_multi_node_optimizer(std::make_shared<optimizers::SGD>(kLr), comm, options_for(v, false));
    opt->setup(lin);
    run_updates(*opt, *lin, size, rank, 1, 6);
    CHECK(opt->t() == 5);
    CHECK(params_of(*lin) == hand_run(size, 6, false));
    CHECK_FALSE(dynamic_cast<mn::MultiNodeOptimizer&>(*opt).reducer()->has_lagged());
  }
  auto plain = mn::create_multi_node_optimizer(std::make_shared<optimizers::SGD>(kLr), world);
  CHECK_FALSE(dynamic_cast<mn::MultiNodeOptimizer&>(*plain).options().double_buffering);
}

TEST_CASE("double_buffering: a snapshot holds the means in flight, and a resumed run continues identically") {
  auto world = mn::create_communicator("naive");
  const int size = world->size(), rank = world->rank();
  for (const Variant& v : {kVariants[0], kVariants[1]}) {
    CAPTURE(v.shared_memory);
    for (const int at : {2, 4}) {  // after the update that only starts averaging, and later
      CAPTURE(at);
      auto lin = make_linear(0.25 * rank);
      auto opt = mn::create_multi_node_optimizer(std::make_shared<optimizers::SGD>(kLr), world, options_for(v, true));
      opt->setup(lin);
      run_updates(*opt, *lin, size, rank, 1, at);
      Serializer snapshot = Serializer::writer();
      opt->serialize(snapshot);
      const std::vector<double> saved = params_of(*lin);
      run_updates(*opt, *lin, size, rank, at + 1, 7);

      CHECK(snapshot.entries().count("double_buffering/W") == 1);
      CHECK(snapshot.entries().count("double_buffering/b") == 1);
      auto lin2 = make_linear();
      lin2->W().set_data(Tensor::from_vector(std::vector<double>(saved.begin(), saved.begin() + kOut * kIn), {kOut, kIn}));
      lin2->b()->set_data(Tensor::from_vector(std::vector<double>(saved.begin() + kOut * kIn, saved.end()), {kOut}));
      auto opt2 = mn::create_multi_node_optimizer(std::make_shared<optimizers::SGD>(kLr), world, options_for(v, true));
      opt2->setup(lin2);
      Serializer reader = Serializer::reader(snapshot.entries());
      opt2->serialize(reader);
      // A snapshot of the restored optimizer before it updates holds the same means.
      Serializer again = Serializer::writer();
      opt2->serialize(again);
      CHECK(again.entries().at("double_buffering/W").to_vector<double>() ==
            snapshot.entries().at("double_buffering/W").to_vector<double>());
      run_updates(*opt2, *lin2, size, rank, at + 1, 7);
      CHECK(opt2->t() == opt->t());
      CHECK(dynamic_cast<mn::MultiNodeOptimizer&>(*opt2).broadcast_count() == 0);
      CHECK(params_of(*lin2) == params_of(*lin));
      CHECK(params_of(*lin2) == hand_run(size, 7, true));
    }
  }
}

TEST_CASE("double_buffering: refused where nothing is averaged, or without the bucketed reduction") {
  auto dummy = mn::create_communicator("dummy");
  CHECK_THROWS_WITH(mn::create_multi_node_optimizer(std::make_shared<optimizers::SGD>(), dummy, true),
                    "create_multi_node_optimizer: double buffering averages each step's gradients behind the next "
                    "step, but the 'dummy' communicator averages nothing");
  mn::MultiNodeOptimizerOptions o;
  o.double_buffering = true;
  o.reduction = mn::Reduction::Communicator;
  CHECK_THROWS_WITH(mn::create_multi_node_optimizer(std::make_shared<optimizers::SGD>(), mn::create_communicator("flat"), o),
                    "create_multi_node_optimizer: double buffering needs the bucketed reduction, got 'communicator'");
  // Without double buffering both are accepted.
  CHECK_NOTHROW(mn::create_multi_node_optimizer(std::make_shared<optimizers::SGD>(), dummy));
  o.double_buffering = false;
  CHECK_NOTHROW(mn::create_multi_node_optimizer(std::make_shared<optimizers::SGD>(), mn::create_communicator("flat"), o));
}
