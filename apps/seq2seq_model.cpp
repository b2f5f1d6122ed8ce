#include "seq2seq_model.h"

#include <algorithm>
#include <numeric>

namespace apps::seq2seq {

namespace F = chainer::functions;
namespace L = chainer::links;
using chainer::Tensor;
using chainer::Variable;

namespace {

// SEQS with each id vector changed by EDIT on the host, back on its device. Ids are small and
// not differentiated; the example's x[::-1] and F.concat([eos, y]) do as much per sequence.
std::vector<Tensor> edit_each(const std::vector<Tensor>& seqs, const std::function<void(std::vector<int32_t>&)>& edit) {
  std::vector<Tensor> out;
  out.reserve(seqs.size());
  for (const Tensor& s : seqs) {
    std::vector<int32_t> ids = s.to_vector<int32_t>();
    edit(ids);
    out.push_back(Tensor::from_vector(ids).to(s.device()));
  }
  return out;
}

}  // namespace

std::vector<Variable> sequence_embed(L::EmbedID& embed, const std::vector<Tensor>& xs) {
  std::vector<Variable> parts;
  std::vector<int64_t> sections;
  int64_t at = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    parts.emplace_back(xs[i]);
    at += xs[i].size(0);
    if (i + 1 < xs.size()) sections.push_back(at);
  }
  return F::split_axis(embed(F::concat(parts, 0)), sections, 0);
}

std::vector<Tensor> reversed(const std::vector<Tensor>& xs) {
  return edit_each(xs, [](std::vector<int32_t>& ids) { std::reverse(ids.begin(), ids.end()); });
}
std::vector<Tensor> with_eos_first(const std::vector<Tensor>& ys) {
  return edit_each(ys, [](std::vector<int32_t>& ids) { ids.insert(ids.begin(), chainer::datasets::kEosId); });
}
std::vector<Tensor> with_eos_last(const std::vector<Tensor>& ys) {
  return edit_each(ys, [](std::vector<int32_t>& ids) { ids.push_back(chainer::datasets::kEosId); });
}

Variable decoder_loss(L::Linear& W, const std::vector<Variable>& os, const std::vector<Tensor>& ys_out, int64_t batch,
                      const void* observer) {
  // One matrix product over every step of every sequence, as the example.
  std::vector<Variable> targets;
  for (const Tensor& y : ys_out) targets.emplace_back(y);
  const Variable concat_ys_out = F::concat(targets, 0);
  const Variable loss =
      F::sum(F::softmax_cross_entropy(W(F::concat(os, 0)), concat_ys_out, true, -1, "no")) / double(batch);
  const int64_t n_words = concat_ys_out.shape()[0];
  const Variable perp = F::exp(loss.detach() * (double(batch) / double(n_words)));
  chainer::report(std::map<std::string, Variable>{{"loss", loss}, {"perp", perp}}, observer);
  return loss;
}

std::vector<std::vector<int32_t>> greedy_decode(int64_t batch, int64_t max_length, chainer::Device device,
                                                const std::function<Variable(const Variable&)>& step) {
  std::vector<std::vector<int32_t>> out(static_cast<size_t>(batch));
  std::vector<int32_t> ids(size_t(batch), chainer::datasets::kEosId);
  std::vector<bool> done(size_t(batch), false);
  for (int64_t t = 0; t < max_length; ++t) {
    const Variable logits = step(Variable(Tensor::from_vector(ids).to(device)));
    ids = F::argmax(logits, 1).data().to_vector<int32_t>();
    bool all_done = true;
    for (size_t i = 0; i < size_t(batch); ++i) {
      if (!done[i]) {
        if (ids[i] == chainer::datasets::kEosId) done[i] = true;
        else out[i].push_back(ids[i]);
      }
      all_done = all_done && done[i];
    }
    if (all_done) break;
  }
  return out;
}

Seq2seq::Seq2seq(int64_t n_layers, int64_t n_source_vocab, int64_t n_target_vocab, int64_t n_units) {
  embed_x = add_link("embed_x", std::make_shared<L::EmbedID>(n_source_vocab, n_units));
  embed_y = add_link("embed_y", std::make_shared<L::EmbedID>(n_target_vocab, n_units));
  encoder = add_link("encoder", std::make_shared<L::NStepLSTM>(n_layers, n_units, n_units, 0.1));
  decoder = add_link("decoder", std::make_shared<L::NStepLSTM>(n_layers, n_units, n_units, 0.1));
  W = add_link("W", std::make_shared<L::Linear>(n_units, n_target_vocab));
}

Variable Seq2seq::loss(const std::vector<Tensor>& xs, const std::vector<Tensor>& ys) {
  const std::vector<Variable> exs = sequence_embed(*embed_x, reversed(xs));
  const std::vector<Variable> eys = sequence_embed(*embed_y, with_eos_first(ys));
  // Undefined states are zeros: the encoder starts from nothing, the decoder from its end.
  const auto encoded = encoder->forward(Variable(), Variable(), exs);
  const auto decoded = decoder->forward(encoded.hy, encoded.cy, eys);
  return decoder_loss(*W, decoded.ys, with_eos_last(ys), int64_t(xs.size()), this);
}

std::vector<std::vector<int32_t>> Seq2seq::translate(const std::vector<Tensor>& xs, int64_t max_length) {
  chainer::NoBackpropMode no_backprop;
  chainer::config::TrainScope eval_mode(false);
  const int64_t batch = int64_t(xs.size());
  const auto encoded = encoder->forward(Variable(), Variable(), sequence_embed(*embed_x, reversed(xs)));
  Variable h = encoded.hy, c = encoded.cy;
  return greedy_decode(batch, max_length, device(), [&](const Variable& ids) {
    auto decoded = decoder->forward(h, c, F::split_axis((*embed_y)(ids), batch, 0));
    h = decoded.hy;
    c = decoded.cy;
    return (*W)(F::concat(decoded.ys, 0));
  });
}

Encoder::Encoder(const std::shared_ptr<chainermn::Communicator>& comm, int64_t n_layers, int64_t n_source_vocab,
                 int64_t n_units) {
  embed_x = add_link("embed_x", std::make_shared<L::EmbedID>(n_source_vocab, n_units));
  // The decoder's LSTM, on rank 1, starts from this one's final states.
  mn_encoder = add_link("mn_encoder", chainermn::links::create_multi_node_n_step_rnn(
                                          std::make_shared<L::NStepLSTM>(n_layers, n_units, n_units, 0.1), comm,
                                          std::nullopt, 1));
}

Variable Encoder::loss(const std::vector<Tensor>& xs) {
  return mn_encoder->forward(sequence_embed(*embed_x, reversed(xs))).delegate;
}

void Encoder::translate(const std::vector<Tensor>& xs) {
  chainer::NoBackpropMode no_backprop;
  chainer::config::TrainScope eval_mode(false);
  mn_encoder->forward(sequence_embed(*embed_x, reversed(xs)));
}

Decoder::Decoder(const std::shared_ptr<chainermn::Communicator>& comm, int64_t n_layers, int64_t n_target_vocab,
                 int64_t n_units) {
  embed_y = add_link("embed_y", std::make_shared<L::EmbedID>(n_target_vocab, n_units));
  // Its initial states come from the encoder's LSTM on rank 0.
  mn_decoder = add_link("mn_decoder", chainermn::links::create_multi_node_n_step_rnn(
                                          std::make_shared<L::NStepLSTM>(n_layers, n_units, n_units, 0.1), comm, 0,
                                          std::nullopt));
  W = add_link("W", std::make_shared<L::Linear>(n_units, n_target_vocab));
}

Variable Decoder::loss(const std::vector<Tensor>& ys) {
  const auto decoded = mn_decoder->forward(sequence_embed(*embed_y, with_eos_first(ys)));
  return decoder_loss(*W, decoded.ys, with_eos_last(ys), int64_t(ys.size()), this);
}

std::vector<std::vector<int32_t>> Decoder::translate(int64_t batch, int64_t max_length) {
  chainer::NoBackpropMode no_backprop;
  chainer::config::TrainScope eval_mode(false);
  auto& lstm = static_cast<L::NStepLSTMBase&>(*mn_decoder->actual_rnn);
  Variable h, c;
  bool first = true;
  return greedy_decode(batch, max_length, device(), [&](const Variable& ids) {
    const std::vector<Variable> eys = F::split_axis((*embed_y)(ids), batch, 0);
    std::vector<Variable> ys;
    if (first) {  // the states come from the encoder
      auto decoded = mn_decoder->forward(eys);
      h = decoded.hy, c = decoded.cy, ys = decoded.ys;
      first = false;
    } else {  // later steps need no communication: the stack itself
      auto decoded = lstm.forward(h, c, eys);
      h = decoded.hy, c = decoded.cy, ys = decoded.ys;
    }
    return (*W)(F::concat(ys, 0));
  });
}

}  // namespace apps::seq2seq
