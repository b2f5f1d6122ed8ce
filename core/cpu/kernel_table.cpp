// This family's kernel table, and the family as the dispatch (core/cpu/family.h) sees it.
#include "core/cpu/kernels.h"

namespace chainer::cpu::CHAINER_ISA {

namespace {
// Constant-initialized (every entry a function's address): nothing of a family runs before the
// dispatch picks it, not even a static initializer, on a CPU that may lack its instructions.
constexpr Kernels kTable{
    .fill = fill,
    .copy = copy,
    .take_rows = take_rows,
    .binary = binary,
    .unary = unary,
    .broadcast_copy = broadcast_copy,
    .affine = affine,
    .activation_grad = activation_grad,
    .axpy = axpy,
    .accumulate = accumulate,
    .compare = compare,
    .where = where,
    .clip = clip,
    .parametric_activation = parametric_activation,
    .parametric_activation_grad = parametric_activation_grad,
    .sum_axes = sum_axes,
    .max_axis = max_axis,
    .min_axis = min_axis,
    .sum_of_squares = sum_of_squares,
    .gemm = gemm,
    .softmax = softmax,
    .softmax_grad = softmax_grad,
    .add_bias = add_bias,
    .softmax_cross_entropy = softmax_cross_entropy,
    .softmax_cross_entropy_grad = softmax_cross_entropy_grad,
    .dropout_mask = dropout_mask,
    .accuracy = accuracy,
    .sigmoid_cross_entropy = sigmoid_cross_entropy,
    .sigmoid_cross_entropy_grad = sigmoid_cross_entropy_grad,
    .convolution_2d = convolution_2d,
    .convolution_2d_grad_data = convolution_2d_grad_data,
    .convolution_2d_grad_filter = convolution_2d_grad_filter,
    .max_pooling_2d = max_pooling_2d,
    .max_pooling_2d_grad = max_pooling_2d_grad,
    .window_sum_2d = window_sum_2d,
    .window_spread_2d = window_spread_2d,
    .local_response_normalization = local_response_normalization,
    .local_response_normalization_grad = local_response_normalization_grad,
    .channel_sums = channel_sums,
    .channel_affine = channel_affine,
    .update = update,
    .clip_by_norm = clip_by_norm,
    .take = take,
    .scatter_add = scatter_add,
};

#if defined(CHAINER_ISA_AVX512)
constexpr Isa kIsa = Isa::Avx512;
#elif defined(CHAINER_ISA_AVX2)
constexpr Isa kIsa = Isa::Avx2;
#else
constexpr Isa kIsa = Isa::Generic;
#endif
constexpr KernelFamily kFamily{kIsa, &kTable, gemm_backend, gemm_blocking, widen_half, narrow_half};
}  // namespace

const KernelFamily& kernel_family() { return kFamily; }

}  // namespace chainer::cpu::CHAINER_ISA
