#include "nn/functions/lstm.h"

#include "autograd/function_hook.h"
#include "autograd/function_node.h"
#include "core/ops/ops.h"
#include "nn/autocast.h"
#include "nn/functions/array.h"

namespace chainer::functions {

namespace {
// One node for the whole cell: it saves x, c_prev and c, and its backward is one fused kernel.
class LSTMNode : public FunctionNode {
 public:
  LSTMNode(Tensor c_prev, Tensor x, Tensor c) : c_prev_(std::move(c_prev)), x_(std::move(x)), c_(std::move(c)) {}
  std::string name() const override { return "LSTM"; }

  std::vector<Tensor> backward(const std::vector<Tensor>& grads) override {
    auto [gx, gc_prev] = ops::lstm_grad(x_, c_prev_, c_, grads[0], grads[1]);
    return {gc_prev, gx};
  }

 protected:
  void release_saved() override { c_prev_ = x_ = c_ = Tensor(); }

 private:
  Tensor c_prev_, x_, c_;
};

// The cell on rows [0, B) of c_prev: {c, h}, each (B, U).
std::pair<Variable, Variable> cell(const Variable& c_prev, const Variable& x) {
  ForwardHooks hooks("LSTM", c_prev, x);
  auto [c, h] = ops::lstm(x.data(), c_prev.data());
  if (!needs_recording({c_prev, x})) return {Variable(std::move(c)), Variable(std::move(h))};
  auto out = record(std::make_shared<LSTMNode>(c_prev.data(), x.data(), c), {c_prev, x}, {c, h});
  return {out[0], out[1]};
}
}  // namespace

std::pair<Variable, Variable> lstm(const Variable& c_prev_in, const Variable& x_in) {
  // Mixed precision: a function of the full-precision list (nn/autocast.h).
  const Variable c_prev = autocast::for_float32(c_prev_in), x = autocast::for_float32(x_in);
  if (!c_prev.defined() || !x.defined()) throw Error("lstm: an operand is undefined");
  const Shape& cs = c_prev.shape();
  const Shape& xs = x.shape();
  if (cs.size() != 2 || xs.size() != 2 || xs[1] != 4 * cs[1] || xs[0] > cs[0])
    throw Error(str("lstm: c_prev has shape ", shape_str(cs), " and x ", shape_str(xs),
                    "; expected c_prev (B', U) and x (B, 4 U) with B <= B'"));
  const int64_t b = xs[0];
  if (b == cs[0]) return cell(c_prev, x);
  // A shorter batch: the cell on c_prev's first B rows, the rest passed through.
  std::vector<Variable> parts = split_axis(c_prev, std::vector<int64_t>{b}, 0);
  auto [c, h] = cell(parts[0], x);
  return {concat({c, parts[1]}, 0), h};
}

}  // namespace chainer::functions
