#include "distributed/communicators/packing.h"

#include <cmath>

#include "core/ops.h"

namespace chainermn::packing {

void pack_one(const Tensor& src, Tensor& dst, int64_t offset, double factor) {
  const int64_t n = src.numel();
  Tensor part = dst.narrow(0, offset, n);
  const Tensor flat = (src.dtype() == dst.dtype() ? src : src.astype(dst.dtype())).reshape({n});
  if (factor == 1.0) part.copy_(flat);
  else chainer::ops::scale_to_(part, flat, factor);
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
    if (factor == 1.0) d.copy_(part);
    else chainer::ops::scale_to_(d, part, factor);
    offset += n;
  }
}

void zero(Tensor& dst, int64_t offset, int64_t n) {
  Tensor part = dst.narrow(0, offset, n);
  part.fill_(0.0);
}

void reduce_packed(const std::vector<Tensor>& grads, std::map<chainer::DType, Tensor>& buffers, double factor,
                   const std::function<void(Tensor& packed)>& sum) {
  std::map<chainer::DType, std::vector<Tensor>> groups;
  for (const Tensor& g : grads) groups[g.dtype()].push_back(g);
  for (auto& [dtype, gs] : groups) {
    int64_t total = 0;
    for (const Tensor& g : gs) total += g.numel();
    Tensor& buf = buffers[dtype];
    if (!buf.defined() || buf.numel() < total) buf = Tensor::empty({total}, dtype);
    Tensor packed = buf.narrow(0, 0, total);
    pack(gs, packed);
    sum(packed);
    unpack(packed, gs, factor);
  }
}

bool all_finite(const Tensor& t) {
  // 0 * x is 0 for every finite x and NaN for NaN and infinities, so the sum is NaN exactly when
  // some element is not finite (the sum of zeros cannot overflow).
  return std::isfinite(chainer::ops::sum(chainer::ops::mul_scalar(t, 0.0)).item_double());
}

}  // namespace chainermn::packing
