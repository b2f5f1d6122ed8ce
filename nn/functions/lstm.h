/// @file
/// The LSTM cell, as chainer.functions.lstm: one fused step (one graph node) of a long short-term
/// memory layer whose gate inputs were computed elsewhere (L::LSTM and L::StatelessLSTM add the
/// two linear maps).
#pragma once
#include <utility>

#include "autograd/variable.h"

namespace chainer::functions {

/// One LSTM step, as Chainer's lstm. X (B, 4U) holds the gate inputs of unit u at columns
/// 4u .. 4u + 3, in the order a, i, f, o (Chainer's interleaved layout); C_PREV (B', U) with
/// B' >= B. For the first B rows: c = tanh(a) sigmoid(i) + sigmoid(f) c_prev and
/// h = sigmoid(o) tanh(c); rows B .. B' - 1 of c_prev pass through to c unchanged (sequences of a
/// sorted batch that have ended). Returns {c (B', U), h (B, U)}.
std::pair<Variable, Variable> lstm(const Variable& c_prev, const Variable& x);

}  // namespace chainer::functions
