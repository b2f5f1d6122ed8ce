#include "nn/links/lstm.h"

#include "core/ops/ops.h"
#include "nn/functions.h"

namespace chainer::links {

namespace {
// A (4U, IN) weight drawn per block of U rows, as Chainer's: INIT, or LeCunNormal.
Tensor block_weight(int64_t units, int64_t in, const initializers::Initializer& init, const char* who) {
  std::vector<Tensor> blocks;
  for (int g = 0; g < 4; ++g)
    blocks.push_back(init ? init({units, in}, who) : initializers::lecun_normal({units, in}));
  return ops::concat(blocks, 0);
}
}  // namespace

LSTMBase::LSTMBase(std::optional<int64_t> in_size, int64_t out_size, initializers::Initializer lateral_init,
                   initializers::Initializer upward_init, initializers::Initializer bias_init,
                   initializers::Initializer forget_bias_init)
    : state_size_(out_size), upward_init_(std::move(upward_init)) {
  if (out_size <= 0) throw Error(str("LSTM: out_size must be positive, got ", out_size));
  upward = add_link("upward", std::make_shared<Linear>(in_size, 4 * out_size));
  lateral = add_link("lateral", std::make_shared<Linear>(out_size, 4 * out_size, /*nobias=*/true));
  lateral->W().set_data(lateral->initial_value(block_weight(out_size, out_size, lateral_init, "LSTM: lateral_init")));
  if (in_size) initialize_upward();
  // The gate biases, interleaved: a, i and o from bias_init (0), f from forget_bias_init (1).
  const Tensor rest = bias_init ? bias_init({out_size}, "LSTM: bias_init") : Tensor::zeros({out_size});
  const Tensor forget = forget_bias_init ? forget_bias_init({out_size}, "LSTM: forget_bias_init")
                                         : Tensor::ones({out_size});
  upward->b()->set_data(upward->initial_value(ops::stack({rest, rest, forget, rest}, 1).reshape({4 * out_size})));
}

void LSTMBase::initialize_upward() {
  upward->W().set_data(upward->initial_value(block_weight(state_size_, upward->in_size(), upward_init_, "LSTM: upward_init")));
}

Variable LSTMBase::gates(const Variable& x, const Variable& h) {
  const bool lazy = !upward->W().data().defined();
  Variable g = (*upward)(x);
  if (lazy) {  // Linear drew W at once; Chainer draws it per gate block, from upward_init if given
    initialize_upward();
    g = (*upward)(x);
  }
  if (!h.defined()) return g;
  const int64_t batch = x.shape()[0];
  const Variable rows = h.shape()[0] == batch ? h : functions::split_axis(h, std::vector<int64_t>{batch}, 0)[0];
  return g + (*lateral)(rows);
}

LSTM::LSTM(std::optional<int64_t> in_size, int64_t out_size, initializers::Initializer lateral_init,
           initializers::Initializer upward_init, initializers::Initializer bias_init,
           initializers::Initializer forget_bias_init)
    : LSTMBase(in_size, out_size, std::move(lateral_init), std::move(upward_init), std::move(bias_init),
               std::move(forget_bias_init)) {}

Variable LSTM::forward(const Variable& x) {
  if (!x.defined() || x.ndim() < 1) throw Error("LSTM: the input must have a batch axis");
  const int64_t batch = x.shape()[0];
  if (h_.defined() && batch > h_.shape()[0])
    throw Error(str("LSTM: the batch size of x (", batch,
                    ") must be equal to or less than that of the previous state h (", h_.shape()[0], ")"));
  // A smaller batch advances the state's first rows; the rest wait in `parts[1]`.
  const std::vector<Variable> parts = h_.defined() && batch < h_.shape()[0]
                                          ? functions::split_axis(h_, std::vector<int64_t>{batch}, 0)
                                          : std::vector<Variable>{h_};
  Variable g = gates(x, parts[0]);
  if (!c_.defined()) c_ = Variable(Tensor::zeros({batch, state_size()}, g.dtype(), g.data().device()));
  auto [c, y] = functions::lstm(c_, g);
  c_ = c;
  h_ = parts.size() == 1 ? y : batch == 0 ? parts[1] : functions::concat({y, parts[1]}, 0);
  return y;
}

void LSTM::reset_state() { c_ = h_ = Variable(); }

void LSTM::set_state(const Variable& c, const Variable& h) {
  c_ = c;
  h_ = h;
}

StatelessLSTM::StatelessLSTM(std::optional<int64_t> in_size, int64_t out_size, initializers::Initializer lateral_init,
                             initializers::Initializer upward_init, initializers::Initializer bias_init,
                             initializers::Initializer forget_bias_init)
    : LSTMBase(in_size, out_size, std::move(lateral_init), std::move(upward_init), std::move(bias_init),
               std::move(forget_bias_init)) {}

std::pair<Variable, Variable> StatelessLSTM::forward(const Variable& c, const Variable& h, const Variable& x) {
  if (!x.defined() || x.ndim() < 1) throw Error("StatelessLSTM: the input must have a batch axis");
  Variable g = gates(x, h);
  const Variable state =
      c.defined() ? c : Variable(Tensor::zeros({x.shape()[0], state_size()}, g.dtype(), g.data().device()));
  return functions::lstm(state, g);
}

}  // namespace chainer::links
