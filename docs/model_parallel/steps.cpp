// The model-parallel guide's four steps (docs/model_parallel.md) on synthetic data: pipelines of
// two processes (a first stage on even ranks, a second on odd ranks) trained data-parallel
// across pipelines, written out with send/recv, then the same with MultiNodeChainList, and the
// delegate tied in with pseudo_connect; then a sequence-to-sequence pipeline (an LSTM encoder
// on the first stage whose final states start the decoder on the second, ChainerMN's seq2seq
// example) learning to copy short sequences, its states sent by create_multi_node_n_step_rnn
// and, every other step, by hand as one message of two variables. Rank 0 prints the losses
// before and after; the program fails if training did not lower them.
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

// ---- Sequence to sequence ----

constexpr int64_t kVocab = 6;  // id 0 is the end of a sequence

// A batch of the copy task, the same on both stages of a pipeline (drawn from SEED): the encoder
// reads each source; the decoder reads eos + source and must predict source + eos.
struct Sequences {
  std::vector<Tensor> sources, targets_in;
  Tensor targets_out;
};
Sequences make_sequences(uint64_t seed) {
  chainer::Generator gen(seed);
  const Tensor lengths = chainer::random::uniform({8}, 2, 5, chainer::DType::Float32, &gen);
  Sequences s;
  std::vector<int32_t> out;
  for (float length : lengths.to_vector<float>()) {
    const Tensor draws = chainer::random::uniform({int64_t(length)}, 1, double(kVocab), chainer::DType::Float32, &gen);
    std::vector<int32_t> ids, in{0};
    for (float d : draws.to_vector<float>()) ids.push_back(int32_t(d));
    in.insert(in.end(), ids.begin(), ids.end());
    out.insert(out.end(), ids.begin(), ids.end());
    out.push_back(0);
    s.sources.push_back(Tensor::from_vector(ids));
    s.targets_in.push_back(Tensor::from_vector(in));
  }
  s.targets_out = Tensor::from_vector(out);
  return s;
}

// One stage of the model: an embedding and an LSTM whose states come from, or go to, the other
// stage; the decoder also has the output layer.
class Seq2SeqStage : public chainer::Chain {
 public:
  explicit Seq2SeqStage(const std::shared_ptr<chainermn::Communicator>& pair) {
    embed = add_link("embed", std::make_shared<L::EmbedID>(kVocab, 8));
    rnn = std::make_shared<L::NStepLSTM>(/*n_layers=*/1, /*in_size=*/8, /*out_size=*/16, /*dropout=*/0.0);
    // [step3-multi-node-rnn]
    if (pair->rank() == 0)  // the encoder sends its final states (hy and cy) to rank 1
      mn_rnn = chainermn::links::create_multi_node_n_step_rnn(rnn, pair, /*rank_in=*/std::nullopt, /*rank_out=*/1);
    else                    // the decoder receives them from rank 0 as its initial states
      mn_rnn = chainermn::links::create_multi_node_n_step_rnn(rnn, pair, /*rank_in=*/0, /*rank_out=*/std::nullopt);
    // [end]
    add_link("mn_rnn", mn_rnn);  // its child "actual_rnn" is rnn
    if (pair->rank() == 1) out = add_link("out", std::make_shared<L::Linear>(16, kVocab));
  }
  std::vector<Variable> embed_all(const std::vector<Tensor>& seqs) {
    std::vector<Variable> xs;
    for (const Tensor& ids : seqs) xs.push_back((*embed)(Variable(ids)));
    return xs;
  }
  std::shared_ptr<L::EmbedID> embed;
  std::shared_ptr<L::NStepLSTM> rnn;
  std::shared_ptr<chainermn::links::MultiNodeNStepRNN> mn_rnn;
  std::shared_ptr<L::Linear> out;
};

// One step of the copy task; the loss on the decoder, the delegate on the encoder.
Variable seq2seq_step(const std::shared_ptr<chainermn::Communicator>& pair, Seq2SeqStage& m, const Sequences& s) {
  // [step3-seq2seq]
  if (pair->rank() == 0)  // the encoder: backward starts from the delegate of the states' send
    return m.mn_rnn->forward(m.embed_all(s.sources)).delegate;
  std::vector<Variable> ys = m.mn_rnn->forward(m.embed_all(s.targets_in)).ys;  // the decoder
  return F::softmax_cross_entropy((*m.out)(F::concat(ys, 0)), Variable(s.targets_out));
  // [end]
}

// The same step with the states sent by hand: two variables in one message.
Variable seq2seq_step_by_hand(const std::shared_ptr<chainermn::Communicator>& pair, Seq2SeqStage& m,
                              const Sequences& s) {
  // [step3-tuple]
  if (pair->rank() == 0) {
    chainer::functions::NStepLSTMResult enc = m.rnn->forward({}, {}, m.embed_all(s.sources));
    return mnf::send({enc.hy, enc.cy}, pair, /*rank=*/1);  // one delegate for both
  }
  std::vector<Variable> hc = mnf::recv(pair, /*rank=*/0, /*delegate=*/{}, /*tag=*/0, mnf::force_tuple);
  chainer::functions::NStepLSTMResult dec = m.rnn->forward(hc[0], hc[1], m.embed_all(s.targets_in));
  // [end]
  return F::softmax_cross_entropy((*m.out)(F::concat(dec.ys, 0)), Variable(s.targets_out));
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

    // The sequence-to-sequence pipeline: each pipeline draws its own batches, alike on both stages.
    auto seq2seq = std::make_shared<Seq2SeqStage>(pair);
    auto seq2seq_optimizer =
        chainermn::create_multi_node_optimizer(std::make_shared<chainer::optimizers::Adam>(0.02), stage);
    seq2seq_optimizer->setup(seq2seq);
    double seq_first = 0, seq_last = 0;
    const int seq_steps = 150;
    for (int step = 0; step < seq_steps; ++step) {
      const Sequences s = make_sequences(uint64_t(1000 * (comm->rank() / 2) + step));
      seq2seq_optimizer->update([&] {
        Variable v = step % 2 == 1 ? seq2seq_step_by_hand(pair, *seq2seq, s) : seq2seq_step(pair, *seq2seq, s);
        if (!first && step == 0) seq_first = v.item();
        if (!first && step >= seq_steps - 10) seq_last += v.item() / 10;  // the mean of the last ten
        return v;
      });
    }
    const double mean_seq_first = comm->allreduce_obj(first ? 0.0 : seq_first) / (comm->size() / 2);
    const double mean_seq_last = comm->allreduce_obj(first ? 0.0 : seq_last) / (comm->size() / 2);
    if (comm->rank() == 0)
      std::printf("loss of the decoders: %.4f -> %.4f\n", mean_seq_first, mean_seq_last);
    if (!(mean_seq_last < 0.5 * mean_seq_first))
      throw chainer::Error(chainer::str("steps: the decoders' loss did not halve (", mean_seq_first, " -> ",
                                        mean_seq_last, ")"));
    return 0;
  });
}
