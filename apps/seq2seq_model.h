// The seq2seq examples' models: seq2seq.py's Seq2seq (embeddings, an NStepLSTM encoder and
// decoder, a linear output layer) whole, for data parallelism, and seq2seq_mp1.py's Encoder and
// Decoder, the same parts cut between two processes (the encoder's final states travel to the
// decoder through create_multi_node_n_step_rnn). The loss, perplexity and greedy translation
// are the example's: sources reversed, the decoder reads [<eos>] + y and predicts y + [<eos>],
// loss = the summed cross entropy / batch, perp = exp(loss * batch / target tokens).
#pragma once
#include <chainer.h>
#include <chainermn.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace apps::seq2seq {

// seq2seq.py's sequence_embed: EMBED of every sequence of XS (int32 ids), in one lookup.
std::vector<chainer::Variable> sequence_embed(chainer::links::EmbedID& embed, const std::vector<chainer::Tensor>& xs);
// XS with each sequence reversed (the example feeds the encoder its sources backwards).
std::vector<chainer::Tensor> reversed(const std::vector<chainer::Tensor>& xs);
// The decoder's input and target of each target sequence Y: [<eos>] + Y and Y + [<eos>].
std::vector<chainer::Tensor> with_eos_first(const std::vector<chainer::Tensor>& ys);
std::vector<chainer::Tensor> with_eos_last(const std::vector<chainer::Tensor>& ys);

// The example's loss of decoder outputs OS against YS_OUT over a batch of BATCH sequences,
// reported as "loss" and "perp" for OBSERVER.
chainer::Variable decoder_loss(chainer::links::Linear& W, const std::vector<chainer::Variable>& os,
                               const std::vector<chainer::Tensor>& ys_out, int64_t batch, const void* observer);

// Greedy decoding from the states (H, C) for BATCH sequences: STEP(ids) runs one decoder step
// on the previous ids ((batch,) int32; <eos> first) and returns the logits (batch, vocab). At
// most MAX_LENGTH steps, fewer once every sequence has produced <eos> (what follows it is cut
// anyway). The hypotheses without <eos>.
std::vector<std::vector<int32_t>> greedy_decode(int64_t batch, int64_t max_length, chainer::Device device,
                                                const std::function<chainer::Variable(const chainer::Variable&)>& step);

// seq2seq.py's Seq2seq.
class Seq2seq : public chainer::Chain {
 public:
  Seq2seq(int64_t n_layers, int64_t n_source_vocab, int64_t n_target_vocab, int64_t n_units);
  // The loss of translating XS into YS (lists of int32 id sequences), reported as main/loss and
  // main/perp.
  chainer::Variable loss(const std::vector<chainer::Tensor>& xs, const std::vector<chainer::Tensor>& ys);
  // The greedy translations of XS, without <eos>.
  std::vector<std::vector<int32_t>> translate(const std::vector<chainer::Tensor>& xs, int64_t max_length = 100);

  std::shared_ptr<chainer::links::EmbedID> embed_x, embed_y;
  std::shared_ptr<chainer::links::NStepLSTM> encoder, decoder;
  std::shared_ptr<chainer::links::Linear> W;
};

// seq2seq_mp1.py's Encoder, on rank 0: sends its final states to rank 1.
class Encoder : public chainer::Chain {
 public:
  Encoder(const std::shared_ptr<chainermn::Communicator>& comm, int64_t n_layers, int64_t n_source_vocab,
          int64_t n_units);
  // Encodes XS and sends the states; returns the send's delegate variable (the "loss" whose
  // backward receives the states' gradients from the decoder).
  chainer::Variable loss(const std::vector<chainer::Tensor>& xs);
  // Encodes XS and sends the states to the decoder, which translates; nothing comes back.
  void translate(const std::vector<chainer::Tensor>& xs);

  std::shared_ptr<chainer::links::EmbedID> embed_x;
  std::shared_ptr<chainermn::links::MultiNodeNStepRNN> mn_encoder;
};

// seq2seq_mp1.py's Decoder, on rank 1: starts from the states rank 0 sends.
class Decoder : public chainer::Chain {
 public:
  Decoder(const std::shared_ptr<chainermn::Communicator>& comm, int64_t n_layers, int64_t n_target_vocab,
          int64_t n_units);
  // The loss of decoding YS, reported as main/loss and main/perp.
  chainer::Variable loss(const std::vector<chainer::Tensor>& ys);
  // The greedy translations of a batch of BATCH sources the encoder is encoding.
  std::vector<std::vector<int32_t>> translate(int64_t batch, int64_t max_length = 100);

  std::shared_ptr<chainer::links::EmbedID> embed_y;
  std::shared_ptr<chainermn::links::MultiNodeNStepRNN> mn_decoder;
  std::shared_ptr<chainer::links::Linear> W;
};

}  // namespace apps::seq2seq
