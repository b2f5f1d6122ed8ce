// Dynamic loss scaling under the multi-node optimizer: when ONE rank's gradient holds an inf,
// every rank skips that step and backs off alike, so the replicas never diverge; on every way the
// gradients are averaged (the shared-memory reducer with and without the shared update, MPI
// messages, the communicator's own multi_node_mean_grad). Run under mpiexec with 1 to 4
// processes; checks between collectives use CHECK, never REQUIRE.
//
// Exact closed forms: a float64 vector with dyadic gradients, each rank's multiplied by the
// number of ranks and by the loss scale (a power of two), so the mean over the ranks divided by
// the scale is the plain sum of the dyadic values, whatever order the ranks are added in.
#include <catch2/catch.hpp>

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "distributed/communicators/communicator.h"
#include "distributed/optimizers/multi_node_optimizer.h"
#include "nn/optimizers/sgd.h"

using namespace chainer;
namespace mn = chainermn;

namespace {

constexpr int64_t kN = 64;  // eight cache lines of float64: every rank of a shared update steps a share
constexpr double kLr = 1.0 / 32;

struct Param : Link {
  Param() {
    std::vector<double> w(static_cast<size_t>(kN));
    for (size_t i = 0; i < w.size(); ++i) w[i] = double(int(i % 7) - 3) / 8;
    add_param("w", Tensor::from_vector(w));
  }
};

// Rank RANK's unscaled gradient at update U: multiples of 1/4 in [-1/4, 1/2].
double value(int rank, int u, size_t i) { return double(int((i + size_t(rank) + 3 * size_t(u)) % 4) - 1) / 4; }

// What rank RANK's backward would give at update U with loss scale SCALE, SIZE ranks (see above);
// with OVERFLOW, its first element is an inf.
Tensor gradient(int rank, int size, int u, double scale, bool overflow = false) {
  std::vector<double> g(static_cast<size_t>(kN));
  for (size_t i = 0; i < g.size(); ++i) g[i] = double(size) * scale * value(rank, u, i);
  if (overflow) g[0] = std::numeric_limits<double>::infinity();
  return Tensor::from_vector(g);
}

// The parameters after SGD steps with the mean gradients of UPDATES.
std::vector<double> closed_form(int size, const std::vector<int>& updates) {
  std::vector<double> w = Param().param("w").data().to_vector<double>();
  for (int u : updates)
    for (size_t i = 0; i < w.size(); ++i) {
      double sum = 0;
      for (int r = 0; r < size; ++r) sum += value(r, u, i);
      w[i] -= kLr * sum;
    }
  return w;
}

struct Variant {
  std::string name;
  std::string comm;
  mn::Reduction reduction;
  bool shared_memory;  // the reducer's shared segment on one host
  bool shard_update;   // the shared update (every rank steps a share)
  std::optional<DType> wire = std::nullopt;  // CommunicatorOptions::allreduce_grad_dtype
};
const std::vector<Variant> kVariants = {
    {"shared update", "naive", mn::Reduction::Bucketed, true, true},
    {"bucketed, shared memory", "naive", mn::Reduction::Bucketed, true, false},
    {"bucketed, MPI messages", "flat", mn::Reduction::Bucketed, false, false},
    {"communicator reduction, packed", "flat", mn::Reduction::Communicator, false, false},
    {"communicator reduction, per parameter", "naive", mn::Reduction::Communicator, false, false},
    {"bucketed, MPI messages in float32", "flat", mn::Reduction::Bucketed, false, false, DType::Float32},
};

std::shared_ptr<mn::Communicator> communicator(const Variant& v) {
  return mn::create_communicator(v.comm, MPI_COMM_WORLD, {.allreduce_grad_dtype = v.wire});
}

}  // namespace

TEST_CASE("loss scaling: one rank's inf makes every rank skip and back off; the replicas stay identical") {
  auto world = mn::create_communicator("naive");
  const int size = world->size(), rank = world->rank();
  for (const Variant& v : kVariants) {
    CAPTURE(v.name);
    mn::MultiNodeOptimizerOptions o;
    o.reduction = v.reduction;
    o.reducer.shared_memory = v.shared_memory;
    o.shard_update = v.shard_update;
    auto link = std::make_shared<Param>();
    auto opt = mn::create_multi_node_optimizer(std::make_shared<optimizers::SGD>(kLr), communicator(v), o);
    opt->setup(link);
    opt->loss_scaling({.init_scale = 1024, .growth_interval = 2});
    std::vector<double> before_skip;
    for (int u = 1; u <= 5; ++u) {  // 1 broadcasts; 3 overflows on the last rank
      if (u == 3) before_skip = link->param("w").data().to_vector<double>();
      link->param("w").set_grad(gradient(rank, size, u, opt->loss_scale(), u == 3 && rank == size - 1));
      opt->update();
      if (u == 3) {
        CHECK(opt->last_update_skipped());
        CHECK(opt->loss_scale() == 512);
        CHECK(link->param("w").data().to_vector<double>() == before_skip);
      } else {
        CHECK_FALSE(opt->last_update_skipped());
      }
    }
    if (v.shard_update && size > 1) CHECK(dynamic_cast<mn::MultiNodeOptimizer&>(*opt).shares_update());
    CHECK(opt->skipped_updates() == 1);
    CHECK(opt->t() == 4);             // 2 to 5, the skipped one too
    CHECK(opt->loss_scale() == 1024);  // backed off at 3, grown after 4 and 5
    CHECK(link->param("w").data().to_vector<double>() == closed_form(size, {2, 4, 5}));
    // The snapshot (any rank's: they agree) holds the scale of the actual optimizer.
    Serializer w = Serializer::writer();
    opt->serialize(w);
    CHECK(w.entries().at("loss_scaling/scale").item_double() == 1024);
  }
}

TEST_CASE("loss scaling: the skip is agreed even where the ranks' gradients differ", "[peers]") {
  // MPI does not promise bitwise identical sums on every rank; the multi-node optimizer makes
  // the decision one all-reduce, so one rank's inf after the averaging is every rank's skip.
  auto comm = mn::create_communicator("naive");
  auto sgd = std::make_shared<optimizers::SGD>(kLr);
  auto link = std::make_shared<Param>();
  auto opt = mn::create_multi_node_optimizer(sgd, comm);
  opt->setup(link);
  opt->loss_scaling({.init_scale = 8});
  link->param("w").set_grad(gradient(comm->rank(), comm->size(), 1, 8, comm->rank() == 1));
  sgd->update();  // the actual optimizer alone: no averaging
  CHECK(sgd->last_update_skipped());
  CHECK(opt->loss_scale() == 4);
  CHECK(link->param("w").data().to_vector<double>() == Param().param("w").data().to_vector<double>());
}

TEST_CASE("loss scaling: double buffering takes a static scale, and refuses a dynamic one") {
  auto world = mn::create_communicator("naive");
  const int size = world->size(), rank = world->rank();
  mn::MultiNodeOptimizerOptions o;
  o.double_buffering = true;
  std::vector<std::vector<double>> results;
  for (const double scale : {1.0, 256.0}) {
    auto link = std::make_shared<Param>();
    auto opt = mn::create_multi_node_optimizer(std::make_shared<optimizers::SGD>(kLr), mn::create_communicator("naive"), o);
    opt->setup(link);
    if (scale != 1.0) opt->loss_scaling(1000, scale);
    for (int u = 1; u <= 4; ++u) {
      link->param("w").set_grad(gradient(rank, size, u, scale));
      opt->update();
    }
    results.push_back(link->param("w").data().to_vector<double>());
  }
  CHECK(results[0] == results[1]);
  CHECK(results[1] == closed_form(size, {2, 3}));  // update 4 stepped with update 3's means
  auto opt = mn::create_multi_node_optimizer(std::make_shared<optimizers::SGD>(kLr), world, o);
  CHECK_THROWS_WITH(opt->loss_scaling(), Catch::Contains("double buffering") && Catch::Contains("static scale"));
}

TEST_CASE("loss scaling: float16 and bfloat16 gradients are averaged in their own dtype and step float32 masters") {
  // Every value on the way has at most 8 significant bits, so bfloat16 holds them all: the
  // gradients times the number of ranks and the scale, each rank's share of the mean (scaled by
  // 1/size in float32, rounded once), their sums, the means and the parameters (multiples of 1/128).
  // They travel in their own dtype, or in float32 where the communicator says so.
  auto world = mn::create_communicator("naive");
  const int size = world->size(), rank = world->rank();
  for (const DType half : {DType::Float16, DType::BFloat16}) {
    for (const Variant& v : kVariants) {
      CAPTURE(dtype_name(half), v.name);
      mn::MultiNodeOptimizerOptions o;
      o.reduction = v.reduction;
      o.reducer.shared_memory = v.shared_memory;
      o.shard_update = v.shard_update;
      auto make = [&] {
        auto link = std::make_shared<Param>();
        link->param("w").set_data(link->param("w").data().astype(half));
        auto opt = mn::create_multi_node_optimizer(std::make_shared<optimizers::SGD>(kLr), communicator(v), o);
        opt->setup(link);
        opt->use_fp32_update();
        opt->loss_scaling({.init_scale = 64, .growth_interval = 1000});
        return std::pair{link, opt};
      };
      auto [link, opt] = make();
      for (int u = 1; u <= 3; ++u) {
        link->param("w").set_grad(gradient(rank, size, u, opt->loss_scale(), u == 2 && rank == 0).astype(half));
        opt->update();
      }
      CHECK(opt->skipped_updates() == 1);  // update 2: rank 0's inf
      CHECK(opt->loss_scale() == 32);
      CHECK(link->param("w").dtype() == half);
      const std::vector<double> expected = closed_form(size, {3});
      CHECK(opt->fp32_param("/w").astype(DType::Float64).to_vector<double>() == expected);
      CHECK(link->param("w").data().astype(DType::Float64).to_vector<double>() == expected);
      // A resumed run (model and optimizer from a snapshot) continues exactly as this one.
      Serializer w = Serializer::writer();
      link->serialize(w);
      opt->serialize(w);
      auto [resumed_link, resumed] = make();
      Serializer r = Serializer::reader(w.entries());
      resumed_link->serialize(r);
      resumed->serialize(r);
      for (int u = 4; u <= 5; ++u)
        for (auto& [l, o2] : {std::pair{link, opt}, std::pair{resumed_link, resumed}}) {
          l->param("w").set_grad(gradient(rank, size, u, o2->loss_scale()).astype(half));
          o2->update();
        }
      CHECK(resumed->t() == opt->t());
      CHECK(resumed->loss_scale() == opt->loss_scale());
      CHECK(resumed->fp32_param("/w").to_vector<float>() == opt->fp32_param("/w").to_vector<float>());
      CHECK(resumed_link->param("w").data().astype(DType::Float64).to_vector<double>() ==
            closed_form(size, {3, 4, 5}));
    }
  }
}
