// CPU kernels behind core/ops.h. Arguments are already checked by ops.cpp; outputs are
// preallocated contiguous tensors.
#pragma once
#include <vector>

#include "core/tensor.h"

namespace chainer {
class Generator;
}

namespace chainer::cpu {

enum class BinaryOp { Add, Sub, Mul, Div };
enum class UnaryOp { Neg, Exp, Log, Sqrt, Square, Relu, Sigmoid, Tanh };
enum class GradOp { Relu, Sigmoid, Tanh };

void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out);  // out has the broadcast shape
void unary(UnaryOp op, const Tensor& a, Tensor& out);
void broadcast_copy(const Tensor& a, Tensor& out);  // out (contiguous) = a broadcast to out's shape
void affine(const Tensor& a, double mul, double add, Tensor& out);  // out = a * mul + add
void activation_grad(GradOp op, const Tensor& y, const Tensor& gy, Tensor& out);
void axpy(Tensor& y, double alpha, const Tensor& x);

void sum_axes(const Tensor& a, const std::vector<bool>& reduce, Tensor& out);  // out keeps dims (extent 1)
void max_axis(const Tensor& a, int64_t axis, Tensor& out, Tensor* argmax);

void gemm(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, double alpha, double beta, Tensor& c);
// Eigen's product: the fallback of gemm (float64, CPUs without AVX-512, CHAINER_GEMM=eigen).
void eigen_gemm(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, double alpha, double beta, Tensor& c);
// Which float32 path gemm takes: "packed-avx512" or "eigen".
const char* gemm_backend();

void softmax(const Tensor& x, int64_t axis, bool log, Tensor& out);

// Fused steps of nn/functions (core/cpu/nn.cpp).
void add_bias(Tensor& y, const Tensor& b, bool relu);  // y 2-D contiguous; b may be undefined
void softmax_grad(const Tensor& y, const Tensor& gy, int64_t axis, bool log, Tensor& gx);
// Returns the row of the first label outside [0, C) that is not IGNORE_LABEL, or -1 when all
// are valid (then LOSS, LSE and COUNT are filled).
int64_t softmax_cross_entropy(const Tensor& x, const Tensor& t, int64_t ignore_label, Tensor& loss, Tensor& lse,
                              int64_t& count);
void softmax_cross_entropy_grad(const Tensor& x, const Tensor& t, const Tensor& lse, const Tensor& gloss, double scale,
                                int64_t ignore_label, Tensor& gx);
void dropout_mask(double ratio, Generator& gen, Tensor& mask);
void accuracy(const Tensor& y, const Tensor& t, int64_t ignore_label, int64_t& correct, int64_t& total);

}  // namespace chainer::cpu
