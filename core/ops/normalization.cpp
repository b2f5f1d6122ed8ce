// Local response normalization and its gradient, and the per-channel sums and affine pass of
// batch normalization. The kernels are in core/cpu/normalization.cpp and core/cuda/normalization.cu.
#include "core/ops/ops.h"

#include "core/ops/checks.h"
#include "core/ops/kernels.h"

namespace chainer::ops {

using detail::require_same_device;
using detail::require_same_dtype;
using detail::require_floating;
using detail::require_floating_or_half;

namespace {
void check_local_response_normalization(const char* op, const Tensor& x, int64_t n) {
  require_floating(op, x);
  if (x.ndim() < 2)
    throw Error(str(op, ": x has shape ", shape_str(x.shape()), "; expected (N, C, ...), the channels on axis 1"));
  if (n < 1) throw Error(str(op, ": n is ", n, "; the channel window must hold at least 1 channel"));
}
}  // namespace

LocalResponseNormalizationResult local_response_normalization(const Tensor& x, int64_t n, double k, double alpha,
                                                              double beta) {
  const char* op = "local_response_normalization";
  const Device device = require_same_device(op, {&x});
  check_local_response_normalization(op, x, n);
  LocalResponseNormalizationResult r{Tensor::empty(x.shape(), x.dtype(), device),
                                     Tensor::empty(x.shape(), x.dtype(), device)};
  if (x.numel() > 0) kernels_for(device).local_response_normalization(x, n, k, alpha, beta, r.y, r.unit_scale);
  return r;
}

Tensor local_response_normalization_grad(const Tensor& x, const Tensor& y, const Tensor& unit_scale, const Tensor& gy,
                                         int64_t n, double alpha, double beta) {
  const char* op = "local_response_normalization_grad";
  const Device device = require_same_device(op, {&x, &y, &unit_scale, &gy});
  check_local_response_normalization(op, x, n);
  for (const Tensor* t : {&y, &unit_scale, &gy}) {
    require_same_dtype(op, x, *t);
    if (t->shape() != x.shape())
      throw Error(str(op, ": an array has shape ", shape_str(t->shape()), " but x has shape ", shape_str(x.shape())));
  }
  Tensor gx = Tensor::empty(x.shape(), x.dtype(), device);
  if (x.numel() > 0) kernels_for(device).local_response_normalization_grad(x, y, unit_scale, gy, n, alpha, beta, gx);
  return gx;
}

namespace {
// T as the kernels take it: contiguous, NUMEL elements, LIKE's device and dtype (or undefined).
// A per-channel COEFFICIENT of half arrays may be float32 instead.
Tensor channel_operand(const char* op, const char* name, const Tensor& t, const Tensor& like, int64_t numel,
                       bool coefficient = false) {
  if (!t.defined()) return t;
  require_same_device(op, {&like, &t});
  if (!(coefficient && is_half(like.dtype()) && t.dtype() == DType::Float32)) require_same_dtype(op, like, t);
  if (t.numel() != numel)
    throw Error(str(op, ": ", name, " has shape ", shape_str(t.shape()), " (", t.numel(), " elements; expected ",
                    numel, ")"));
  return t.contiguous();
}
}  // namespace

Tensor channel_sums(const Tensor& a, const Tensor& b, const Tensor& center, const ChannelView& view) {
  const char* op = "channel_sums";
  const Device device = require_same_device(op, {&a});
  require_floating_or_half(op, a);
  const int64_t n = view.outer * view.channels * view.inner;
  const Tensor ac = channel_operand(op, "a", a, a, n);
  const Tensor bc = channel_operand(op, "b", b, a, n);
  const Tensor cc = channel_operand(op, "center", center, a, view.channels, true);
  Tensor sums = Tensor::zeros({2 * view.channels}, DType::Float64, device);
  if (n > 0) kernels_for(device).channel_sums(ac, bc, cc, view, sums);
  return sums;
}

Tensor channel_affine(const ChannelAffine& args, const ChannelView& view) {
  const char* op = "channel_affine";
  const Tensor& like = args.u.defined() ? args.u : args.v;
  if (!like.defined()) throw Error(str(op, ": u and v are both undefined"));
  const Device device = require_same_device(op, {&like});
  require_floating_or_half(op, like);
  const int64_t n = view.outer * view.channels * view.inner, c = view.channels;
  ChannelAffine k{channel_operand(op, "u", args.u, like, n), channel_operand(op, "s", args.s, like, c, true),
                  channel_operand(op, "v", args.v, like, n), channel_operand(op, "t", args.t, like, c, true),
                  channel_operand(op, "m", args.m, like, c, true), channel_operand(op, "d", args.d, like, c, true)};
  if (k.u.defined() != k.s.defined() || k.v.defined() != k.t.defined() || k.v.defined() != k.m.defined() ||
      !k.d.defined())
    throw Error(str(op, ": each array needs its coefficients (u: s; v: t and m) and d is required"));
  if (k.u.defined() && k.v.defined() && k.u.shape() != k.v.shape())
    throw Error(str(op, ": u and v have shapes ", shape_str(k.u.shape()), " and ", shape_str(k.v.shape())));
  Tensor out = Tensor::empty(like.shape(), like.dtype(), device);
  if (n > 0) kernels_for(device).channel_affine(k, view, out);
  return out;
}

}  // namespace chainer::ops
