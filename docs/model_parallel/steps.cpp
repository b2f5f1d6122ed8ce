// The model-parallel guide's four steps (docs/model_parallel.md) on synthetic data: pipelines of
// two processes (a first stage on even ranks, a second on odd ranks) trained data-parallel
// across pipelines, written out with send/recv, then the same with MultiNodeChainList, and the
// delegate tied in with pseudo_connect. Rank 0 prints the loss before and after; the program
// fails if training did not lower it.
//   mpiexec -n 2 build/docs/model_parallel/steps      (any even number of processes)
#include <chainer.h>
#include <chainermn.h>

#include <cstdio>

namespace F = chainer::functions;
namespace L = chainer::links;
namespace mnf = chainermn::functions;
using chainer::Tensor;
using chainer::Variable;

namespace {

// N examples of 8 features, labelled by which of 4 fixed directions they point along most.
chainer::datasets::DatasetPtr make_dataset(int64_t n) {
  chainer::Generator gen(7);
  const Tensor x = chainer::random::normal({n, 8}, 0, 1, chainer::DType::Float32, &gen);
  const Tensor w = chainer::random::normal({8, 4}, 0, 1, chainer::DType::Float32, &gen);
  return std::make_shared<chainer::datasets::TupleDataset>(
      std::vector<Tensor>{x, chainer::ops::argmax(chainer::ops::matmul(x, w), 1)});
}

// One step of the hand-written pipeline; returns the loss on the first stage, the delegate on
// the second (what backward starts from).
Variable pipeline_step(const std::shared_ptr<chainermn::Communicator>& pair, L::Linear& layer,
                       const std::vector<Variable>& batch) {
  // [step3-send-recv]
  if (pair->rank() == 0) {  // the first stage: x -> h, and the logits come back
    Variable h = F::sigmoid(layer(batch[0]));
    Variable phi = mnf::send(h, pair, /*rank=*/1);
    Variable y = mnf::recv(pair, /*rank=*/1, /*delegate=*/phi);
    return F::softmax_cross_entropy(y, batch[1]);  // backward runs through y, then phi, then h
  }
  Variable h = mnf::recv(pair, /*rank=*/0);  // the second stage: h -> logits
  return mnf::send(layer(h), pair, /*rank=*/0);  // backward() of this delegate is its backward
  // [end]
}

// The same pipeline, but the first stage also adds a penalty on h after sending it: the
// delegate must be tied to what it goes on computing, or backward would never receive dL/dh.
Variable penalized_first_stage(const std::shared_ptr<chainermn::Communicator>& pair, L::Linear& layer,
                               const std::vector<Variable>& batch) {
  // [step4-pseudo-connect]
  Variable h = F::sigmoid(layer(batch[0]));
  Variable phi = mnf::send(h, pair, 1);
  Variable penalty = F::mul(F::sum(F::mul(h, h)), 1e-4);
  Variable y = mnf::recv(pair, 1);                    // no delegate here...
  Variable loss = F::add(F::softmax_cross_entropy(y, batch[1]), penalty);
  return mnf::pseudo_connect(phi, loss);             // ...so it is tied to the loss
  // [end]
}

}  // namespace

int main(int argc, char** argv) {
  return chainermn::run_main(argc, argv, [] {
    // [step1-split]
    auto comm = chainermn::create_communicator("naive");
    if (comm->size() % 2 != 0) throw chainer::Error("steps: run on an even number of processes");
    // Pipelines of two processes: ranks 2k and 2k+1 (rank 0 and 1 of `pair`).
    auto pair = comm->split(/*color=*/comm->rank() / 2, /*key=*/comm->rank());
    // The same stage of every pipeline: their gradients are averaged over `stage`.
    auto stage = comm->split(/*color=*/comm->rank() % 2, /*key=*/comm->rank());
    // [end]
    const bool first = pair->rank() == 0;

    // [step2-datasets]
    // Rank 0 holds the data and scatters it over the first stages; rank 1 scatters an empty
    // dataset of the same length over the second stages; both stages of a pipeline then iterate
    // in the same order.
    chainer::datasets::DatasetPtr train;
    if (comm->rank() == 0) train = make_dataset(1024);
    if (comm->rank() == 1) train = chainermn::create_empty_dataset(1024);
    train = chainermn::scatter_dataset(train, stage, /*root=*/0, /*shuffle=*/true);
    auto iter = chainermn::create_synchronized_iterator(
        std::make_shared<chainer::iterators::SerialIterator>(train, 32), pair);
    // [end]

    chainer::random::seed(uint64_t(comm->rank()));
    auto layer = first ? std::make_shared<L::Linear>(8, 16) : std::make_shared<L::Linear>(16, 4);
    auto optimizer =
        chainermn::create_multi_node_optimizer(std::make_shared<chainer::optimizers::Adam>(0.01), stage);
    optimizer->setup(layer);

    // The same model as a MultiNodeChainList, for the forward pass only (its own parameters).
    // [step3-chain-list]
    auto model = std::make_shared<chainermn::links::MultiNodeChainList>(pair);
    if (first) {
      model->add_link(std::make_shared<L::Linear>(8, 16), /*rank_in=*/std::nullopt, /*rank_out=*/1);
      model->add_link(std::make_shared<L::Linear>(4, 4), /*rank_in=*/1, /*rank_out=*/std::nullopt);
    } else {
      model->add_link(std::make_shared<L::Linear>(16, 4), /*rank_in=*/0, /*rank_out=*/0);
    }
    // [end]

    double first_loss = 0, last_loss = 0;
    for (int step = 0; step < 200; ++step) {
      std::vector<Variable> batch;
      for (const Tensor& t : iter->next_batch()) batch.emplace_back(t);
      const bool penalized = step % 2 == 1;
      optimizer->update([&] {
        return penalized && first ? penalized_first_stage(pair, *layer, batch) : pipeline_step(pair, *layer, batch);
      });
      if (first && !penalized) {
        chainer::NoBackpropMode no_graph;
        const double loss = pipeline_step(pair, *layer, batch).item();
        (step == 0 ? first_loss : last_loss) = loss;
      } else if (!penalized) {
        chainer::NoBackpropMode no_graph;
        pipeline_step(pair, *layer, batch);
      }
      {
        chainer::NoBackpropMode no_graph;
        model->forward_args(first ? std::vector<Variable>{batch[0]} : std::vector<Variable>{});
      }
    }
    const double mean_first = stage->allreduce_obj(first ? first_loss : 0.0) / (comm->size() / 2);
    const double mean_last = stage->allreduce_obj(first ? last_loss : 0.0) / (comm->size() / 2);
    if (comm->rank() == 0) std::printf("loss of the first stages: %.4f -> %.4f\n", mean_first, mean_last);
    if (first && !(mean_last < 0.5 * mean_first))
      throw chainer::Error(chainer::str("steps: training did not halve the loss (", mean_first, " -> ", mean_last, ")"));
    return 0;
  });
}
