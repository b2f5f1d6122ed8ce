/// @file
/// chainer::functions, the differentiable functions of Chainer's `chainer.functions`:
///
///     namespace F = chainer::functions;
///     Variable loss = F::softmax_cross_entropy(F::linear(F::relu(F::linear(x, W1, b1)), W2, b2), t);
///
/// Each computes its forward on tensors and records a graph node only when some input requires
/// a gradient and backprop is enabled (see NoBackpropMode).
#pragma once
#include "nn/functions/accuracy.h"
#include "nn/functions/activation.h"
#include "nn/functions/arithmetic.h"
#include "nn/functions/array.h"
#include "nn/functions/batch_normalization.h"
#include "nn/functions/cast.h"
#include "nn/functions/convolution_2d.h"
#include "nn/functions/deconvolution_2d.h"
#include "nn/functions/dropout.h"
#include "nn/functions/embed_id.h"
#include "nn/functions/get_item.h"
#include "nn/functions/huber_loss.h"
#include "nn/functions/linear.h"
#include "nn/functions/local_response_normalization.h"
#include "nn/functions/lstm.h"
#include "nn/functions/math.h"
#include "nn/functions/matmul.h"
#include "nn/functions/n_step_rnn.h"
#include "nn/functions/pair.h"
#include "nn/functions/pooling.h"
#include "nn/functions/mean_squared_error.h"
#include "nn/functions/reduction.h"
#include "nn/functions/sequence.h"
#include "nn/functions/sigmoid_cross_entropy.h"
#include "nn/functions/softmax.h"
#include "nn/functions/softmax_cross_entropy.h"
#include "nn/functions/where.h"
