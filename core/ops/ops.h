/// @file
/// Tensor math: the device-independent entry points. Each checks its arguments (errors name the op
/// and the values) and dispatches on the device through the kernel table (core/ops/kernels.h).
/// Results are new contiguous tensors unless the name ends in '_' (in place).
/// Float kernels run in float32 and float64 (float64 serves the gradient checks).
///
/// One header, and one source per family in core/ops/, named as its kernels' files in core/cpu/
/// and core/cuda/: elementwise.cpp (arithmetic, comparisons, where, clip, the activations and
/// their gradients, axpy_, scale_, scale_to_, accumulate_, add_bias_), reduce.cpp (sum, sum_to,
/// broadcast_to, max, min, argmax, argmin, amax, amin), gemm.cpp, softmax.cpp (with its
/// gradients), loss.cpp (the cross entropies, accuracy), dropout.cpp, indexing.cpp (take_rows,
/// take, scatter_add_, concat, stack), conv.cpp (with conv_outsize and deconv_outsize),
/// pooling.cpp, normalization.cpp and rnn.cpp (lstm, gru); broadcast_shapes and the checks the families share are in
/// checks.cpp.
#pragma once
#include <utility>
#include <vector>

#include "core/ops/op_types.h"
#include "core/tensor/tensor.h"

namespace chainer {
class Generator;
}

namespace chainer::ops {

/// numpy broadcasting of two shapes; OP names the caller in the error.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

// Elementwise arithmetic with numpy broadcasting.
Tensor add(const Tensor& a, const Tensor& b);  ///< `a + b`, elementwise with numpy broadcasting
Tensor sub(const Tensor& a, const Tensor& b);  ///< `a - b`, elementwise with numpy broadcasting
Tensor mul(const Tensor& a, const Tensor& b);  ///< `a * b`, elementwise with numpy broadcasting
Tensor div(const Tensor& a, const Tensor& b);  ///< `a / b`, elementwise with numpy broadcasting
Tensor add_scalar(const Tensor& a, double s);  ///< `a + s`
Tensor mul_scalar(const Tensor& a, double s);  ///< `a * s`
Tensor neg(const Tensor& a);      ///< `-a`
Tensor exp(const Tensor& a);      ///< elementwise exponential
Tensor log(const Tensor& a);      ///< elementwise natural logarithm
Tensor sqrt(const Tensor& a);     ///< elementwise square root
Tensor square(const Tensor& a);   ///< `a * a`
Tensor relu(const Tensor& a);     ///< `max(a, 0)`
Tensor sigmoid(const Tensor& a);  ///< `1 / (1 + exp(-a))`
Tensor tanh(const Tensor& a);     ///< elementwise hyperbolic tangent
Tensor abs(const Tensor& a);      ///< `|a|`
Tensor sign(const Tensor& a);     ///< -1, 0 or 1 by the sign of A (NaN for NaN), as numpy.sign
/// The larger of A and B, elementwise with numpy broadcasting; NaN where either is NaN.
Tensor maximum(const Tensor& a, const Tensor& b);
/// The smaller of A and B, elementwise with numpy broadcasting; NaN where either is NaN.
Tensor minimum(const Tensor& a, const Tensor& b);
/// A clipped to [LO, HI] (an infinite bound clips nothing on its side); NaN stays NaN.
Tensor clip(const Tensor& a, double lo, double hi);

// Comparisons: uint8 masks (1 where the relation holds, else 0) of the broadcast shape. The
// operands have one dtype, any of the computing ones.
Tensor equal(const Tensor& a, const Tensor& b);          ///< `a == b`, as a uint8 mask
Tensor not_equal(const Tensor& a, const Tensor& b);      ///< `a != b`, as a uint8 mask
Tensor less(const Tensor& a, const Tensor& b);           ///< `a < b`, as a uint8 mask
Tensor less_equal(const Tensor& a, const Tensor& b);     ///< `a <= b`, as a uint8 mask
Tensor greater(const Tensor& a, const Tensor& b);        ///< `a > b`, as a uint8 mask
Tensor greater_equal(const Tensor& a, const Tensor& b);  ///< `a >= b`, as a uint8 mask
/// `cond ? a : b` elementwise (numpy.where): COND is uint8 (nonzero is true, as the masks
/// above), A and B share a dtype; all three broadcast together.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
/// `x >= 0 ? x : slope x`, elementwise (chainer.functions.leaky_relu).
Tensor leaky_relu(const Tensor& x, double slope);
/// `x >= 0 ? x : alpha (exp(x) - 1)`, elementwise (chainer.functions.elu).
Tensor elu(const Tensor& x, double alpha);
/// `log(1 + exp(beta x)) / beta`, elementwise and without overflow (chainer.functions.softplus);
/// BETA must not be 0.
Tensor softplus(const Tensor& x, double beta);
/// leaky_relu's gradient from its input X: `x >= 0 ? gy : slope gy`.
Tensor leaky_relu_grad(const Tensor& x, const Tensor& gy, double slope);
/// elu's gradient from its input X: `x > 0 ? gy : alpha exp(x) gy`.
Tensor elu_grad(const Tensor& x, const Tensor& gy, double alpha);
/// softplus's gradient from its input X: `gy sigmoid(beta x)`.
Tensor softplus_grad(const Tensor& x, const Tensor& gy, double beta);
// Backward helpers taking the forward output Y: gy*(y>0), gy*y*(1-y), gy*(1-y*y).
Tensor relu_grad(const Tensor& y, const Tensor& gy);     ///< `gy * (y > 0)`, from relu's output Y
Tensor sigmoid_grad(const Tensor& y, const Tensor& gy);  ///< `gy * y * (1 - y)`, from sigmoid's output Y
Tensor tanh_grad(const Tensor& y, const Tensor& gy);     ///< `gy * (1 - y * y)`, from tanh's output Y

/// y += alpha * x (same shape), in place.
void axpy_(Tensor& y, double alpha, const Tensor& x);
/// y *= alpha, in place.
void scale_(Tensor& y, double alpha);
/// out = a * alpha into OUT (contiguous, a's shape and dtype): a scaled copy without a new tensor.
void scale_to_(Tensor& out, const Tensor& a, double alpha);
/// acc (one float64 element) += value (one float element), in place and without reading either
/// on the host: how reported values are summed on a GPU.
void accumulate_(Tensor& acc, const Tensor& value);
/// The rows ROWS (host indices) of SRC along axis 0, gathered on SRC's device: batches of a
/// dataset that lives on a GPU.
Tensor take_rows(const Tensor& src, const std::vector<int64_t>& rows);
/// numpy.take(a, indices, axis): the entries INDICES of A along AXIS, of shape
/// a.shape[:axis] + indices.shape + a.shape[axis+1:]. INDICES: an integer tensor of any shape on
/// the CPU or on A's device; negative ones count from the end. Indices on the CPU are checked
/// here; those on a GPU, by the kernel, and one out of range is reported at the next host read
/// (core/device/cuda.h, "device errors").
Tensor take(const Tensor& a, const Tensor& indices, int64_t axis);
/// a[..., indices[j], ...] += values[..., j, ...] along AXIS, in place, repeated indices summed
/// (numpy.add.at, cupyx.scatter_add): the gradient of take. A: contiguous float32 or float64;
/// VALUES: A's dtype, of the shape take(a, indices, axis) has. Indices checked as take's.
void scatter_add_(Tensor& a, const Tensor& indices, int64_t axis, const Tensor& values);

/// Sum over AXES (all axes when empty).
Tensor sum(const Tensor& a, const std::vector<int64_t>& axes = {}, bool keepdims = false);
/// Sums A down to SHAPE, undoing a broadcast from SHAPE to a.shape().
Tensor sum_to(const Tensor& a, const Shape& shape);
/// A broadcast to SHAPE (numpy rules): a contiguous copy, or A itself when it has SHAPE already.
Tensor broadcast_to(const Tensor& a, const Shape& shape);
/// The maximum along AXIS.
Tensor max(const Tensor& a, int64_t axis, bool keepdims = false);
Tensor argmax(const Tensor& a, int64_t axis);  ///< the index of the maximum along AXIS, as int32 indices
/// The minimum along AXIS.
Tensor min(const Tensor& a, int64_t axis, bool keepdims = false);
Tensor argmin(const Tensor& a, int64_t axis);  ///< the index of the minimum along AXIS, as int32 indices
/// The maximum over AXES (all axes when empty; each at most once, negative ones counting from
/// the end), numpy.amax. Named apart from max(a, axis) so that `{}` cannot mean axis 0.
Tensor amax(const Tensor& a, const std::vector<int64_t>& axes, bool keepdims = false);
/// The minimum over AXES (all axes when empty), numpy.amin.
Tensor amin(const Tensor& a, const std::vector<int64_t>& axes, bool keepdims = false);

/// Matrix products of 2-D tensors: op(a) @ op(b), op = transpose when the flag is set.
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);
/// c = alpha * op(a) @ op(b) + beta * c, c preallocated with the right shape: of a's dtype, or
/// float32 for float16 or bfloat16 a and b (the float32 sums, not rounded to half).
void gemm(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, double alpha, double beta, Tensor& c);
/// Matrix products over a batch: A (batch or 1, ., .) and B (batch or 1, ., .), 3-D, give
/// (batch, m, n) with out[i] = op(a[i or 0]) @ op(b[i or 0]).
Tensor batched_matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);

/// Softmax of X along AXIS.
Tensor softmax(const Tensor& x, int64_t axis = 1);
/// Log-softmax of X along AXIS.
Tensor log_softmax(const Tensor& x, int64_t axis = 1);

/// XS joined along the existing AXIS (numpy.concatenate).
Tensor concat(const std::vector<Tensor>& xs, int64_t axis);
/// XS (all one shape) joined along a new AXIS (numpy.stack).
Tensor stack(const std::vector<Tensor>& xs, int64_t axis);

// ---- Fused steps of the differentiable functions in nn/functions ----

/// y[i, :] += b for every row of the contiguous 2-D Y (skipped when B is undefined), then
/// y = max(y, 0) when RELU: the one-pass epilogue of linear layers, in place.
void add_bias_(Tensor& y, const Tensor& b, bool relu = false);
/// Backward of softmax along AXIS, from the forward output Y.
Tensor softmax_grad(const Tensor& y, const Tensor& gy, int64_t axis = 1);
/// Backward of log_softmax along AXIS, from the forward output Y.
Tensor log_softmax_grad(const Tensor& y, const Tensor& gy, int64_t axis = 1);

/// What softmax_cross_entropy returns: the loss and what its gradient needs.
struct CrossEntropyResult {
  Tensor loss;   ///< (N,) per-example losses, or their mean (a scalar) when REDUCTION asks for one
  Tensor lse;    ///< (N,) log-sum-exp of each row, for the gradient
  Tensor scale;  ///< one float64: what each row's loss was multiplied by (1/count, 1/N, or 1)
};
/// Softmax cross entropy of logits X (N, C) against int32 labels T (N,), by log-sum-exp. Rows
/// labelled IGNORE_LABEL get loss 0 and are not counted.
CrossEntropyResult softmax_cross_entropy(const Tensor& x, const Tensor& t, int64_t ignore_label = -1,
                                         LossReduction reduction = LossReduction::None);
/// Its gradient: gx[i] = (softmax(x[i]) - onehot(t[i])) * gloss[i] * scale (gloss may have one
/// element, shared by all rows); zero on ignored rows.
Tensor softmax_cross_entropy_grad(const Tensor& x, const Tensor& t, const Tensor& lse, const Tensor& gloss,
                                  const Tensor& scale, int64_t ignore_label = -1);

/// Sigmoid cross entropy of logits X against int32 labels T (X's shape; 0 or 1, -1 ignored),
/// elementwise and stable: `log1p(exp(-|x|)) - x * (t - (x >= 0))`, 0 where ignored.
Tensor sigmoid_cross_entropy(const Tensor& x, const Tensor& t);
/// Its gradient: `gy * (sigmoid(x) - t)`, 0 where ignored; GY has X's shape or one element.
Tensor sigmoid_cross_entropy_grad(const Tensor& x, const Tensor& t, const Tensor& gy);

/// A dropout mask of SHAPE on DEVICE: 1/(1-ratio) with probability 1-ratio, else 0. One key is
/// drawn from GEN; the elements are Philox values of it, the same on every device. Captured into
/// a CUDA graph, every replay draws its key from GEN again: GEN must outlive the graph (the
/// default generator, which F::dropout uses, always does).
Tensor dropout_mask(const Shape& shape, double ratio, DType dtype, Device device, Generator& gen);
/// Normal samples (MEAN, STDDEV) made on DEVICE (torch.randn(device=...), cupy.random.normal):
/// counter-based (Philox, Box-Muller), so the CPU and a GPU give the same samples for the same
/// GEN state, one draw of GEN per call; not the stream of random::normal, which draws on the host.
Tensor random_normal(const Shape& shape, double mean, double stddev, DType dtype, Device device, Generator& gen);

/// One LSTM step, as Chainer's lstm: X (B, 4U) holds unit u's gate inputs at columns 4u .. 4u + 3
/// (a, i, f, o); with C_PREV (B, U), c = tanh(a) sigmoid(i) + sigmoid(f) c_prev and
/// h = sigmoid(o) tanh(c). Returns {c, h}.
std::pair<Tensor, Tensor> lstm(const Tensor& x, const Tensor& c_prev);
/// The gradients of lstm, {gx, gc_prev}, from its X, C_PREV and C and the gradients GC and GH of
/// c and h (either may be undefined: zero).
std::pair<Tensor, Tensor> lstm_grad(const Tensor& x, const Tensor& c_prev, const Tensor& c, const Tensor& gc,
                                    const Tensor& gh);

/// One GRU step, as Chainer's n_step_gru: XG and HG (B, 3U) hold unit u's projections of the input
/// and of the previous output H (B, U), biases included, at columns 3u .. 3u + 2 (r, z, n).
/// Returns (1 - z) tanh(xn + r hn) + z h, r = sigmoid(xr + hr), z = sigmoid(xz + hz).
Tensor gru(const Tensor& xg, const Tensor& hg, const Tensor& h);
/// The gradients of gru, {gxg, ghg, gh}, from its inputs and the output gradient GY.
std::vector<Tensor> gru_grad(const Tensor& xg, const Tensor& hg, const Tensor& h, const Tensor& gy);

/// Whether DEVICE runs whole recurrent stacks in one call (rnn_forward and rnn_backward: cuDNN's
/// on CUDA). False on the CPU, where nn/functions/n_step_rnn.cpp composes them from one product
/// per layer and the fused cells above.
bool has_fused_rnn(Device device);
/// What rnn_forward returns: the last layer's outputs Y (packed, (sum of lengths, U *
/// directions)), the last states HY and CY (CY: LSTMs only), and what rnn_backward reads.
struct RnnForward {
  Tensor y;        ///< the last layer's outputs, packed: (sum of lengths, U * directions)
  Tensor hy;       ///< the last outputs of every layer and direction: (layers * directions, B, U)
  Tensor cy;       ///< the last cell states (LSTMs; else undefined)
  Tensor reserve;  ///< what rnn_backward reads (undefined unless for_backward)
};
/// The stack G over the packed sequences X (time-major, longest first: transpose_sequence's steps
/// joined) from HX and CX ((layers * directions, B, U); undefined: zeros; CX for LSTMs only) with
/// WEIGHTS (per layer and direction, Chainer's w0, ... then b0, ...); FOR_BACKWARD keeps what
/// rnn_backward needs. Throws chainer::Error naming the bad shape, or on a device without it.
RnnForward rnn_forward(const RnnGeometry& g, const Tensor& x, const Tensor& hx, const Tensor& cx,
                       const std::vector<Tensor>& weights, bool for_backward);
/// The gradients of rnn_forward: for X, HX, CX (LSTMs) and, when WEIGHT_GRADS, every weight.
struct RnnGradients {
  Tensor gx;                     ///< for X
  Tensor ghx;                    ///< for HX
  Tensor gcx;                    ///< for CX (LSTMs; else undefined)
  std::vector<Tensor> gweights;  ///< for each weight, in WEIGHTS' order (empty unless asked for)
};
/// The gradients of rnn_forward from its arguments, its result F (whose reserve it consumes) and
/// the gradients GY, GHY and GCY (undefined: zeros).
RnnGradients rnn_backward(const RnnGeometry& g, const Tensor& x, const Tensor& hx, const Tensor& cx,
                          const std::vector<Tensor>& weights, RnnForward& f, const Tensor& gy, const Tensor& ghy,
                          const Tensor& gcy, bool weight_grads);

// ---- Convolutions over NCHW images ----
//
// These check their arguments and hand the work to the device: the CPU lowers the convolutions
// to matrix products (core/ops/conv_lowering.h, core/cpu/conv.cpp), CUDA calls cuDNN.

/// The arguments of a 2-D convolution besides its arrays, as chainer.functions.convolution_2d
/// takes them (pairs as (y, x)).
struct Conv2dParams {
  int64_t sy = 1;          ///< the stride along the rows
  int64_t sx = 1;          ///< the stride along the columns
  int64_t ph = 0;          ///< the zero padding above and below
  int64_t pw = 0;          ///< the zero padding left and right
  int64_t dy = 1;          ///< the dilation along the rows: window taps DY rows apart
  int64_t dx = 1;          ///< the dilation along the columns
  int64_t groups = 1;      ///< channel groups, each convolved apart (GROUPS divides both channel counts)
  bool cover_all = false;  ///< extends the output so that every pixel is covered (convolution_2d only)
};
/// Chainer's conv.get_conv_outsize: the output extent of a convolution over SIZE with kernel K,
/// stride S, padding P and dilation D; COVER_ALL adds the positions a partial window reaches.
int64_t conv_outsize(int64_t size, int64_t k, int64_t s, int64_t p, bool cover_all = false, int64_t d = 1);
/// Chainer's conv.get_deconv_outsize: the output extent of a deconvolution (the inverse of conv_outsize).
int64_t deconv_outsize(int64_t size, int64_t k, int64_t s, int64_t p, bool cover_all = false, int64_t d = 1);
/// The convolution of X (N, C, H, W) with filters W (C_out, C / groups, kh, kw), plus B (C_out,)
/// per output channel when defined: y (N, C_out, out_h, out_w) with the extents of conv_outsize.
Tensor convolution_2d(const Tensor& x, const Tensor& W, const Tensor& b, const Conv2dParams& params);
/// convolution_2d with the output extents (OUT_H, OUT_W) given, each one the convolution makes
/// with cover_all or without (params.cover_all is not read): the gradient of deconvolution_2d,
/// whose outsize may need cover_all on one axis only.
Tensor convolution_2d(const Tensor& x, const Tensor& W, const Tensor& b, const Conv2dParams& params, int64_t out_h,
                      int64_t out_w);
/// The gradient of convolution_2d with respect to x, from GY (N, C_out, out_h, out_w): gx
/// (N, C, HEIGHT, WIDTH). GY's extents must be ones some convolution of that size with PARAMS makes (with
/// or without cover_all). Also the forward of deconvolution_2d.
Tensor convolution_2d_grad_data(const Tensor& gy, const Tensor& W, int64_t height, int64_t width,
                                const Conv2dParams& params);
/// The gradient of convolution_2d with respect to its filters, from X (N, C, H, W) and GY
/// (N, C_out, out_h, out_w): gW (C_out, C / groups, KH, KW). GY's extents as for
/// convolution_2d_grad_data.
Tensor convolution_2d_grad_filter(const Tensor& x, const Tensor& gy, int64_t kh, int64_t kw,
                                  const Conv2dParams& params);
// ---- Pooling and normalization (nn/functions/pooling.h, batch_normalization.h,
// local_response_normalization.h) ----

// A window's output extent is conv_outsize's (Chainer's get_conv_outsize), as in Chainer.
/// Throws chainer::Error naming OP for a WINDOW whose size or stride is below 1 or whose padding
/// is negative.
void check_window_2d(const char* op, const Window2D& window);
/// The output shape (N, C, out_h, out_w) of a 2-D pooling of an array of X_SHAPE (N, C, H, W)
/// with WINDOW. Throws chainer::Error naming OP for an input that is not 4-D or is empty, a window
/// or stride below 1, negative padding, or an output extent below 1.
Shape pooling_2d_output_shape(const char* op, const Shape& x_shape, const Window2D& window, bool cover_all);

/// What max_pooling_2d returns: the maxima and where each was.
struct MaxPooling2DResult {
  Tensor y;        ///< (N, C, out_h, out_w): the maximum of each window (padding never wins)
  Tensor indexes;  ///< int32, y's shape: the offset `iy * W + ix` of each maximum in its plane
};
/// Max pooling of X (N, C, H, W, float) over WINDOW (see pooling_2d_output_shape for the checks).
/// A window wholly in the padding gives -inf and passes no gradient; a NaN in a window wins it.
MaxPooling2DResult max_pooling_2d(const Tensor& x, const Window2D& window, bool cover_all);
/// max_pooling_2d's gradient: GY summed into an array of X_SHAPE at the INDEXES it returned.
Tensor max_pooling_2d_grad(const Tensor& gy, const Tensor& indexes, const Window2D& window, const Shape& x_shape);
/// SCALE times the sum of each window of X (N, C, H, W, float), the padding zero: average pooling
/// (SCALE 1 / (kh kw)) and unpooling's gradient (SCALE 1).
Tensor window_sum_2d(const Tensor& x, const Window2D& window, bool cover_all, double scale);
/// window_sum_2d's transpose: an array (N, C, H, W) whose every element is SCALE times the sum of
/// Y over the windows that hold it; Y's extents must be the pooling output extents of H and W.
/// Average pooling's gradient, and unpooling.
Tensor window_spread_2d(const Tensor& y, const Window2D& window, int64_t h, int64_t w, bool cover_all, double scale);

/// What local_response_normalization returns: the output and what its gradient needs.
struct LocalResponseNormalizationResult {
  Tensor y;           ///< x * unit_scale^-beta
  Tensor unit_scale;  ///< k + alpha times the sum of x^2 over the channels [c - n/2, c + n/2]
};
/// Local response normalization of X (N, C, ...) across axis 1 with Chainer's N, K, ALPHA, BETA.
LocalResponseNormalizationResult local_response_normalization(const Tensor& x, int64_t n, double k, double alpha,
                                                              double beta);
/// Its gradient, from its input X, output Y, UNIT_SCALE and the output gradient GY.
Tensor local_response_normalization_grad(const Tensor& x, const Tensor& y, const Tensor& unit_scale, const Tensor& gy,
                                         int64_t n, double alpha, double beta);

/// Per-channel float64 sums of A seen as VIEW (outer, channels, inner): (2C,) holding
/// [sum of A, sum of A (B - CENTER[c])], where an undefined B means A itself and an undefined
/// CENTER ((C,) of A's dtype, or float32 when A is half) means 0. With A alone, [sum x, sum x^2]: the batch statistics;
/// with A = gy, B = x and CENTER the mean: batch normalization's gradient sums.
Tensor channel_sums(const Tensor& a, const Tensor& b, const Tensor& center, const ChannelView& view);
/// `s[c] u + t[c] (v - m[c]) + d[c]` over VIEW in one pass (see ChannelAffine): batch
/// normalization's output and its input gradient.
Tensor channel_affine(const ChannelAffine& args, const ChannelView& view);

/// Fraction (a scalar of y's dtype) of `argmax(y, axis 1) == t` over labels other than
/// IGNORE_LABEL; 0 when every label is ignored. T has y's shape without axis 1.
Tensor accuracy(const Tensor& y, const Tensor& t, int64_t ignore_label = -1);

}  // namespace chainer::ops
