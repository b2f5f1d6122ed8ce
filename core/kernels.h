/// @file
/// The kernel table: one entry per kernel behind core/ops.h and core/update_ops.h, filled once per
/// device kind (core/cpu/ on the CPU, core/cuda/ on CUDA devices). ops.cpp and update_ops.cpp
/// check arguments and look the table up by the operands' device; nothing else dispatches.
///
/// The contract, for every device: arguments are already checked (same device, dtypes and shapes
/// as the op requires); outputs are preallocated contiguous tensors on that device unless an entry
/// says otherwise; inputs may be non-contiguous unless an entry says otherwise. CUDA kernels run
/// on the device's compute stream and return without waiting for it.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "core/tensor.h"

namespace chainer {

class Generator;

/// Elementwise binary operations of the `binary` kernel.
enum class BinaryOp {
  Add, Sub, Mul, Div,
  Maximum, Minimum  ///< the larger (smaller) of the two; NaN if either is NaN, as numpy.maximum
};
/// Elementwise unary operations of the `unary` kernel.
enum class UnaryOp {
  Neg, Exp, Log, Sqrt, Square, Relu, Sigmoid, Tanh,
  Abs,  ///< |x|
  Sign  ///< -1, 0 or 1 (NaN for NaN), as numpy.sign
};
/// Elementwise comparisons of the `compare` kernel.
enum class CompareOp { Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual };
/// Activations whose gradient the `activation_grad` kernel computes from their output.
enum class GradOp { Relu, Sigmoid, Tanh };
/// Elementwise activations with one parameter P (the argument of their Chainer function), whose
/// gradient the `parametric_activation_grad` kernel computes from their input.
enum class ParametricOp {
  LeakyRelu,  ///< `x >= 0 ? x : p x` (P: Chainer's slope); gradient `x >= 0 ? gy : p gy`
  Elu,        ///< `x >= 0 ? x : p expm1(x)` (P: alpha); gradient `x > 0 ? gy : p exp(x) gy`
  Softplus    ///< `(max(p x, 0) + log1p(exp(-|p x|))) / p` (P: beta); gradient `gy sigmoid(p x)`
};

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
/// OUT's dtype, D always defined.
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
/// before every replay of a step captured into a CUDA graph (core/cuda.h), so a replayed step
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
/// The optimizer rules with a fused update kernel (ops::update_ gives each one's formula).
enum class UpdateRule { SGD, MomentumSGD, Adam, AMSGrad, AdaGrad, RMSprop, AdaDelta, NesterovAG, RMSpropGraves, SMORMS3 };
/// How many state tensors RULE steps (ParamTensors::state0 onwards): 0 to 3.
int update_rule_states(UpdateRule rule);
/// RULE's name in messages, as the module of its Chainer optimizer ("rmsprop_graves").
const char* update_rule_name(UpdateRule rule);

/// The kernels of one device kind, one function pointer per kernel (see the file comment for the
/// contract they share).
struct Kernels {
  // ---- memory ----
  void (*fill)(Tensor& out, double value);             ///< OUT = VALUE; OUT may be non-contiguous
  void (*copy)(const Tensor& src, Tensor& dst);         ///< DST = SRC: same shape; any layouts; converts dtype
  /// out[j] = src[rows[j]] along axis 0 (ROWS are host values, already range-checked).
  void (*take_rows)(const Tensor& src, const std::vector<int64_t>& rows, Tensor& out);

  // ---- elementwise ----
  /// OUT = A op B; OUT: the broadcast shape.
  void (*binary)(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out);
  void (*unary)(UnaryOp op, const Tensor& a, Tensor& out);  ///< OUT = op(A)
  void (*broadcast_copy)(const Tensor& a, Tensor& out);                ///< OUT = A broadcast to OUT's shape
  void (*affine)(const Tensor& a, double mul, double add, Tensor& out);  ///< OUT = A * MUL + ADD
  /// OUT = the gradient of activation OP from its output Y and the output gradient GY.
  void (*activation_grad)(GradOp op, const Tensor& y, const Tensor& gy, Tensor& out);
  void (*axpy)(Tensor& y, double alpha, const Tensor& x);  ///< Y (contiguous) += ALPHA * X
  /// ACC (one float64 element) += VALUE (one element, float32 or float64): reported values.
  void (*accumulate)(Tensor& acc, const Tensor& value);
  /// OUT (uint8) = 1 where `A op B`, else 0; A and B of one dtype; OUT: the broadcast shape.
  void (*compare)(CompareOp op, const Tensor& a, const Tensor& b, Tensor& out);
  /// OUT = COND ? A : B with COND uint8 (nonzero: true); OUT: the broadcast shape of all three.
  void (*where)(const Tensor& cond, const Tensor& a, const Tensor& b, Tensor& out);
  /// OUT = min(max(A, LO), HI) (LO or HI infinite when absent); NaN stays NaN.
  void (*clip)(const Tensor& a, double lo, double hi, Tensor& out);
  /// OUT = activation OP with parameter P of X.
  void (*parametric_activation)(ParametricOp op, const Tensor& x, double p, Tensor& out);
  /// GX = the gradient of activation OP with parameter P at its input X, from the output gradient GY.
  void (*parametric_activation_grad)(ParametricOp op, const Tensor& x, const Tensor& gy, double p, Tensor& gx);

  // ---- reductions ----
  /// OUT = A summed over the axes flagged in REDUCE; OUT keeps dims.
  void (*sum_axes)(const Tensor& a, const std::vector<bool>& reduce, Tensor& out);
  /// OUT = the max of A along AXIS, and ARGMAX its index when not null; OUT may be undefined.
  void (*max_axis)(const Tensor& a, int64_t axis, Tensor& out, Tensor* argmax);
  /// OUT = the min of A along AXIS, and ARGMIN its index when not null; OUT may be undefined.
  void (*min_axis)(const Tensor& a, int64_t axis, Tensor& out, Tensor* argmin);
  /// OUT (one float64 element) = the sum of squares of every element of every tensor in XS.
  void (*sum_of_squares)(const std::vector<Tensor>& xs, Tensor& out);

  // ---- matrix products: C = alpha op(A) op(B) + beta C (A, B contiguous 2-D) ----
  /// C = alpha op(A) op(B) + beta C (A, B contiguous 2-D; op transposes when its flag is set).
  void (*gemm)(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, double alpha, double beta, Tensor& c);
  // ---- the fused steps of nn/functions ----
  /// OUT = softmax (or log-softmax when LOG) of X along AXIS.
  void (*softmax)(const Tensor& x, int64_t axis, bool log, Tensor& out);
  /// GX = the gradient of softmax (or log-softmax when LOG) along AXIS, from its output Y and GY.
  void (*softmax_grad)(const Tensor& y, const Tensor& gy, int64_t axis, bool log, Tensor& gx);
  /// Y += B on every row, then ReLU when RELU: Y 2-D contiguous, in place; B may be undefined.
  void (*add_bias)(Tensor& y, const Tensor& b, bool relu);
  /// Per-row losses by log-sum-exp into LOSS (N,) and LSE (N,); REDUCED (one element) gets their
  /// mean when REDUCTION asks for one, and SCALE (one element) what each row's loss was multiplied
  /// by (1 for None). Returns the row of the first label outside [0, C) that is not IGNORE_LABEL,
  /// or -1. On the CPU that check is made before any work; on CUDA it returns -1 and a bad label is
  /// reported at the next host read (core/cuda.h, "device errors").
  int64_t (*softmax_cross_entropy)(const Tensor& x, const Tensor& t, int64_t ignore_label, LossReduction reduction,
                                   Tensor& loss, Tensor& lse, Tensor& reduced, Tensor& scale);
  /// gx[i] = (softmax(x[i]) - onehot(t[i])) * gloss[i or 0] * scale[0]; zero on ignored rows.
  void (*softmax_cross_entropy_grad)(const Tensor& x, const Tensor& t, const Tensor& lse, const Tensor& gloss,
                                     const Tensor& scale, int64_t ignore_label, Tensor& gx);
  /// MASK[i] = 1/(1-ratio) when `philox_uniform(key, i) >= ratio`, else 0 (core/philox.h): the
  /// same mask on every device and for any launch configuration. KEY is drawn from GEN once per
  /// call (on CUDA through the step-scalars mechanism, so a replayed graph draws a fresh one).
  void (*dropout_mask)(double ratio, Generator& gen, Tensor& mask);
  /// OUT (one element of y's dtype) = correct / counted over labels other than IGNORE_LABEL (0 if none).
  void (*accuracy)(const Tensor& y, const Tensor& t, int64_t ignore_label, Tensor& out);
  /// LOSS[i] = the sigmoid cross entropy of logit X[i] against int32 label T[i] (0 or 1), by
  /// `log1p(exp(-|x|)) - x * (t - (x >= 0))`; 0 where T[i] is -1. X and T: one shape.
  void (*sigmoid_cross_entropy)(const Tensor& x, const Tensor& t, Tensor& loss);
  /// GX[i] = GY[i or 0] * (sigmoid(X[i]) - T[i]); 0 where T[i] is -1 (GY: one element or X's shape).
  void (*sigmoid_cross_entropy_grad)(const Tensor& x, const Tensor& t, const Tensor& gy, Tensor& gx);

  // ---- convolutions (core/ops.h): NCHW arrays, all contiguous; groups divides both channel counts ----
  /// Y (N, C_out, out_h, out_w) = X (N, C, H, W) convolved with filters W (C_out, C / groups, kh,
  /// kw), plus B (C_out,) per output channel when defined.
  void (*convolution_2d)(const Tensor& x, const Tensor& W, const Tensor& b, const Conv2dGeometry& g, Tensor& y);
  /// GX (N, C, H, W) = its gradient with respect to X, from GY (N, C_out, out_h, out_w) and W.
  void (*convolution_2d_grad_data)(const Tensor& gy, const Tensor& W, const Conv2dGeometry& g, Tensor& gx);
  /// GW (C_out, C / groups, kh, kw) = its gradient with respect to W, from X and GY.
  void (*convolution_2d_grad_filter)(const Tensor& x, const Tensor& gy, const Conv2dGeometry& g, Tensor& gW);
  // ---- pooling and normalization (nn/functions/pooling.h, batch_normalization.h,
  // local_response_normalization.h): NCHW arrays, X contiguous; outputs sized by the op ----
  /// OUT (N, C, out_h, out_w) = the maximum of each window of X (N, C, H, W), padding never
  /// winning (a window wholly in the padding gives -inf); INDEXES (int32, OUT's shape) = the
  /// offset y * W + x in its plane of the first maximum (a NaN wins), -1 for a window of padding.
  void (*max_pooling_2d)(const Tensor& x, const Window2D& window, Tensor& out, Tensor& indexes);
  /// GX (N, C, H, W) = the sum of GY over the windows whose maximum (INDEXES) each element was.
  void (*max_pooling_2d_grad)(const Tensor& gy, const Tensor& indexes, const Window2D& window, Tensor& gx);
  /// OUT (N, C, out_h, out_w) = SCALE times the sum of each window of X (N, C, H, W), the
  /// padding zero: average pooling (SCALE 1 / (kh kw)) and the gradient of unpooling (SCALE 1).
  void (*window_sum_2d)(const Tensor& x, const Window2D& window, double scale, Tensor& out);
  /// OUT (N, C, H, W) = SCALE times the sum of Y (N, C, out_h, out_w) over the windows that hold
  /// each element: window_sum_2d's transpose, so average pooling's gradient and unpooling.
  void (*window_spread_2d)(const Tensor& y, const Window2D& window, double scale, Tensor& out);
  /// Local response normalization across axis 1 of X (N, C, ...): UNIT_SCALE = k + alpha times
  /// the sum of x^2 over the channels [c - n/2, c + n/2], OUT = X * UNIT_SCALE^-beta.
  void (*local_response_normalization)(const Tensor& x, int64_t n, double k, double alpha, double beta, Tensor& out,
                                       Tensor& unit_scale);
  /// GX = the gradient of local_response_normalization from its X, output Y, UNIT_SCALE and GY.
  void (*local_response_normalization_grad)(const Tensor& x, const Tensor& y, const Tensor& unit_scale,
                                            const Tensor& gy, int64_t n, double alpha, double beta, Tensor& gx);
  /// SUMS (float64 (2C,)) = [sum of A, sum of A (B - CENTER[c])] over each channel c of VIEW,
  /// summed in float64 in an order fixed by the shapes. B undefined: A itself; CENTER (C,) of A's
  /// dtype, undefined: 0. A and B contiguous, of one shape and dtype.
  void (*channel_sums)(const Tensor& a, const Tensor& b, const Tensor& center, const ChannelView& view, Tensor& sums);
  /// OUT = the per-channel affine combination of ARGS over VIEW (see ChannelAffine).
  void (*channel_affine)(const ChannelAffine& args, const ChannelView& view, Tensor& out);

  // ---- optimizer updates (core/update_ops.h), every parameter in one call ----
  /// One step of RULE on every parameter of PARAMS (see ops::update_).
  void (*update)(UpdateRule rule, std::vector<ParamTensors>& params, const UpdateScalarsFn& scalars);
  /// Multiplies every gradient by min(1, threshold / sqrt(sum of squares of all of them)).
  void (*clip_by_norm)(std::vector<Tensor>& grads, double threshold);

  // ---- indexing (ops::take, ops::scatter_add_): INDICES contiguous int64 on the device; indices
  // that came from the host are already checked to lie in [-extent, extent) ----
  /// OUT = numpy.take(A, INDICES, AXIS); on CUDA an index out of range is recorded as a device error.
  void (*take)(const Tensor& a, const Tensor& indices, int64_t axis, Tensor& out);
  /// A (contiguous, float) [..., indices[j], ...] += VALUES[..., j, ...] along AXIS, repeats summed.
  void (*scatter_add)(Tensor& a, const Tensor& indices, int64_t axis, const Tensor& values);
};

/// The table for DEVICE; for a CUDA device it also makes DEVICE current on this thread. Throws
/// chainer::Error (naming the device) when CUDA is not available in this build or process.
const Kernels& kernels_for(Device device);

/// The CPU kernels (core/cpu/).
namespace cpu {
/// The CPU's kernel table (kernels_for(Device::cpu()) returns it).
const Kernels& kernel_table();
}

}  // namespace chainer
