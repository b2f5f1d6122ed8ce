/// @file
/// LSTM layers, as chainer.links.LSTM and StatelessLSTM: the two linear maps of a long
/// short-term memory layer, the upward one from the input (upward/W (4U, in), upward/b (4U,)) and
/// the lateral one from the previous output (lateral/W (4U, U), no bias), whose sum feeds the
/// fused cell functions::lstm. The gate columns are interleaved as Chainer's (unit u's gates a,
/// i, f, o at rows 4u .. 4u + 3), so parameters interchange with Chainer's snapshots. W is drawn
/// from LeCunNormal per block of U rows (Chainer's default), the bias 0 but the forget gates' 1.
#pragma once
#include <optional>
#include <utility>

#include "nn/initializers.h"
#include "nn/link.h"
#include "nn/links/linear.h"

namespace chainer::links {

/// What LSTM and StatelessLSTM share: the two linear maps and their initialization.
class LSTMBase : public Chain {
 public:
  /// The input size (0 until known, when constructed without it).
  int64_t in_size() const { return upward->in_size(); }
  /// The state size U: the number of units.
  int64_t state_size() const { return state_size_; }

  std::shared_ptr<Linear> upward;   ///< x -> the gate inputs (4U)
  std::shared_ptr<Linear> lateral;  ///< h -> the gate inputs (4U), no bias

 protected:
  /// The links and their parameters, initialized as LSTM's constructor says.
  LSTMBase(std::optional<int64_t> in_size, int64_t out_size, initializers::Initializer lateral_init,
           initializers::Initializer upward_init, initializers::Initializer bias_init,
           initializers::Initializer forget_bias_init);
  /// upward(x) + lateral(h) for the first len(x) rows of H (H undefined: none); creates upward's
  /// W at the first call of a lazily sized link.
  Variable gates(const Variable& x, const Variable& h);

 private:
  void initialize_upward();
  int64_t state_size_;
  initializers::Initializer upward_init_;
};

/// A stateful LSTM layer (Chainer's `L.LSTM`): each call advances the state (c, h) it keeps.
class LSTM : public LSTMBase {
 public:
  /// LSTM(out_size): the input size is inferred at the first call.
  explicit LSTM(int64_t out_size) : LSTM(std::nullopt, out_size) {}
  /// IN_SIZE (std::nullopt: inferred) to OUT_SIZE units; empty initializers take Chainer's defaults.
  LSTM(std::optional<int64_t> in_size, int64_t out_size, initializers::Initializer lateral_init = {},
       initializers::Initializer upward_init = {}, initializers::Initializer bias_init = {},
       initializers::Initializer forget_bias_init = {});

  /// One step: the new h (B, U) for X (B, in). A batch smaller than the state's advances the
  /// state's first B rows and keeps the rest (sequences of a sorted batch that have ended); a
  /// larger one is an error.
  Variable forward(const Variable& x) override;
  /// Forgets the state: the next call starts from zeros.
  void reset_state();
  /// Sets the state (either may be undefined: none).
  void set_state(const Variable& c, const Variable& h);
  /// The cell state after the last step (undefined before the first).
  const Variable& c() const { return c_; }
  /// The output of the last step, with the rows a smaller batch left alone (undefined before the first).
  const Variable& h() const { return h_; }

 private:
  Variable c_, h_;
};

/// An LSTM layer without state (Chainer's `L.StatelessLSTM`): the caller passes (c, h) in and gets
/// the new (c, h) out.
class StatelessLSTM : public LSTMBase {
 public:
  /// StatelessLSTM(out_size): the input size is inferred at the first call.
  explicit StatelessLSTM(int64_t out_size) : StatelessLSTM(std::nullopt, out_size) {}
  /// As LSTM's constructor.
  StatelessLSTM(std::optional<int64_t> in_size, int64_t out_size, initializers::Initializer lateral_init = {},
                initializers::Initializer upward_init = {}, initializers::Initializer bias_init = {},
                initializers::Initializer forget_bias_init = {});

  /// One step from state (C, H) (either undefined: zeros) on X: {c, h} (c keeps C's rows beyond
  /// len(x), as functions::lstm).
  std::pair<Variable, Variable> forward(const Variable& c, const Variable& h, const Variable& x);
  /// forward with no state; the output h.
  Variable forward(const Variable& x) override { return forward(Variable(), Variable(), x).second; }
};

}  // namespace chainer::links
