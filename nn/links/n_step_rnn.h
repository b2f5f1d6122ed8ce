/// @file
/// Stacked LSTM links over lists of variable-length sequences, as chainer.links.NStepLSTM and
/// NStepBiLSTM: the parameters of functions::n_step_lstm, one child link per layer and direction
/// ("0", "1", ... in Chainer's order: layer by layer, forward before backward) holding w0 .. w7 and
/// b0 .. b7, so snapshots interchange with Chainer's. The weights are drawn from LeCunNormal
/// (standard deviation sqrt(1 / fan-in), Chainer's default), the biases are zero.
#pragma once
#include <vector>

#include "nn/functions/n_step_rnn.h"
#include "nn/link.h"

namespace chainer::links {

/// What NStepLSTM and NStepBiLSTM share.
class NStepLSTMBase : public Chain {
 public:
  /// Runs the stack over the sequences XS (XS[i] of shape (L_i, in_size), any order and lengths)
  /// from HX and CX ((layers * directions, len(xs), U); undefined: zeros). Returns Chainer's
  /// (hy, cy, ys): the last states in XS's order and ys[i] (L_i, U * directions), the last
  /// layer's outputs for sequence i.
  functions::NStepLSTMResult forward(const Variable& hx, const Variable& cx, const std::vector<Variable>& xs);

  /// The number of layers.
  int64_t n_layers() const { return n_layers_; }
  /// 2 for the bidirectional stack, else 1.
  int64_t directions() const { return directions_; }
  /// The number of units U of every layer and direction.
  int64_t out_size() const { return out_size_; }
  /// The dropout ratio applied to the inputs of every layer but the first, in training.
  double dropout() const { return dropout_; }

 protected:
  /// N_LAYERS layers of OUT_SIZE units in DIRECTIONS directions over inputs of IN_SIZE features.
  NStepLSTMBase(int64_t n_layers, int64_t in_size, int64_t out_size, double dropout, int64_t directions);

 private:
  std::vector<std::shared_ptr<Link>> layers_;  // per layer and direction, the children "0", "1", ...
  int64_t n_layers_, out_size_, directions_;
  double dropout_;
};

/// A stack of unidirectional LSTM layers (Chainer's `L.NStepLSTM`).
class NStepLSTM : public NStepLSTMBase {
 public:
  /// N_LAYERS layers from IN_SIZE features to OUT_SIZE units; DROPOUT between layers.
  NStepLSTM(int64_t n_layers, int64_t in_size, int64_t out_size, double dropout)
      : NStepLSTMBase(n_layers, in_size, out_size, dropout, 1) {}
};

/// A stack of bidirectional LSTM layers (Chainer's `L.NStepBiLSTM`): outputs of 2 * out_size.
class NStepBiLSTM : public NStepLSTMBase {
 public:
  /// N_LAYERS layers from IN_SIZE features to OUT_SIZE units per direction; DROPOUT between layers.
  NStepBiLSTM(int64_t n_layers, int64_t in_size, int64_t out_size, double dropout)
      : NStepLSTMBase(n_layers, in_size, out_size, dropout, 2) {}
};

}  // namespace chainer::links
