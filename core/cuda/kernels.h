// CUDA kernels behind core/ops.h, collected in the CUDA kernel table; the same signatures and
// contract as core/cpu/kernels.h (core/kernels.h states it). Each queues work on the current
// device's compute stream and returns.
#pragma once
#include <vector>

#include "core/kernels.h"

namespace chainer::cuda {

// core/cuda/elementwise.cu
void fill(Tensor& out, double value);
void copy(const Tensor& src, Tensor& dst);
void take_rows(const Tensor& src, const std::vector<int64_t>& rows, Tensor& out);
void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out);
void unary(UnaryOp op, const Tensor& a, Tensor& out);
void broadcast_copy(const Tensor& a, Tensor& out);
void affine(const Tensor& a, double mul, double add, Tensor& out);
void activation_grad(GradOp op, const Tensor& y, const Tensor& gy, Tensor& out);
void axpy(Tensor& y, double alpha, const Tensor& x);
void accumulate(Tensor& acc, const Tensor& value);

// core/cuda/reduce.cu
void sum_axes(const Tensor& a, const std::vector<bool>& reduce, Tensor& out);
void max_axis(const Tensor& a, int64_t axis, Tensor& out, Tensor* argmax);
void sum_of_squares(const std::vector<Tensor>& xs, Tensor& out);

// core/cuda/blas.cu (cuBLAS)
void gemm(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, double alpha, double beta, Tensor& c);

// core/cuda/nn.cu
void softmax(const Tensor& x, int64_t axis, bool log, Tensor& out);
void softmax_grad(const Tensor& y, const Tensor& gy, int64_t axis, bool log, Tensor& gx);
void add_bias(Tensor& y, const Tensor& b, bool relu);
int64_t softmax_cross_entropy(const Tensor& x, const Tensor& t, int64_t ignore_label, LossReduction reduction,
                              Tensor& loss, Tensor& lse, Tensor& reduced, Tensor& scale);
void softmax_cross_entropy_grad(const Tensor& x, const Tensor& t, const Tensor& lse, const Tensor& gloss,
                                const Tensor& scale, int64_t ignore_label, Tensor& gx);
void dropout_mask(double ratio, Generator& gen, Tensor& mask);
void accuracy(const Tensor& y, const Tensor& t, int64_t ignore_label, Tensor& out);

// core/cuda/update.cu
void update(UpdateRule rule, std::vector<ParamTensors>& params, const UpdateScalarsFn& scalars);
void clip_by_norm(std::vector<Tensor>& grads, double threshold);

}  // namespace chainer::cuda
