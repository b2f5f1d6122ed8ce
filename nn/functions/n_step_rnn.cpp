#include "nn/functions/n_step_rnn.h"

#include "autograd/function_hook.h"
#include "autograd/function_node.h"
#include "core/ops/ops.h"
#include "core/util/config.h"
#include "nn/autocast.h"
#include "nn/functions/activation.h"
#include "nn/functions/arithmetic.h"
#include "nn/functions/array.h"
#include "nn/functions/dropout.h"
#include "nn/functions/linear.h"
#include "nn/functions/lstm.h"

namespace chainer::functions {

namespace {
enum class Cell { Lstm, Gru, Tanh, Relu };

int weights_of(Cell cell) { return cell == Cell::Lstm ? 8 : cell == Cell::Gru ? 6 : 2; }

// Arrays (U, ...) as one (K U, ...) with unit u's rows at K u .. K u + K - 1 in the order given:
// Chainer's per-gate parameters in the layout of the fused cells.
Variable interleave(const std::vector<Variable>& parts) {
  Shape shape = parts[0].shape();
  shape[0] *= int64_t(parts.size());
  return reshape(stack(parts, 1), shape);
}

// The fused GRU step: one node, whose forward and backward are one kernel each.
class GRUNode : public FunctionNode {
 public:
  GRUNode(Tensor xg, Tensor hg, Tensor h) : xg_(std::move(xg)), hg_(std::move(hg)), h_(std::move(h)) {}
  std::string name() const override { return "GRU"; }
  std::vector<Tensor> backward(const std::vector<Tensor>& gy) override { return ops::gru_grad(xg_, hg_, h_, gy[0]); }

 protected:
  void release_saved() override { xg_ = hg_ = h_ = Tensor(); }

 private:
  Tensor xg_, hg_, h_;
};

Variable gru(const Variable& xg, const Variable& hg, const Variable& h) {
  ForwardHooks hooks("GRU", xg, hg, h);
  Tensor y = ops::gru(xg.data(), hg.data(), h.data());
  if (!needs_recording({xg, hg, h})) return Variable(std::move(y));
  return record(std::make_shared<GRUNode>(xg.data(), hg.data(), h.data()), {xg, hg, h}, {y})[0];
}

// The pieces of X along axis 0 at the row counts SIZES (one piece: X itself).
std::vector<Variable> split_rows(const Variable& x, const std::vector<int64_t>& sizes) {
  if (sizes.size() == 1) return {x};
  std::vector<int64_t> cuts;
  int64_t at = 0;
  for (size_t i = 0; i + 1 < sizes.size(); ++i) cuts.push_back(at += sizes[i]);
  return split_axis(x, cuts, 0);
}

struct DirectionResult {
  Variable h, c;             // the last state of every sequence, (B, U); c: LSTMs only
  std::vector<Variable> hs;  // the output of each step, (B_t, U), in the steps' order
};

// One direction of one layer over the steps XS (REVERSE: from the last), from state (H, C).
DirectionResult run_direction(Cell cell, const std::vector<Variable>& xs, Variable h, Variable c,
                              const std::vector<Variable>& w, const std::vector<Variable>& b, bool reverse) {
  // The input's projection (weights and bias) and the previous output's (bias: GRUs only, whose
  // candidate multiplies it by r; the others' is folded into the input's).
  Variable wx, bx, wh, bh;
  switch (cell) {
    case Cell::Lstm:
      wx = interleave({w[2], w[0], w[1], w[3]});  // Chainer's (i, f, a, o) as lstm's (a, i, f, o)
      wh = interleave({w[6], w[4], w[5], w[7]});
      bx = interleave({b[2] + b[6], b[0] + b[4], b[1] + b[5], b[3] + b[7]});
      break;
    case Cell::Gru:
      wx = interleave({w[0], w[1], w[2]});  // (r, z, n)
      wh = interleave({w[3], w[4], w[5]});
      bx = interleave({b[0], b[1], b[2]});
      bh = interleave({b[3], b[4], b[5]});
      break;
    case Cell::Tanh:
    case Cell::Relu:
      wx = w[0];
      wh = w[1];
      bx = b[0] + b[1];
      break;
  }
  std::vector<int64_t> sizes;
  for (const Variable& x : xs) sizes.push_back(x.shape()[0]);
  // Every step's input projection in one product.
  const std::vector<Variable> projected = split_rows(linear(xs.size() == 1 ? xs[0] : concat(xs, 0), wx, bx), sizes);
  DirectionResult r;
  r.hs.resize(xs.size());
  for (size_t k = 0; k < xs.size(); ++k) {
    const size_t t = reverse ? xs.size() - 1 - k : k;
    const int64_t batch = sizes[t], rows = h.shape()[0];
    const std::vector<Variable> parts =
        batch < rows ? split_axis(h, std::vector<int64_t>{batch}, 0) : std::vector<Variable>{h};
    Variable h_next;
    switch (cell) {
      case Cell::Lstm: {
        auto [c_next, out] = lstm(c, projected[t] + linear(parts[0], wh));
        c = c_next;  // lstm passes the rows beyond the batch through
        h_next = out;
        break;
      }
      case Cell::Gru: h_next = gru(projected[t], linear(parts[0], wh, bh), parts[0]); break;
      case Cell::Tanh: h_next = tanh(projected[t] + linear(parts[0], wh)); break;
      case Cell::Relu: h_next = relu(projected[t] + linear(parts[0], wh)); break;
    }
    h = batch < rows ? concat({h_next, parts[1]}, 0) : h_next;
    r.hs[t] = h_next;
  }
  r.h = h;
  r.c = c;
  return r;
}

// Throws unless the states S (when given) are (layers * directions, B, U).
void check_states(const char* op, const char* name, const Variable& s, int64_t count, int64_t batch, int64_t units) {
  if (s.defined() && s.shape() != Shape{count, batch, units})
    throw Error(str(op, ": ", name, " has shape ", shape_str(s.shape()), " (expected ",
                    shape_str({count, batch, units}), ": layers * directions, the batch, the units)"));
}

// The layers' states as a list, from (layers * directions, B, U) or zeros.
std::vector<Variable> states(const char* op, const char* name, const Variable& s, int64_t count, int64_t batch,
                             int64_t units, const Variable& like) {
  if (!s.defined()) {
    const Variable zeros(Tensor::zeros({batch, units}, like.dtype(), like.data().device()));
    return std::vector<Variable>(size_t(count), zeros);
  }
  check_states(op, name, s, count, batch, units);
  std::vector<Variable> out;
  for (const Variable& p : split_axis(s, count, 0)) out.push_back(squeeze(p, 0));
  return out;
}

// ---- The whole stack in one node, where the device has a library's (cuDNN's on CUDA) ----

RnnCell rnn_cell(Cell cell) {
  switch (cell) {
    case Cell::Lstm: return RnnCell::Lstm;
    case Cell::Gru: return RnnCell::Gru;
    case Cell::Tanh: return RnnCell::Tanh;
    case Cell::Relu: return RnnCell::Relu;
  }
  return RnnCell::Lstm;
}

// Inputs: the packed steps x, then hx and cx where given, then every weight and bias in Chainer's
// order; outputs: the packed outputs y, hy, and cy for LSTMs.
class FusedRNNNode : public FunctionNode {
 public:
  FusedRNNNode(RnnGeometry g, Tensor x, Tensor hx, Tensor cx, std::vector<Tensor> weights, ops::RnnForward f)
      : g_(std::move(g)), x_(std::move(x)), hx_(std::move(hx)), cx_(std::move(cx)), weights_(std::move(weights)),
        f_(std::move(f)) {}
  std::string name() const override { return "NStepRNN"; }
  std::vector<Tensor> backward(const std::vector<Tensor>& gy) override {
    const bool lstm = g_.cell == RnnCell::Lstm;
    const size_t first_weight = 1 + size_t(hx_.defined()) + size_t(cx_.defined());
    bool weight_grads = false;
    for (size_t i = first_weight; i < inputs().size(); ++i) weight_grads = weight_grads || input_requires_grad(i);
    ops::RnnGradients r =
        ops::rnn_backward(g_, x_, hx_, cx_, weights_, f_, gy[0], gy[1], lstm ? gy[2] : Tensor(), weight_grads);
    std::vector<Tensor> grads{r.gx};
    if (hx_.defined()) grads.push_back(r.ghx);
    if (cx_.defined()) grads.push_back(r.gcx);
    if (weight_grads) grads.insert(grads.end(), r.gweights.begin(), r.gweights.end());
    grads.resize(inputs().size());
    return grads;
  }

 protected:
  void release_saved() override {
    x_ = hx_ = cx_ = Tensor();
    weights_.clear();
    f_ = {};
  }

 private:
  RnnGeometry g_;
  Tensor x_, hx_, cx_;
  std::vector<Tensor> weights_;
  ops::RnnForward f_;
};

// Whether the stack runs as one library call: the device has one, and no dropout applies (the
// library's would draw other masks than ours; with dropout the stack is composed).
bool use_fused(int64_t n_layers, double dropout_ratio, const std::vector<Variable>& xs) {
  const bool dropout = dropout_ratio > 0 && n_layers > 1 && config::train();
  const DType dtype = xs[0].dtype();
  return !dropout && (dtype == DType::Float32 || dtype == DType::Float64) && ops::has_fused_rnn(xs[0].data().device());
}

NStepLSTMResult n_step_fused(Cell cell, int64_t directions, int64_t n_layers, const Variable& hx, const Variable& cx,
                             const std::vector<std::vector<Variable>>& ws,
                             const std::vector<std::vector<Variable>>& bs, const std::vector<Variable>& xs) {
  RnnGeometry g{.cell = rnn_cell(cell), .layers = n_layers, .directions = directions, .in_size = xs[0].shape()[1],
                .units = ws[0][0].shape()[0], .lengths = {}};
  std::vector<int64_t> sizes;
  for (const Variable& x : xs) sizes.push_back(x.shape()[0]);
  // Sequence i is as long as the steps whose batch holds it.
  for (int64_t i = 0; i < sizes[0]; ++i) {
    int32_t len = 0;
    while (size_t(len) < sizes.size() && sizes[size_t(len)] > i) ++len;
    g.lengths.push_back(len);
  }
  const Variable x = xs.size() == 1 ? xs[0] : concat(xs, 0);
  std::vector<Variable> inputs{x};
  if (hx.defined()) inputs.push_back(hx);
  const bool lstm = cell == Cell::Lstm;
  if (lstm && cx.defined()) inputs.push_back(cx);
  std::vector<Tensor> weights;
  for (size_t k = 0; k < ws.size(); ++k)
    for (const std::vector<Variable>* params : {&ws[k], &bs[k]})
      for (const Variable& p : *params) {
        inputs.push_back(p);
        weights.push_back(p.data());
      }
  const Tensor cx_data = lstm && cx.defined() ? cx.data() : Tensor();
  const bool recording = needs_recording(inputs);
  std::vector<Variable> out;
  {
    ForwardHooks hooks("NStepRNN", inputs);  // the library call alone (not the concat before, the split after)
    ops::RnnForward f = ops::rnn_forward(g, x.data(), hx.defined() ? hx.data() : Tensor(), cx_data, weights, recording);
    std::vector<Tensor> outputs{f.y, f.hy};
    if (lstm) outputs.push_back(f.cy);
    out = recording ? record(std::make_shared<FusedRNNNode>(g, x.data(), hx.defined() ? hx.data() : Tensor(), cx_data,
                                                            std::move(weights), f),
                             inputs, outputs)
                    : wrap_outputs(outputs);
  }
  return {out[1], lstm ? out[2] : Variable(), split_rows(out[0], sizes)};
}

// hy, cy (LSTMs) and ys of the stack.
NStepLSTMResult n_step_full(const char* op, Cell cell, int64_t directions, int64_t n_layers, double dropout_ratio,
                            const Variable& hx, const Variable& cx, const std::vector<std::vector<Variable>>& ws,
                            const std::vector<std::vector<Variable>>& bs, const std::vector<Variable>& xs) {
  if (n_layers <= 0) throw Error(str(op, ": n_layers must be positive, got ", n_layers));
  const size_t count = size_t(n_layers * directions), n = size_t(weights_of(cell));
  if (ws.size() != count || bs.size() != count)
    throw Error(str(op, ": ", ws.size(), " weight lists and ", bs.size(), " bias lists for ", n_layers,
                    " layers (expected ", count, " of each: layers * directions)"));
  for (size_t k = 0; k < count; ++k)
    if (ws[k].size() != n || bs[k].size() != n)
      throw Error(str(op, ": list ", k, " has ", ws[k].size(), " weights and ", bs[k].size(), " biases (expected ", n,
                      " of each)"));
  if (xs.empty()) throw Error(str(op, ": no steps given"));
  for (size_t t = 0; t < xs.size(); ++t) {
    if (!xs[t].defined() || xs[t].ndim() != 2) throw Error(str(op, ": step ", t, " is not a (batch, features) array"));
    if (t > 0 && xs[t].shape()[0] > xs[t - 1].shape()[0])
      throw Error(str(op, ": step ", t, " has a batch of ", xs[t].shape()[0], ", larger than step ", t - 1, "'s ",
                      xs[t - 1].shape()[0], " (steps are transpose_sequence's: sequences sorted, longest first)"));
  }
  const int64_t batch = xs[0].shape()[0], units = ws[0][0].shape()[0];
  if (use_fused(n_layers, dropout_ratio, xs)) {
    check_states(op, "hx", hx, int64_t(count), batch, units);
    if (cell == Cell::Lstm) check_states(op, "cx", cx, int64_t(count), batch, units);
    return n_step_fused(cell, directions, n_layers, hx, cx, ws, bs, xs);
  }
  const std::vector<Variable> h0 = states(op, "hx", hx, int64_t(count), batch, units, xs[0]);
  const std::vector<Variable> c0 = cell == Cell::Lstm ? states(op, "cx", cx, int64_t(count), batch, units, xs[0])
                                                      : std::vector<Variable>(count);
  std::vector<Variable> next = xs, hy, cy;
  const auto inputs = [&](int64_t layer) {
    if (layer == 0 || dropout_ratio == 0) return next;
    std::vector<Variable> dropped;
    for (const Variable& x : next) dropped.push_back(dropout(x, dropout_ratio));
    return dropped;
  };
  for (int64_t layer = 0; layer < n_layers; ++layer) {
    const size_t k = size_t(layer * directions);
    DirectionResult forward = run_direction(cell, inputs(layer), h0[k], c0[k], ws[k], bs[k], false);
    hy.push_back(forward.h);
    cy.push_back(forward.c);
    if (directions == 1) {
      next = forward.hs;
      continue;
    }
    DirectionResult backward = run_direction(cell, inputs(layer), h0[k + 1], c0[k + 1], ws[k + 1], bs[k + 1], true);
    hy.push_back(backward.h);
    cy.push_back(backward.c);
    for (size_t t = 0; t < next.size(); ++t) next[t] = concat({forward.hs[t], backward.hs[t]}, 1);
  }
  return {stack(hy, 0), cell == Cell::Lstm ? stack(cy, 0) : Variable(), next};
}

// Mixed precision: the stacks are of the full-precision list (nn/autocast.h): half states,
// weights and steps are widened to float32, and the results are float32.
NStepLSTMResult n_step(const char* op, Cell cell, int64_t directions, int64_t n_layers, double dropout_ratio,
                       const Variable& hx, const Variable& cx, const std::vector<std::vector<Variable>>& ws,
                       const std::vector<std::vector<Variable>>& bs, const std::vector<Variable>& xs) {
  using autocast::for_float32;
  auto widen = [](const std::vector<Variable>& vs) {
    std::vector<Variable> out;
    out.reserve(vs.size());
    for (const Variable& v : vs) out.push_back(for_float32(v));
    return out;
  };
  std::vector<std::vector<Variable>> ws32, bs32;
  for (const auto& w : ws) ws32.push_back(widen(w));
  for (const auto& b : bs) bs32.push_back(widen(b));
  return n_step_full(op, cell, directions, n_layers, dropout_ratio, for_float32(hx), for_float32(cx), ws32, bs32,
                     widen(xs));
}

Cell activation_cell(const char* op, const std::string& activation) {
  if (activation == "tanh") return Cell::Tanh;
  if (activation == "relu") return Cell::Relu;
  throw Error(str(op, ": activation '", activation, "' is not 'tanh' or 'relu'"));
}

NStepRNNResult without_cell(NStepLSTMResult r) { return {std::move(r.hy), std::move(r.ys)}; }
}  // namespace

NStepLSTMResult n_step_lstm(int64_t n_layers, double dropout_ratio, const Variable& hx, const Variable& cx,
                            const std::vector<std::vector<Variable>>& ws, const std::vector<std::vector<Variable>>& bs,
                            const std::vector<Variable>& xs) {
  return n_step("n_step_lstm", Cell::Lstm, 1, n_layers, dropout_ratio, hx, cx, ws, bs, xs);
}

NStepLSTMResult n_step_bilstm(int64_t n_layers, double dropout_ratio, const Variable& hx, const Variable& cx,
                              const std::vector<std::vector<Variable>>& ws,
                              const std::vector<std::vector<Variable>>& bs, const std::vector<Variable>& xs) {
  return n_step("n_step_bilstm", Cell::Lstm, 2, n_layers, dropout_ratio, hx, cx, ws, bs, xs);
}

NStepRNNResult n_step_gru(int64_t n_layers, double dropout_ratio, const Variable& hx,
                          const std::vector<std::vector<Variable>>& ws, const std::vector<std::vector<Variable>>& bs,
                          const std::vector<Variable>& xs) {
  return without_cell(n_step("n_step_gru", Cell::Gru, 1, n_layers, dropout_ratio, hx, Variable(), ws, bs, xs));
}

NStepRNNResult n_step_bigru(int64_t n_layers, double dropout_ratio, const Variable& hx,
                            const std::vector<std::vector<Variable>>& ws, const std::vector<std::vector<Variable>>& bs,
                            const std::vector<Variable>& xs) {
  return without_cell(n_step("n_step_bigru", Cell::Gru, 2, n_layers, dropout_ratio, hx, Variable(), ws, bs, xs));
}

NStepRNNResult n_step_rnn(int64_t n_layers, double dropout_ratio, const Variable& hx,
                          const std::vector<std::vector<Variable>>& ws, const std::vector<std::vector<Variable>>& bs,
                          const std::vector<Variable>& xs, const std::string& activation) {
  const Cell cell = activation_cell("n_step_rnn", activation);
  return without_cell(n_step("n_step_rnn", cell, 1, n_layers, dropout_ratio, hx, Variable(), ws, bs, xs));
}

NStepRNNResult n_step_birnn(int64_t n_layers, double dropout_ratio, const Variable& hx,
                            const std::vector<std::vector<Variable>>& ws, const std::vector<std::vector<Variable>>& bs,
                            const std::vector<Variable>& xs, const std::string& activation) {
  const Cell cell = activation_cell("n_step_birnn", activation);
  return without_cell(n_step("n_step_birnn", cell, 2, n_layers, dropout_ratio, hx, Variable(), ws, bs, xs));
}

}  // namespace chainer::functions
