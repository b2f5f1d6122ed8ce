// Flat buffers of gradients for collectives: packing, scaling and checking, in one place and
// through core/ops, so the same code serves host and device memory (the communicators and the
// gradient reducer used to do it three ways with raw loops over host pointers).
#pragma once
#include <functional>
#include <map>
#include <vector>

#include "core/tensor.h"

namespace chainermn::packing {

using chainer::Tensor;

// DST[offset : offset + n] = SRC (n elements, any shape; converted to DST's dtype) * FACTOR.
// DST is flat and contiguous.
void pack_one(const Tensor& src, Tensor& dst, int64_t offset, double factor = 1.0);
// SRCS one after another from the start of DST.
void pack(const std::vector<Tensor>& srcs, Tensor& dst, double factor = 1.0);
// Each of DSTS (contiguous) = its part of SRC, in order, * FACTOR: the reverse of pack.
void unpack(const Tensor& src, const std::vector<Tensor>& dsts, double factor = 1.0);
// DST[offset : offset + n] = 0.
void zero(Tensor& dst, int64_t offset, int64_t n);
// The packed reduction of the flat-buffer communicators: per dtype, in dtype order (the same
// on every rank), GRADS of that dtype are packed into its buffer in BUFFERS (kept across calls,
// grown when a model needs more), SUM sums the packed elements over the ranks in place, and
// each gradient gets its part back times FACTOR.
void reduce_packed(const std::vector<Tensor>& grads, std::map<chainer::DType, Tensor>& buffers, double factor,
                   const std::function<void(Tensor& packed)>& sum);
// Whether every element of T is finite (no NaN or infinity); reads one number on the host.
bool all_finite(const Tensor& t);

}  // namespace chainermn::packing
