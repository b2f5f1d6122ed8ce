/// @file
/// The small types of the tensor ops' arguments (core/ops/ops.h, core/ops/update_ops.h) that users and
/// optimizers name: pooling windows, channel views, loss reductions, convolution geometry, and the
/// optimizer rules of the fused update with their per-parameter tensors and scalars. Public; the
/// kernel table that takes them (core/ops/kernels.h) is not.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/tensor/tensor.h"

namespace chainer {

/// A 2-D pooling window over the last two axes of NCHW arrays: its size, its stride and the
/// zero-based padding added on both sides of each axis (Chainer's ksize, stride, pad).
struct Window2D {
  int64_t kh = 1;  ///< the window's height
  int64_t kw = 1;  ///< the window's width
  int64_t sy = 1;  ///< the stride along the height
  int64_t sx = 1;  ///< the stride along the width
  int64_t ph = 0;  ///< the padding along the height
  int64_t pw = 0;  ///< the padding along the width
};

/// A contiguous array seen as (outer, channels, inner): what the per-channel kernels of the
/// normalizations reduce over (outer and inner) and keep (channels).
struct ChannelView {
  int64_t outer = 1;     ///< the extent of the axes before the channels
  int64_t channels = 1;  ///< the extent of the channel axes
  int64_t inner = 1;     ///< the extent of the axes after the channels
};

/// The operands of the `channel_affine` kernel: `out = s[c] u + t[c] (v - m[c]) + d[c]` for the
/// channel c of each element. U and V are contiguous arrays of OUT's shape; either may be
/// undefined, dropping its term (S with U; T and M with V). S, T, M and D: contiguous (C,) of
/// OUT's dtype, or float32 when OUT is half (batch normalization keeps its statistics in
/// float32 for half activations), D always defined.
struct ChannelAffine {
  Tensor u = {};  ///< the first array (batch normalization's output gradient), or undefined
  Tensor s = {};  ///< its per-channel factor
  Tensor v = {};  ///< the centred array (batch normalization's input), or undefined
  Tensor t = {};  ///< its per-channel factor
  Tensor m = {};  ///< its per-channel centre
  Tensor d = {};  ///< the per-channel offset
};

/// How softmax_cross_entropy reduces its per-example losses.
enum class LossReduction {
  None,          ///< per-example losses
  MeanOverValid, ///< their sum divided by the rows not ignored (at least 1): Chainer's normalize=True
  MeanOverBatch  ///< their sum divided by the batch size (at least 1)
};

/// The geometry of one 2-D convolution: the window (kh, kw) with its stride, padding and
/// dilation per axis, the output grid (out_h, out_w), given explicitly so that cover_all and
/// deconvolution's outsize need nothing more, and the channel groups. Output position (oy, ox)
/// with window offset (i, j) reads image pixel (oy*sy - ph + i*dy, ox*sx - pw + j*dx), 0
/// outside the image.
struct Conv2dGeometry {
  int64_t kh = 1;     ///< the window's rows
  int64_t kw = 1;     ///< the window's columns
  int64_t sy = 1;     ///< the stride along the rows
  int64_t sx = 1;     ///< the stride along the columns
  int64_t ph = 0;     ///< the padding before the first row
  int64_t pw = 0;     ///< the padding before the first column
  int64_t dy = 1;     ///< the dilation along the rows
  int64_t dx = 1;     ///< the dilation along the columns
  int64_t out_h = 0;  ///< the output grid's rows
  int64_t out_w = 0;  ///< the output grid's columns
  int64_t groups = 1; ///< channel groups, each convolved apart
};

/// The cell of a recurrent stack (nn/functions/n_step_rnn.h): LSTM, GRU, or a plain RNN with tanh
/// or ReLU.
enum class RnnCell { Lstm, Gru, Tanh, Relu };
/// A stack of recurrent layers over packed variable-length sequences, what the library kernels
/// rnn_forward and rnn_backward run: LAYERS layers of UNITS units in DIRECTIONS (1 or 2)
/// directions over inputs of IN_SIZE features; LENGTHS: each sequence's length, longest first.
struct RnnGeometry {
  RnnCell cell = RnnCell::Lstm;  ///< the cell of every layer
  int64_t layers = 1;            ///< the stacked layers
  int64_t directions = 1;        ///< 1, or 2 for bidirectional layers
  int64_t in_size = 0;           ///< the first layer's input features
  int64_t units = 0;             ///< the units of each layer and direction
  std::vector<int32_t> lengths;  ///< each sequence's length, longest first
  /// Weights and biases per layer and direction: 8 (LSTM), 6 (GRU) or 2 (RNN) of each.
  int64_t weights_per_layer() const { return cell == RnnCell::Lstm ? 8 : cell == RnnCell::Gru ? 6 : 2; }
};

/// The tensors of one parameter in a fused optimizer step (all contiguous, one shape and dtype;
/// state tensors unused by the rule are undefined). The states, in the order of each rule's
/// Chainer state names (see update_rule_states()).
struct ParamTensors {
  Tensor param;   ///< the parameter
  Tensor grad;    ///< its gradient
  Tensor state0;  ///< the first state: v, m, h, ms, msg, n or mem
  Tensor state1;  ///< the second state: Adam's v, AdaDelta's msdx, RMSpropGraves' and SMORMS3's g
  Tensor state2;  ///< the third state: AMSGrad's vhat, RMSpropGraves' delta, SMORMS3's g2
};
/// The scalars of parameter i's step, each named after the Chainer hyperparameter it carries;
/// a rule reads only its own (see ops::update_). They may change every step (Adam's bias
/// correction, a learning-rate schedule), so kernels ask for them through a function instead of
/// taking them as values: the CPU calls it at once; CUDA calls it before the launch and again
/// before every replay of a step captured into a CUDA graph (core/device/cuda.h), so a replayed step
/// reads this step's values. The function must outlive the graphs (it belongs to the optimizer).
struct UpdateScalars {
  double lr = 0;       ///< the learning rate; Adam and AMSGrad: the bias-corrected step
  double beta1 = 0;    ///< Adam: decay of the first moment
  double beta2 = 0;    ///< Adam: decay of the second moment
  double eps = 0;      ///< Adam, AdaGrad, RMSprop, AdaDelta, RMSpropGraves, SMORMS3: the stabilizer
  double eta = 1.0;    ///< Adam: schedule multiplier
  double weight_decay_rate = 0;  ///< Adam: decoupled weight decay rate
  double momentum = 0;  ///< MomentumSGD, NesterovAG, RMSpropGraves: the momentum
  double alpha = 0;     ///< RMSprop, RMSpropGraves: decay of the mean squares
  double rho = 0;       ///< AdaDelta: decay of both mean squares
  bool eps_inside_sqrt = false;  ///< RMSprop: divide by sqrt(ms + eps) instead of sqrt(ms) + eps
};
/// The function that gives the scalars of parameter PARAM_INDEX's step (see UpdateScalars).
using UpdateScalarsFn = std::function<UpdateScalars(size_t param_index)>;
/// The optimizer rules with a fused update kernel (ops::update_ gives each one's formula), one
/// row each: the rule, its name in messages (the module of its Chainer optimizer) and how many
/// state tensors it steps. The enum, update_rule_name and update_rule_states expand from it.
#define CHAINER_UPDATE_RULES(X)       \
  X(SGD, "sgd", 0)                    \
  X(MomentumSGD, "momentum_sgd", 1)   \
  X(Adam, "adam", 2)                  \
  X(AMSGrad, "ams_grad", 3)           \
  X(AdaGrad, "ada_grad", 1)           \
  X(RMSprop, "rmsprop", 1)            \
  X(AdaDelta, "ada_delta", 2)         \
  X(NesterovAG, "nesterov_ag", 1)     \
  X(RMSpropGraves, "rmsprop_graves", 3) \
  X(SMORMS3, "smorms3", 3)
/// The optimizer rules of CHAINER_UPDATE_RULES.
enum class UpdateRule {
  /// @cond
#define CHAINER_UPDATE_RULE_ENUM(RULE, NAME, STATES) RULE,
  CHAINER_UPDATE_RULES(CHAINER_UPDATE_RULE_ENUM)
#undef CHAINER_UPDATE_RULE_ENUM
  /// @endcond
};
/// How many state tensors RULE steps (ParamTensors::state0 onwards): 0 to 3.
int update_rule_states(UpdateRule rule);
/// RULE's name in messages, as the module of its Chainer optimizer ("rmsprop_graves").
const char* update_rule_name(UpdateRule rule);

}  // namespace chainer
