// Two multi-node optimizers over one shared graph, as ChainerMN's DCGAN example updates its
// generator and discriminator: the discriminator's backward also reaches the generator's
// parameters (whose reducer hooks fire then), and the generator's loss goes back through the
// discriminator's graph after the discriminator's update. Each optimizer must average exactly
// the gradients of its own loss: N ranks with b examples each equal one process with N*b.
// Run under mpiexec with 1 to 4 processes; checks between collectives use CHECK, never REQUIRE.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "core/util/random.h"
#include "distributed/communicators/communicator.h"
#include "distributed/optimizers/multi_node_optimizer.h"
#include "distributed/reducer/gradient_reducer.h"
#include "nn/functions.h"
#include "nn/initializers.h"
#include "nn/links/linear.h"
#include "nn/optimizer_hooks.h"
#include "nn/optimizers/adam.h"

using namespace chainer;
namespace F = chainer::functions;
namespace L = chainer::links;
namespace mn = chainermn;

namespace {

constexpr int64_t kNoise = 2, kHidden = 5, kData = 3;

struct Gen : Chain {
  std::shared_ptr<L::Linear> l0, l1;
  Gen() {
    l0 = add_link("l0", std::make_shared<L::Linear>(kNoise, kHidden, false,
                                                     [](const Shape& s) { return initializers::normal(s, 0.5); }));
    l1 = add_link("l1", std::make_shared<L::Linear>(kHidden, kData));
  }
  Variable forward(const Variable& z) override { return F::sigmoid((*l1)(F::relu((*l0)(z)))); }
};

struct Dis : Chain {
  std::shared_ptr<L::Linear> l0, l1;
  Dis() {
    l0 = add_link("l0", std::make_shared<L::Linear>(kData, kHidden));
    l1 = add_link("l1", std::make_shared<L::Linear>(kHidden, 1));
  }
  Variable forward(const Variable& x) override { return (*l1)(F::leaky_relu((*l0)(x))); }
};

// updater.py's losses.
Variable loss_dis(const Variable& y_fake, const Variable& y_real) {
  return F::mean(F::softplus(-y_real)) + F::mean(F::softplus(y_fake));
}
Variable loss_gen(const Variable& y_fake) { return F::mean(F::softplus(-y_fake)); }

// The example's optimizer, with a large alpha so that a step shows in the next backward.
std::shared_ptr<Optimizer> adam(bool weight_decay = true) {
  auto opt = std::make_shared<optimizers::Adam>(0.05, 0.5);
  if (weight_decay) opt->add_hook(std::make_shared<optimizer_hooks::WeightDecay>(0.0001));
  return opt;
}

// ||a - b|| / ||b||.
double relative(const Tensor& a, const Tensor& b) {
  const auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  if (va.size() != vb.size()) return INFINITY;
  double diff = 0, norm = 0;
  for (size_t i = 0; i < va.size(); ++i) diff += (va[i] - vb[i]) * (va[i] - vb[i]), norm += vb[i] * vb[i];
  return std::sqrt(diff / std::max(norm, 1e-30));
}

// The worst relative difference of the parameters (DATA) or gradients over A and B.
double worst(const Link& a, const Link& b, bool data) {
  const auto pa = a.namedparams(), pb = b.namedparams();
  double w = pa.size() == pb.size() ? 0.0 : INFINITY;
  for (size_t i = 0; i < pa.size() && i < pb.size(); ++i)
    w = std::max(w, data ? relative(pa[i].second.data(), pb[i].second.data())
                         : relative(pa[i].second.grad(), pb[i].second.grad()));
  return w;
}

struct Variant {
  std::string comm = "naive";
  mn::Reduction reduction = mn::Reduction::Bucketed;
  bool shard_update = true;
};

}  // namespace

TEST_CASE("gan_optimizers: the generator's and the discriminator's multi-node optimizers each average "
          "the gradients of their own loss over one shared graph, as one process with every example") {
  std::vector<std::pair<std::string, Variant>> cases = {
      {"bucketed", {}},
      {"bucketed, no shared update", {"naive", mn::Reduction::Bucketed, false}},
      {"communicator reduction", {"naive", mn::Reduction::Communicator, true}},
      {"flat", {"flat", mn::Reduction::Bucketed, true}},
  };
  // Without the eager binding of the shared update (SharedUpdate::bind_parameters) the first
  // step's generator gradients went through the discriminator's parameters before its step.
  for (const auto& [name, v] : cases) {
    CAPTURE(name);
    auto comm = mn::create_communicator(v.comm);
    const int n = comm->size(), rank = comm->rank();
    constexpr int64_t b = 4;
    constexpr int k = 4;  // iterations after the broadcast
    chainer::Generator data_gen(11);
    const Tensor real = random::uniform({int64_t(n) * b * k, kData}, 0.0, 1.0, DType::Float32, &data_gen);
    const Tensor noise = random::normal({int64_t(n) * b * k, kNoise}, 0.0, 1.0, DType::Float32, &data_gen);

    mn::MultiNodeOptimizerOptions options;
    options.reduction = v.reduction;
    options.shard_update = v.shard_update;
    random::seed(100 + uint64_t(rank));  // different on every rank: the broadcast makes them rank 0's
    auto gen = std::make_shared<Gen>();
    auto dis = std::make_shared<Dis>();
    auto gen_opt = mn::create_multi_node_optimizer(adam(), comm, options);
    auto dis_opt = mn::create_multi_node_optimizer(adam(), comm, options);
    gen_opt->setup(gen);
    dis_opt->setup(dis);
    gen_opt->update();  // the broadcasts
    dis_opt->update();

    random::seed(100);
    auto ref_gen = std::make_shared<Gen>();
    auto ref_dis = std::make_shared<Dis>();
    auto ref_gen_opt = adam(), ref_dis_opt = adam();
    ref_gen_opt->setup(ref_gen);
    ref_dis_opt->setup(ref_dis);

    // updater.py's update_core over rows [start, start + len).
    const auto step = [](Chain& g, Chain& d, Optimizer& g_opt, Optimizer& d_opt, const Tensor& x, const Tensor& z) {
      const Variable y_real = d(Variable(x));
      const Variable y_fake = d(g(Variable(z)));
      d_opt.update([&] { return loss_dis(y_fake, y_real); });
      g_opt.update([&] { return loss_gen(y_fake); });
    };
    double grads = 0, params = 0;
    for (int it = 0; it < k; ++it) {
      const int64_t all = int64_t(it) * n * b, mine = all + int64_t(rank) * b;
      step(*gen, *dis, *gen_opt, *dis_opt, real.narrow(0, mine, b).contiguous(), noise.narrow(0, mine, b).contiguous());
      step(*ref_gen, *ref_dis, *ref_gen_opt, *ref_dis_opt, real.narrow(0, all, n * b).contiguous(),
           noise.narrow(0, all, n * b).contiguous());
      // The generator's gradients are those its own update averaged (its loss's); the
      // discriminator's now also hold the generator loss's backward, in both runs alike.
      grads = std::max(grads, worst(*gen, *ref_gen, false));
      params = std::max({params, worst(*gen, *ref_gen, true), worst(*dis, *ref_dis, true)});
    }
    // Each reducer summed its own loss's gradients once per update: the other optimizer's
    // backward through its parameters started nothing (Optimizer::backpropagating_target).
    for (const auto* opt : {gen_opt.get(), dis_opt.get()})
      if (const mn::GradientReducer* r = dynamic_cast<const mn::MultiNodeOptimizer&>(*opt).reducer()) {
        CHECK(r->stats().steps == k);
        CHECK(r->stats().restarts == 0);
      }
    CHECK(gen_opt->t() == k);
    CHECK(dis_opt->t() == k);
    CHECK(grads < 1e-5);
    CHECK(params < 1e-5);
  }
}
