/// @file
/// Stacked recurrent links over lists of variable-length sequences, as chainer.links.NStepLSTM,
/// NStepGRU, NStepRNNTanh, NStepRNNReLU and their NStepBi* twins: the parameters of
/// functions::n_step_lstm, n_step_gru and n_step_rnn, one child link per layer and direction
/// ("0", "1", ... in Chainer's order: layer by layer, forward before backward) holding w0, w1, ...
/// and b0, b1, ... (8 of each for LSTMs, 6 for GRUs, 2 for plain RNNs), so snapshots interchange
/// with Chainer's. The weights are drawn from LeCunNormal (standard deviation sqrt(1 / fan-in),
/// Chainer's default), the biases are zero.
///
/// forward takes the sequences in any order and of any lengths (xs[i] of shape (L_i, in_size)):
/// the link sorts them longest first, transposes them into steps (transpose_sequence), runs the
/// stack and gives the outputs and states back in xs's order.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "nn/functions/n_step_rnn.h"
#include "nn/link.h"

namespace chainer::links {

/// What the stacks share: the parameters and the sorting around the functions.
class NStepRNNBase : public Chain {
 public:
  /// The number of layers.
  int64_t n_layers() const { return n_layers_; }
  /// 2 for the bidirectional stacks, else 1.
  int64_t directions() const { return directions_; }
  /// The number of units U of every layer and direction.
  int64_t out_size() const { return out_size_; }
  /// The dropout ratio applied to the inputs of every layer but the first, in training.
  double dropout() const { return dropout_; }

 protected:
  /// NAME (in messages): N_LAYERS layers of OUT_SIZE units in DIRECTIONS directions over inputs
  /// of IN_SIZE features, N_WEIGHTS weights and biases per layer and direction.
  NStepRNNBase(const char* name, int n_weights, int64_t n_layers, int64_t in_size, int64_t out_size, double dropout,
               int64_t directions);
  /// The stack function on the parameters.
  using Run = std::function<functions::NStepLSTMResult(
      const Variable& hx, const Variable& cx, const std::vector<std::vector<Variable>>& ws,
      const std::vector<std::vector<Variable>>& bs, const std::vector<Variable>& steps)>;
  /// RUN over XS sorted and transposed, from HX and CX (either undefined), with the results in XS's order.
  functions::NStepLSTMResult call(const Variable& hx, const Variable& cx, const std::vector<Variable>& xs,
                                  const Run& run);
  /// The name in messages.
  const char* name() const { return name_; }

 private:
  const char* name_;
  int n_weights_;
  std::vector<std::shared_ptr<Link>> layers_;  // per layer and direction, the children "0", "1", ...
  int64_t n_layers_, out_size_, directions_;
  double dropout_;
};

/// What NStepLSTM and NStepBiLSTM share.
class NStepLSTMBase : public NStepRNNBase {
 public:
  /// Runs the stack over XS from HX and CX ((layers * directions, len(xs), U); undefined:
  /// zeros). Returns Chainer's (hy, cy, ys) in XS's order, ys[i] of shape (L_i, U * directions).
  functions::NStepLSTMResult forward(const Variable& hx, const Variable& cx, const std::vector<Variable>& xs);

 protected:
  /// As NStepRNNBase's, with an LSTM's 8 weights.
  NStepLSTMBase(const char* name, int64_t n_layers, int64_t in_size, int64_t out_size, double dropout,
                int64_t directions)
      : NStepRNNBase(name, 8, n_layers, in_size, out_size, dropout, directions) {}
};

/// A stack of unidirectional LSTM layers (Chainer's `L.NStepLSTM`).
class NStepLSTM : public NStepLSTMBase {
 public:
  /// N_LAYERS layers from IN_SIZE features to OUT_SIZE units; DROPOUT between layers.
  NStepLSTM(int64_t n_layers, int64_t in_size, int64_t out_size, double dropout)
      : NStepLSTMBase("NStepLSTM", n_layers, in_size, out_size, dropout, 1) {}
};

/// A stack of bidirectional LSTM layers (Chainer's `L.NStepBiLSTM`): outputs of 2 * out_size.
class NStepBiLSTM : public NStepLSTMBase {
 public:
  /// N_LAYERS layers from IN_SIZE features to OUT_SIZE units per direction; DROPOUT between layers.
  NStepBiLSTM(int64_t n_layers, int64_t in_size, int64_t out_size, double dropout)
      : NStepLSTMBase("NStepBiLSTM", n_layers, in_size, out_size, dropout, 2) {}
};

/// What the GRU and plain RNN stacks share: no cell state.
class NStepGRUBase : public NStepRNNBase {
 public:
  /// Runs the stack over XS from HX ((layers * directions, len(xs), U); undefined: zeros).
  /// Returns Chainer's (hy, ys) in XS's order.
  functions::NStepRNNResult forward(const Variable& hx, const std::vector<Variable>& xs);

 protected:
  /// As NStepRNNBase's; ACTIVATION empty for a GRU, else the plain RNN's "tanh" or "relu".
  NStepGRUBase(const char* name, std::string activation, int64_t n_layers, int64_t in_size, int64_t out_size,
               double dropout, int64_t directions)
      : NStepRNNBase(name, activation.empty() ? 6 : 2, n_layers, in_size, out_size, dropout, directions),
        activation_(std::move(activation)) {}

 private:
  std::string activation_;
};

/// A stack of unidirectional GRU layers (Chainer's `L.NStepGRU`).
class NStepGRU : public NStepGRUBase {
 public:
  /// N_LAYERS layers from IN_SIZE features to OUT_SIZE units; DROPOUT between layers.
  NStepGRU(int64_t n_layers, int64_t in_size, int64_t out_size, double dropout)
      : NStepGRUBase("NStepGRU", "", n_layers, in_size, out_size, dropout, 1) {}
};
/// A stack of bidirectional GRU layers (Chainer's `L.NStepBiGRU`).
class NStepBiGRU : public NStepGRUBase {
 public:
  /// As NStepGRU's; outputs of 2 * out_size.
  NStepBiGRU(int64_t n_layers, int64_t in_size, int64_t out_size, double dropout)
      : NStepGRUBase("NStepBiGRU", "", n_layers, in_size, out_size, dropout, 2) {}
};
/// A stack of tanh RNN layers (Chainer's `L.NStepRNNTanh`).
class NStepRNNTanh : public NStepGRUBase {
 public:
  /// As NStepGRU's.
  NStepRNNTanh(int64_t n_layers, int64_t in_size, int64_t out_size, double dropout)
      : NStepGRUBase("NStepRNNTanh", "tanh", n_layers, in_size, out_size, dropout, 1) {}
};
/// A stack of ReLU RNN layers (Chainer's `L.NStepRNNReLU`).
class NStepRNNReLU : public NStepGRUBase {
 public:
  /// As NStepGRU's.
  NStepRNNReLU(int64_t n_layers, int64_t in_size, int64_t out_size, double dropout)
      : NStepGRUBase("NStepRNNReLU", "relu", n_layers, in_size, out_size, dropout, 1) {}
};
/// A stack of bidirectional tanh RNN layers (Chainer's `L.NStepBiRNNTanh`).
class NStepBiRNNTanh : public NStepGRUBase {
 public:
  /// As NStepGRU's; outputs of 2 * out_size.
  NStepBiRNNTanh(int64_t n_layers, int64_t in_size, int64_t out_size, double dropout)
      : NStepGRUBase("NStepBiRNNTanh", "tanh", n_layers, in_size, out_size, dropout, 2) {}
};
/// A stack of bidirectional ReLU RNN layers (Chainer's `L.NStepBiRNNReLU`).
class NStepBiRNNReLU : public NStepGRUBase {
 public:
  /// As NStepGRU's; outputs of 2 * out_size.
  NStepBiRNNReLU(int64_t n_layers, int64_t in_size, int64_t out_size, double dropout)
      : NStepGRUBase("NStepBiRNNReLU", "relu", n_layers, in_size, out_size, dropout, 2) {}
};

}  // namespace chainer::links
