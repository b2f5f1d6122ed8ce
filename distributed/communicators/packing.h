// Flat buffers of gradients for collectives: packing, scaling and checking, in one place and
// through core/ops, so the same code serves host and device memory (the communicators and the
// gradient reducer used to do it three ways with raw loops over host pointers).
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "core/tensor/tensor.h"

namespace chainermn::packing {

using chainer::Tensor;

// DST[offset : offset + n] = SRC (n elements, any shape; converted to DST's dtype) * FACTOR.
// DST is flat and contiguous. Across dtypes SRC is scaled in its own dtype and then converted
// (DST may be float16 or bfloat16, which have no arithmetic).
void pack_one(const Tensor& src, Tensor& dst, int64_t offset, double factor = 1.0);
// SRCS one after another from the start of DST.
void pack(const std::vector<Tensor>& srcs, Tensor& dst, double factor = 1.0);
// Each of DSTS (contiguous) = its part of SRC, in order, * FACTOR: the reverse of pack. Across
// dtypes the part is converted and then scaled in the destination's dtype.
void unpack(const Tensor& src, const std::vector<Tensor>& dsts, double factor = 1.0);
// DST[offset : offset + n] = 0.
void zero(Tensor& dst, int64_t offset, int64_t n);
// The packed reduction of the flat-buffer communicators. GRADS are grouped by the dtype they
// travel in: WIRE_DTYPE when given (CommunicatorOptions::allreduce_grad_dtype), else each
// gradient's own. Group by group, in dtype order (the same on every rank), they are packed into
// that dtype's buffer in BUFFERS (kept across calls, grown when a model needs more), SUM sums the
// packed elements over the ranks in place, and each gradient gets its part back times FACTOR, in
// its own dtype. A gradient that travels in its own dtype is scaled on the way back, as it always
// was; one cast to another dtype is scaled before the cast, so that a sum of float16 values whose
// mean fits float16 cannot overflow on the way.
void reduce_packed(const std::vector<Tensor>& grads, std::map<chainer::DType, Tensor>& buffers, double factor,
                   const std::function<void(Tensor& packed)>& sum,
                   std::optional<chainer::DType> wire_dtype = std::nullopt);
// Whether every element of T is finite (no NaN or infinity); reads one number on the host.
bool all_finite(const Tensor& t);

}  // namespace chainermn::packing
