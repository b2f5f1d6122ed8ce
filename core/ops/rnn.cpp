// Recurrent cells: the checks of the fused LSTM and GRU steps and their gradients. The kernels
// are in core/cpu/rnn.cpp and core/cuda/rnn.cu.
#include "core/ops/ops.h"

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

}  // namespace chainer::ops
