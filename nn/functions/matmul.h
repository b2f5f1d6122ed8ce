/// @file
/// Matrix products, as chainer.functions.matmul: of 2-D variables, of stacks of matrices with
/// numpy.matmul's broadcasting of the leading axes, and of vectors; and batch_matmul.
#pragma once
#include "autograd/variable.h"

namespace chainer::functions {

/// `op(a) @ op(b)`, op transposing the last two axes when TRANSA / TRANSB is set, as numpy.matmul:
/// 2-D operands give the matrix product; operands of 3 or more axes are stacks of matrices in
/// their last two axes, the leading axes broadcast (a 2-D operand is one matrix for the whole
/// stack); a 1-D A is a row vector and a 1-D B a column vector, whose axis is dropped from the
/// result (and which the flags leave alone). Two 1-D operands give their dot product.
Variable matmul(const Variable& a, const Variable& b, bool transa = false, bool transb = false);

/// Chainer's batch_matmul: products of the matrices of two batches, A (B, M, K) and B (B, K, N)
/// (or transposed by the flags); a 2-D operand (B, M) is a batch of column vectors (B, M, 1), and
/// one of more axes is flattened to (B, M, -1). Returns (B, ., .).
Variable batch_matmul(const Variable& a, const Variable& b, bool transa = false, bool transb = false);

}  // namespace chainer::functions
