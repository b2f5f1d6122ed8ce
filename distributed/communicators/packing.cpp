#include "distributed/communicators/packing.h"

#include "core/ops/ops.h"
#include "nn/loss_scaler.h"

namespace chainermn::packing {

void pack_one(const Tensor& src, Tensor& dst, int64_t offset, double factor) {
  const int64_t n = src.numel();
  Tensor part = dst.narrow(0, offset, n);
  const Tensor flat = src.reshape({n});
  if (factor == 1.0) part.copy_(flat);  // converts the dtype
  else if (src.dtype() == dst.dtype()) chainer::ops::scale_to_(part, flat, factor);
  else part.copy_(chainer::ops::mul_scalar(flat, factor));
}

void pack(const std::vector<Tensor>& srcs, Tensor& dst, double factor) {
  int64_t offset = 0;
  for (const Tensor& s : srcs) {
    pack_one(s, dst, offset, factor);
    offset += s.numel();
  }
}

void unpack(const Tensor& src, const std::vector<Tensor>& dsts, double factor) {
  int64_t offset = 0;
  for (Tensor d : dsts) {
    const int64_t n = d.numel();
    const Tensor part = src.narrow(0, offset, n).reshape(d.shape());
    if (factor == 1.0) {
      d.copy_(part);  // converts the dtype
    } else if (part.dtype() == d.dtype()) {
      chainer::ops::scale_to_(d, part, factor);
    } else {
      d.copy_(part);
      chainer::ops::scale_(d, factor);
    }
    offset += n;
  }
}

void zero(Tensor& dst, int64_t offset, int64_t n) {
  Tensor part = dst.narrow(0, offset, n);
  part.fill_(0.0);
}

void reduce_packed(const std::vector<Tensor>& grads, std::map<chainer::DType, Tensor>& buffers, double factor,
                   const std::function<void(Tensor& packed)>& sum, std::optional<chainer::DType> wire_dtype) {
  std::map<chainer::DType, std::vector<Tensor>> groups;
  for (const Tensor& g : grads) groups[wire_dtype.value_or(g.dtype())].push_back(g);
  for (auto& [dtype, gs] : groups) {
    int64_t total = 0;
    for (const Tensor& g : gs) total += g.numel();
    Tensor& buf = buffers[dtype];
    const chainer::Device device = gs.front().device();  // a model's gradients share its device
    if (!buf.defined() || buf.numel() < total || buf.device() != device) buf = Tensor::empty({total}, dtype, device);
    Tensor packed = buf.narrow(0, 0, total);
    int64_t offset = 0;
    for (const Tensor& g : gs) {
      pack_one(g, packed, offset, g.dtype() == dtype ? 1.0 : factor);
      offset += g.numel();
    }
    sum(packed);
    offset = 0;
    for (const Tensor& g : gs) {
      unpack(packed.narrow(0, offset, g.numel()), {g}, g.dtype() == dtype ? factor : 1.0);
      offset += g.numel();
    }
  }
}

bool all_finite(const Tensor& t) { return chainer::all_finite(t); }

}  // namespace chainermn::packing
