// seq2seq's data parallelism is exact: N processes with B pairs each report, on average, the
// loss one process reports on the same N*B pairs, and the gradients the multi-node optimizer's
// averaging gives every rank are that process's gradients (the example's loss is a sum over the
// batch / the batch size, so equal shares average to the whole). Dropout is off (config.train
// false) so every rank computes the same function. Run under mpiexec with 1 to 4 processes;
// mpi_main sums the failures over the ranks.
#include <catch2/catch.hpp>

#include <cmath>

#include "../../apps/seq2seq_model.h"

using chainer::Tensor;
namespace S = apps::seq2seq;

namespace {

// Pair I of a fixed corpus: a source of 1 to 5 ids and a target of 1 to 4, ids in [2, 20).
std::pair<Tensor, Tensor> pair_of(int i) {
  std::vector<int32_t> x, y;
  for (int k = 0; k <= i % 5; ++k) x.push_back(int32_t(2 + (7 * i + 3 * k) % 18));
  for (int k = 0; k <= (i + 2) % 4; ++k) y.push_back(int32_t(2 + (5 * i + 11 * k) % 18));
  return {Tensor::from_vector(x), Tensor::from_vector(y)};
}

}  // namespace

TEST_CASE("seq2seq: N ranks of B pairs give one process's loss and gradients on the N*B pairs") {
  auto comm = chainermn::create_communicator("naive");
  const int n = comm->size(), rank = comm->rank(), b = 3;
  chainer::random::seed(7 + uint64_t(rank));  // rank 0's parameters are broadcast below
  auto model = std::make_shared<S::Seq2seq>(2, 20, 20, 8);
  comm->bcast_data(*model);
  chainer::config::TrainScope no_dropout(false);

  std::vector<Tensor> all_x, all_y, my_x, my_y;
  for (int i = 0; i < n * b; ++i) {
    auto [x, y] = pair_of(i);
    all_x.push_back(x);
    all_y.push_back(y);
    if (i / b == rank) my_x.push_back(x), my_y.push_back(y);
  }
  // One process on every pair.
  model->cleargrads();
  const chainer::Variable whole = model->loss(all_x, all_y);
  whole.backward();
  std::map<std::string, std::vector<float>> want;
  for (const auto& [name, p] : model->namedparams()) want[name] = p.grad().to_vector<float>();

  // This rank's share, then the gradients averaged over the ranks.
  model->cleargrads();
  const chainer::Variable mine = model->loss(my_x, my_y);
  mine.backward();
  comm->multi_node_mean_grad(*model);
  const double mean_loss = comm->allreduce_obj(mine.item()) / n;
  CHECK(mean_loss == Approx(whole.item()).epsilon(1e-5));
  for (const auto& [name, p] : model->namedparams()) {
    CAPTURE(name);
    const std::vector<float> got = p.grad().to_vector<float>();
    const std::vector<float>& w = want[name];
    REQUIRE(got.size() == w.size());
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, double(std::fabs(got[i] - w[i])) / (1e-3 + std::fabs(w[i])));
    CHECK(worst < 1e-3);
  }
}
