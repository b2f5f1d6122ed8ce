// CUDA kernels behind core/ops/ops.h, collected in the CUDA kernel table (core/cuda/runtime.cu); the
// same signatures and contract as the CPU's (core/ops/kernel_list.def). Each queues work on the
// current device's compute stream and returns. Files, one per family, paired with core/cpu/'s:
// elementwise.cu (memory, elementwise, the linear epilogue), reduce.cu (reductions), gemm.cu
// (cuBLAS), softmax.cu, loss.cu (the losses and accuracy), dropout.cu, update.cu (optimizer
// updates), indexing.cu (gather and scatter-add along an axis), conv.cu (convolutions on cuDNN),
// pooling.cu (2-D pooling), normalization.cu (batch and local response normalization), rnn.cu
// (recurrent cells).
#pragma once
#include <vector>

#include "core/ops/kernels.h"

namespace chainer::cuda {

// The kernel functions of core/ops/kernel_list.def, which this file's sources define.
#define CHAINER_KERNEL(RETURN, NAME, PARAMETERS) RETURN NAME PARAMETERS;
#include "core/ops/kernel_list.def"

}  // namespace chainer::cuda
