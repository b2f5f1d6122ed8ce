/// @file
/// create_multi_node_n_step_rnn, as chainermn.links.create_multi_node_n_step_rnn: a stacked RNN
/// (nn/links/n_step_rnn.h) whose initial states come from another process and whose final states
/// go to another, so an encoder on one rank starts a decoder on the next (ChainerMN's seq2seq
/// model-parallel example).
///
/// ```
///   rank 0:  auto enc = create_multi_node_n_step_rnn(std::make_shared<L::NStepLSTM>(2, 8, 8, 0.0),
///                                                    comm, std::nullopt, 1);
///            enc->forward(source).delegate.backward();     // receives dL/dhy, dL/dcy from rank 1
///   rank 1:  auto dec = create_multi_node_n_step_rnn(std::make_shared<L::NStepLSTM>(2, 8, 8, 0.0),
///                                                    comm, 0, std::nullopt);
///            loss(dec->forward(target_in).ys).backward();  // sends dL/dhx, dL/dcx to rank 0
/// ```
///
/// The states travel as one message of one or two tensors (hy; or hy and cy for the LSTMs) on
/// the channel of chainermn::functions' send and recv, with tag 0. ChainerMN 7 sends hy and cy as
/// two messages of the same tag and shape, whose gradients could come back swapped; one message
/// keeps them together. A peer that receives them by hand therefore uses `recv(comm, rank, {}, 0,
/// force_tuple)`, and one that sends them by hand `send({hy, cy}, comm, rank)`.
#pragma once
#include <memory>
#include <optional>
#include <vector>

#include "distributed/communicators/communicator.h"
#include "nn/links/n_step_rnn.h"

namespace chainermn::links {

/// What MultiNodeNStepRNN::forward returns: Chainer's (hy, cy, ys, delegate_variable).
struct MultiNodeNStepRNNResult {
  chainer::Variable hy;               ///< the final hidden states, (layers * directions, len(xs), U)
  chainer::Variable cy;               ///< the final cell states of an LSTM; undefined for the others
  std::vector<chainer::Variable> ys;  ///< the last layer's outputs, in xs's order
  chainer::Variable delegate;         ///< with rank_out: the delegate of the send of the states; else undefined
};

/// A stacked RNN with its states received from rank_in and sent to rank_out, as the link
/// ChainerMN's create_multi_node_n_step_rnn returns.
class MultiNodeNStepRNN : public chainer::Chain {
 public:
  /// Prefer create_multi_node_n_step_rnn, which checks ACTUAL's type.
  MultiNodeNStepRNN(std::shared_ptr<chainer::links::NStepRNNBase> actual, int n_cells, std::shared_ptr<Communicator> comm,
                    std::optional<int> rank_in, std::optional<int> rank_out);

  /// With rank_in: receives the initial states (hx, and cx for LSTMs; shaped (layers *
  /// directions, len(xs), U)) from rank_in, else starts from zeros; runs the stack over XS; with
  /// rank_out: sends the final states to rank_out and returns the send's delegate, which the
  /// caller backpropagates (or ties to its loss with pseudo_connect) so that the gradients of the
  /// states come back.
  MultiNodeNStepRNNResult forward(const std::vector<chainer::Variable>& xs);

  /// The stack itself (registered as the child "actual_rnn", as in ChainerMN), for calls without
  /// communication (a decoder's later steps in translation).
  std::shared_ptr<chainer::links::NStepRNNBase> actual_rnn;

  int n_cells() const { return n_cells_; }  ///< 2 for the LSTMs (h and c), 1 for the others (h).
  std::optional<int> rank_in() const { return rank_in_; }    ///< Where the initial states come from.
  std::optional<int> rank_out() const { return rank_out_; }  ///< Where the final states go.
  const std::shared_ptr<Communicator>& comm() const { return comm_; }  ///< The communicator.

 private:
  int n_cells_;
  std::shared_ptr<Communicator> comm_;
  std::optional<int> rank_in_, rank_out_;
};

/// ACTUAL_RNN (NStepLSTM, NStepBiLSTM, NStepGRU, NStepBiGRU, NStepRNNTanh, NStepRNNReLU,
/// NStepBiRNNTanh or NStepBiRNNReLU) as a MultiNodeNStepRNN over COMM. Throws chainer::Error
/// naming the type for any other link, and naming the rank for a rank_in or rank_out outside COMM
/// or equal to this process's rank.
std::shared_ptr<MultiNodeNStepRNN> create_multi_node_n_step_rnn(std::shared_ptr<chainer::Link> actual_rnn,
                                                                std::shared_ptr<Communicator> comm,
                                                                std::optional<int> rank_in = std::nullopt,
                                                                std::optional<int> rank_out = std::nullopt);

}  // namespace chainermn::links
