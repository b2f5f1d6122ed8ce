/// @file
/// Stacked recurrent layers over variable-length sequences, as chainer.functions.n_step_lstm,
/// n_step_gru, n_step_rnn and their bidirectional twins: N layers, each running over time-major
/// steps (transpose_sequence's output: step t holds the B_t sequences longer than t, B_t never
/// growing), one or two directions per layer.
///
/// Parameters are Chainer's: for layer l and direction d, index k = l * directions + d holds
/// ws[k] = {w0, w1, ...} and bs[k] = {b0, b1, ...}, the first half (U, in) acting on the layer's
/// input and the second half (U, U) on the previous output h:
///
///     LSTM (8):  i = sigmoid(w0 x + b0 + w4 h + b4)    f = sigmoid(w1 x + b1 + w5 h + b5)
///                a = tanh(w2 x + b2 + w6 h + b6)       o = sigmoid(w3 x + b3 + w7 h + b7)
///                c' = f c + i a                        h' = o tanh(c')
///     GRU (6):   r = sigmoid(w0 x + b0 + w3 h + b3)    z = sigmoid(w1 x + b1 + w4 h + b4)
///                n = tanh(w2 x + b2 + r (w5 h + b5))   h' = (1 - z) n + z h
///     RNN (2):   h' = tanh(w0 x + b0 + w1 h + b1), or relu
///
/// The input is a layer's whole sequence at once: its projections for all steps are one matrix
/// product per layer and direction, and each step is one more product and a fused cell (lstm; the
/// GRU's own kernel; the activation). Dropout (DROPOUT_RATIO, in training) applies to the inputs of
/// every layer but the first, as Chainer's. The backward direction reads the steps from the last:
/// each sequence starts at its own end from hx.
///
/// Where the device runs whole stacks (cuDNN's RNN API on CUDA: ops::has_fused_rnn), the stack is
/// one node of one library call each way instead, when no dropout applies (DROPOUT_RATIO 0, one
/// layer, or not training): the same results, the weights kept under Chainer's names.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "autograd/variable.h"

namespace chainer::functions {

/// What n_step_lstm and n_step_bilstm return: the last outputs and cell states of every layer and
/// direction, hy and cy (layers * directions, B, U), and the outputs of the last layer per step,
/// ys[t] (B_t, U * directions): Chainer's (hy, cy, ys), for `auto [hy, cy, ys] = ...`.
struct NStepLSTMResult {
  Variable hy;                 ///< (layers * directions, B, U)
  Variable cy;                 ///< (layers * directions, B, U)
  std::vector<Variable> ys;    ///< per step: (B_t, U * directions)
};

/// N_LAYERS unidirectional LSTM layers over the time-major steps XS (each (B_t, in)) from states
/// HX and CX ((n_layers, B, U); undefined: zeros).
NStepLSTMResult n_step_lstm(int64_t n_layers, double dropout_ratio, const Variable& hx, const Variable& cx,
                            const std::vector<std::vector<Variable>>& ws, const std::vector<std::vector<Variable>>& bs,
                            const std::vector<Variable>& xs);
/// The bidirectional stack: each layer runs forward and backward over the steps, and its output
/// (the next layer's input) is the two directions' outputs joined, (B_t, 2U); HX and CX
/// (2 n_layers, B, U), forward direction first in each layer.
NStepLSTMResult n_step_bilstm(int64_t n_layers, double dropout_ratio, const Variable& hx, const Variable& cx,
                              const std::vector<std::vector<Variable>>& ws,
                              const std::vector<std::vector<Variable>>& bs, const std::vector<Variable>& xs);

/// What the GRU and plain RNN stacks return: Chainer's (hy, ys), for `auto [hy, ys] = ...`.
struct NStepRNNResult {
  Variable hy;               ///< (layers * directions, B, U)
  std::vector<Variable> ys;  ///< per step: (B_t, U * directions)
};

/// N_LAYERS unidirectional GRU layers over the steps XS from HX ((n_layers, B, U); undefined: zeros).
NStepRNNResult n_step_gru(int64_t n_layers, double dropout_ratio, const Variable& hx,
                          const std::vector<std::vector<Variable>>& ws, const std::vector<std::vector<Variable>>& bs,
                          const std::vector<Variable>& xs);
/// The bidirectional GRU stack (HX: (2 n_layers, B, U), forward direction first in each layer).
NStepRNNResult n_step_bigru(int64_t n_layers, double dropout_ratio, const Variable& hx,
                            const std::vector<std::vector<Variable>>& ws, const std::vector<std::vector<Variable>>& bs,
                            const std::vector<Variable>& xs);
/// N_LAYERS unidirectional RNN layers with ACTIVATION "tanh" or "relu" over the steps XS.
NStepRNNResult n_step_rnn(int64_t n_layers, double dropout_ratio, const Variable& hx,
                          const std::vector<std::vector<Variable>>& ws, const std::vector<std::vector<Variable>>& bs,
                          const std::vector<Variable>& xs, const std::string& activation = "tanh");
/// The bidirectional RNN stack.
NStepRNNResult n_step_birnn(int64_t n_layers, double dropout_ratio, const Variable& hx,
                            const std::vector<std::vector<Variable>>& ws, const std::vector<std::vector<Variable>>& bs,
                            const std::vector<Variable>& xs, const std::string& activation = "tanh");

}  // namespace chainer::functions
