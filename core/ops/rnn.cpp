// Recurrent cells: the checks of the fused LSTM and GRU steps and their gradients (kernels in
// core/cpu/rnn.cpp and core/cuda/rnn.cu), and of the whole stacks a library runs (cuDNN's, in
// core/cuda/cudnn_rnn.cu).
#include "core/ops/ops.h"

#include <string>
#include <utility>

#include "core/ops/checks.h"
#include "core/ops/kernels.h"

namespace chainer::ops {

using detail::require_floating;
using detail::require_same_device;
using detail::require_same_dtype;

namespace {
// X (B, 4U) and C_PREV (B, U) of one floating dtype on one device; returns the device.
Device check_lstm_args(const Tensor& x, const Tensor& c_prev) {
  const Device device = require_same_device("lstm", {&x, &c_prev});
  require_floating("lstm", x);
  require_same_dtype("lstm", x, c_prev);
  if (c_prev.ndim() != 2 || x.ndim() != 2 || x.size(0) != c_prev.size(0) || x.size(1) != 4 * c_prev.size(1))
    throw Error(str("lstm: x has shape ", shape_str(x.shape()), " and c_prev ", shape_str(c_prev.shape()),
                    "; expected x (B, 4 U) and c_prev (B, U)"));
  return device;
}
}  // namespace

std::pair<Tensor, Tensor> lstm(const Tensor& x, const Tensor& c_prev) {
  const Device device = check_lstm_args(x, c_prev);
  Tensor c = Tensor::empty(c_prev.shape(), x.dtype(), device), h = Tensor::empty(c_prev.shape(), x.dtype(), device);
  kernels_for(device).lstm(x.contiguous(), c_prev, c, h);
  return {c, h};
}

std::pair<Tensor, Tensor> lstm_grad(const Tensor& x, const Tensor& c_prev, const Tensor& c, const Tensor& gc,
                                    const Tensor& gh) {
  const Device device = check_lstm_args(x, c_prev);
  for (const Tensor* t : {&c, &gc, &gh})
    if (t->defined() && (t->shape() != c_prev.shape() || t->dtype() != x.dtype() || t->device() != device))
      throw Error(str("lstm: a state or gradient of shape ", shape_str(t->shape()), " and dtype ",
                      dtype_name(t->dtype()), " on ", t->device().str(), "; expected ", shape_str(c_prev.shape()), " ",
                      dtype_name(x.dtype()), " on ", device.str()));
  Tensor gx = Tensor::empty(x.shape(), x.dtype(), device), gc_prev = Tensor::empty(c_prev.shape(), x.dtype(), device);
  kernels_for(device).lstm_grad(x.contiguous(), c_prev, c, gc, gh, gx, gc_prev);
  return {gx, gc_prev};
}

namespace {
// XG and HG (B, 3U) and H (B, U), of one floating dtype on one device; returns the device.
Device check_gru_args(const Tensor& xg, const Tensor& hg, const Tensor& h) {
  const Device device = require_same_device("gru", {&xg, &hg, &h});
  require_floating("gru", xg);
  require_same_dtype("gru", xg, hg);
  require_same_dtype("gru", xg, h);
  if (h.ndim() != 2 || xg.shape() != Shape{h.size(0), 3 * h.size(1)} || hg.shape() != xg.shape())
    throw Error(str("gru: the projections have shapes ", shape_str(xg.shape()), " and ", shape_str(hg.shape()),
                    " and h ", shape_str(h.shape()), "; expected (B, 3 U), (B, 3 U) and (B, U)"));
  return device;
}
}  // namespace

Tensor gru(const Tensor& xg, const Tensor& hg, const Tensor& h) {
  const Device device = check_gru_args(xg, hg, h);
  Tensor y = Tensor::empty(h.shape(), h.dtype(), device);
  kernels_for(device).gru(xg.contiguous(), hg.contiguous(), h, y);
  return y;
}

std::vector<Tensor> gru_grad(const Tensor& xg, const Tensor& hg, const Tensor& h, const Tensor& gy) {
  const Device device = check_gru_args(xg, hg, h);
  if (gy.shape() != h.shape() || gy.dtype() != h.dtype() || gy.device() != device)
    throw Error(str("gru: the output gradient has shape ", shape_str(gy.shape()), " and dtype ", dtype_name(gy.dtype()),
                    "; expected ", shape_str(h.shape()), " ", dtype_name(h.dtype())));
  Tensor gxg = Tensor::empty(xg.shape(), xg.dtype(), device), ghg = Tensor::empty(xg.shape(), xg.dtype(), device);
  Tensor gh = Tensor::empty(h.shape(), h.dtype(), device);
  kernels_for(device).gru_grad(xg.contiguous(), hg.contiguous(), h, gy, gxg, ghg, gh);
  return {gxg, ghg, gh};
}

bool has_fused_rnn(Device device) {
  const Kernels& k = kernels_for(device);
  return k.rnn_available && k.rnn_forward && k.rnn_backward && k.rnn_available();
}

namespace {
// The packed input, the states and the weights of G: one floating dtype on one device, every
// shape as G says. Returns the device.
Device check_rnn_args(const RnnGeometry& g, const Tensor& x, const Tensor& hx, const Tensor& cx,
                      const std::vector<Tensor>& weights) {
  const char* op = "rnn_forward";
  if (g.layers < 1 || (g.directions != 1 && g.directions != 2) || g.in_size < 1 || g.units < 1 || g.lengths.empty())
    throw Error(str(op, ": ", g.layers, " layers, ", g.directions, " directions, ", g.in_size, " inputs, ", g.units,
                    " units and ", g.lengths.size(), " sequences (expected positive counts, 1 or 2 directions)"));
  int64_t total = 0;
  for (size_t i = 0; i < g.lengths.size(); ++i) {
    if (g.lengths[i] < 1 || (i > 0 && g.lengths[i] > g.lengths[i - 1]))
      throw Error(str(op, ": sequence ", i, " has length ", g.lengths[i],
                      " (expected positive lengths, longest first)"));
    total += g.lengths[i];
  }
  const Device device = x.device();
  require_floating(op, x);
  if (x.shape() != Shape{total, g.in_size})
    throw Error(str(op, ": x has shape ", shape_str(x.shape()), "; expected ", shape_str({total, g.in_size}),
                    " (the sum of the lengths, the input size)"));
  const int64_t count = g.layers * g.directions, batch = int64_t(g.lengths.size());
  const Shape state{count, batch, g.units};
  for (const auto& [name, t] : {std::pair{"hx", &hx}, std::pair{"cx", &cx}}) {
    const bool wanted = std::string(name) == "hx" || g.cell == RnnCell::Lstm;
    if (!t->defined()) continue;
    if (!wanted) throw Error(str(op, ": cx is given to a stack without cell states"));
    if (t->shape() != state || t->dtype() != x.dtype() || t->device() != device)
      throw Error(str(op, ": ", name, " is ", shape_str(t->shape()), " ", dtype_name(t->dtype()), " on ",
                      t->device().str(), "; expected ", shape_str(state), " ", dtype_name(x.dtype()), " on ",
                      device.str()));
  }
  const int64_t n = g.weights_per_layer();
  if (int64_t(weights.size()) != count * 2 * n)
    throw Error(str(op, ": ", weights.size(), " weights and biases (expected ", count * 2 * n, ": ", 2 * n,
                    " for each of the ", count, " layers and directions)"));
  for (int64_t k = 0; k < count; ++k) {
    const int64_t in = k < g.directions ? g.in_size : g.units * g.directions;
    for (int64_t j = 0; j < 2 * n; ++j) {
      const Tensor& w = weights[size_t(k * 2 * n + j)];
      const Shape want = j >= n ? Shape{g.units} : j < n / 2 ? Shape{g.units, in} : Shape{g.units, g.units};
      if (w.shape() != want || w.dtype() != x.dtype() || w.device() != device)
        throw Error(str(op, ": ", j < n ? "w" : "b", j % n, " of layer ", k / g.directions, " direction ",
                        k % g.directions, " is ", shape_str(w.shape()), " ", dtype_name(w.dtype()), " on ",
                        w.device().str(), "; expected ", shape_str(want), " ", dtype_name(x.dtype()), " on ",
                        device.str()));
    }
  }
  if (!has_fused_rnn(device))
    throw Error(str(op, ": ", device.str(), " has no fused recurrent stacks (nn/functions/n_step_rnn.h composes them)"));
  return device;
}

// T contiguous, or zeros of SHAPE when undefined.
Tensor or_zeros(const Tensor& t, const Shape& shape, DType dtype, Device device) {
  return t.defined() ? t.contiguous() : Tensor::zeros(shape, dtype, device);
}

std::vector<Tensor> contiguous(const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  out.reserve(ts.size());
  for (const Tensor& t : ts) out.push_back(t.contiguous());
  return out;
}
}  // namespace

RnnForward rnn_forward(const RnnGeometry& g, const Tensor& x, const Tensor& hx, const Tensor& cx,
                       const std::vector<Tensor>& weights, bool for_backward) {
  const Device device = check_rnn_args(g, x, hx, cx, weights);
  const DType dtype = x.dtype();
  const Shape state{g.layers * g.directions, int64_t(g.lengths.size()), g.units};
  const bool lstm = g.cell == RnnCell::Lstm;
  RnnForward f;
  f.y = Tensor::empty({x.size(0), g.units * g.directions}, dtype, device);
  f.hy = Tensor::empty(state, dtype, device);
  if (lstm) f.cy = Tensor::empty(state, dtype, device);
  kernels_for(device).rnn_forward(g, x.contiguous(), or_zeros(hx, state, dtype, device),
                                  lstm ? or_zeros(cx, state, dtype, device) : Tensor(), contiguous(weights),
                                  for_backward, f.y, f.hy, f.cy, f.reserve);
  return f;
}

RnnGradients rnn_backward(const RnnGeometry& g, const Tensor& x, const Tensor& hx, const Tensor& cx,
                          const std::vector<Tensor>& weights, RnnForward& f, const Tensor& gy, const Tensor& ghy,
                          const Tensor& gcy, bool weight_grads) {
  const Device device = check_rnn_args(g, x, hx, cx, weights);
  if (!f.reserve.defined())
    throw Error("rnn_backward: the forward kept nothing for the backward (it ran with for_backward false), or its "
                "backward has run already");
  const DType dtype = x.dtype();
  const Shape state{g.layers * g.directions, int64_t(g.lengths.size()), g.units};
  const bool lstm = g.cell == RnnCell::Lstm;
  for (const Tensor* t : {&gy, &ghy, &gcy})
    if (t->defined() && (t->dtype() != dtype || t->device() != device))
      throw Error(str("rnn_backward: a gradient is ", dtype_name(t->dtype()), " on ", t->device().str(), "; expected ",
                      dtype_name(dtype), " on ", device.str()));
  RnnGradients r;
  r.gx = Tensor::empty(x.shape(), dtype, device);
  r.ghx = Tensor::empty(state, dtype, device);
  if (lstm) r.gcx = Tensor::empty(state, dtype, device);
  if (weight_grads)
    for (const Tensor& w : weights) r.gweights.push_back(Tensor::empty(w.shape(), dtype, device));
  kernels_for(device).rnn_backward(g, x.contiguous(), or_zeros(hx, state, dtype, device),
                                   lstm ? or_zeros(cx, state, dtype, device) : Tensor(), contiguous(weights), f.y,
                                   f.reserve, or_zeros(gy, f.y.shape(), dtype, device),
                                   or_zeros(ghy, state, dtype, device),
                                   lstm ? or_zeros(gcy, state, dtype, device) : Tensor(), r.gx, r.ghx, r.gcx,
                                   r.gweights);
  f.reserve = Tensor();  // cuDNN writes into it: one backward per forward
  return r;
}

}  // namespace chainer::ops
