// CPU kernels behind core/ops.h, collected in the CPU kernel table (core/kernels.h states the
// contract: arguments already checked, outputs preallocated and contiguous).
#pragma once
#include <vector>

#include "core/kernels.h"

namespace chainer::cpu {

void fill(Tensor& out, double value);
void copy(const Tensor& src, Tensor& dst);
void take_rows(const Tensor& src, const std::vector<int64_t>& rows, Tensor& out);

void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out);  // out has the broadcast shape
void unary(UnaryOp op, const Tensor& a, Tensor& out);
void broadcast_copy(const Tensor& a, Tensor& out);  // out (contiguous) = a broadcast to out's shape
void affine(const Tensor& a, double mul, double add, Tensor& out);  // out = a * mul + add
void activation_grad(GradOp op, const Tensor& y, const Tensor& gy, Tensor& out);
void axpy(Tensor& y, double alpha, const Tensor& x);
void accumulate(Tensor& acc, const Tensor& value);

void sum_axes(const Tensor& a, const std::vector<bool>& reduce, Tensor& out);  // out keeps dims (extent 1)
void max_axis(const Tensor& a, int64_t axis, Tensor& out, Tensor* argmax);
void sum_of_squares(const std::vector<Tensor>& xs, Tensor& out);

void gemm(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, double alpha, double beta, Tensor& c);
// Eigen's product: the fallback of gemm (float64, CPUs without AVX-512, CHAINER_GEMM=eigen).
void eigen_gemm(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, double alpha, double beta, Tensor& c);
// Which float32 path gemm takes: "packed-avx512" or "eigen".
const char* gemm_backend();

void softmax(const Tensor& x, int64_t axis, bool log, Tensor& out);

// Fused steps of nn/functions (core/cpu/nn.cpp).
void add_bias(Tensor& y, const Tensor& b, bool relu);  // y 2-D contiguous; b may be undefined
void softmax_grad(const Tensor& y, const Tensor& gy, int64_t axis, bool log, Tensor& gx);
int64_t softmax_cross_entropy(const Tensor& x, const Tensor& t, int64_t ignore_label, LossReduction reduction,
                              Tensor& loss, Tensor& lse, Tensor& reduced, Tensor& scale);
void softmax_cross_entropy_grad(const Tensor& x, const Tensor& t, const Tensor& lse, const Tensor& gloss,
                                const Tensor& scale, int64_t ignore_label, Tensor& gx);
void dropout_mask(double ratio, Generator& gen, Tensor& mask);
void accuracy(const Tensor& y, const Tensor& t, int64_t ignore_label, Tensor& out);

// Optimizer updates (core/cpu/update.cpp).
void update(UpdateRule rule, std::vector<ParamTensors>& params, const UpdateScalarsFn& scalars);
void clip_by_norm(std::vector<Tensor>& grads, double threshold);

}  // namespace chainer::cpu
