#include "core/ops/conv_lowering.h"

#include <algorithm>
#include <vector>

#include "core/tensor/tensor.h"

namespace chainer {

namespace {
// The N images in chunks whose lowered windows (ROWS x COLS elements of ITEMSIZE bytes each)
// take at most kConvLoweredBytes together: fn(first, count, col) with COL (count, ROWS, COLS),
// one buffer for every chunk. The chunks differ in size by one at most, the smallest being
// min_chunk() images.
class LoweredChunks {
 public:
  LoweredChunks(int64_t n, int64_t rows, int64_t cols, DType dtype, Device device)
      : n_(n), rows_(rows), cols_(cols) {
    const int64_t per_image = std::max<int64_t>(1, rows * cols * int64_t(dtype_size(dtype)));
    const int64_t fits = std::max<int64_t>(1, kConvLoweredBytes / per_image);
    count_ = std::max<int64_t>(1, (n + fits - 1) / fits);
    buffer_ = Tensor::empty({(n + count_ - 1) / count_, rows, cols}, dtype, device);
  }
  int64_t min_chunk() const { return n_ / count_; }
  template <class Fn>
  void for_each(Fn&& fn) {
    for (int64_t i = 0; i < count_; ++i) {
      const int64_t first = n_ * i / count_, count = n_ * (i + 1) / count_ - first;
      fn(first, count, buffer_.narrow(0, 0, count));
    }
  }

 private:
  int64_t n_, rows_, cols_, count_;
  Tensor buffer_;
};
}  // namespace

void lowered_convolution_2d(const ConvLoweringKernels& k, const Tensor& x, const Tensor& W, const Tensor& b,
                            const Conv2dGeometry& g, Tensor& y) {
  const int64_t n = x.size(0), c = x.size(1), c_out = W.size(0), groups = g.groups;
  if (is_depthwise(c, g)) {
    k.depthwise_conv(x, W, b, g, y);
    return;
  }
  const int64_t cols = g.out_h * g.out_w, c_out_g = c_out / groups, depth = c / groups * g.kh * g.kw;
  Tensor y3 = y.reshape({n, c_out, cols});
  double beta = 0.0;
  if (b.defined()) {  // the products add onto the bias
    kernels_for(y.device()).broadcast_copy(b.reshape({1, c_out, 1}), y3);
    beta = 1.0;
  }
  const Tensor Wm = W.reshape({groups, c_out_g, depth});
  // y[i, group g] = W[g] col[i, group g] for the images of YB and their windows COL.
  auto products = [&](const Tensor& col, Tensor yb) {
    for (int64_t gi = 0; gi < groups; ++gi) {
      Tensor out = yb.narrow(1, gi * c_out_g, c_out_g);
      k.batched_gemm(Wm.narrow(0, gi, 1), false, col.narrow(1, gi * depth, depth), false, 1.0, beta, out);
    }
  };
  if (is_pointwise(g)) {
    products(x.reshape({n, c, cols}), y3);
    return;
  }
  LoweredChunks(n, c * g.kh * g.kw, cols, x.dtype(), x.device()).for_each([&](int64_t first, int64_t count, Tensor col) {
    k.im2col(x.narrow(0, first, count), g, col);
    products(col, y3.narrow(0, first, count));
  });
}

void lowered_convolution_2d_grad_data(const ConvLoweringKernels& k, const Tensor& gy, const Tensor& W,
                                      const Conv2dGeometry& g, Tensor& gx) {
  const int64_t n = gy.size(0), c = gx.size(1), c_out = W.size(0), groups = g.groups, kh = g.kh, kw = g.kw;
  const int64_t c_out_g = c_out / groups, c_g = c / groups, depth = c_g * kh * kw;
  if (is_depthwise(c, g)) {
    k.depthwise_conv_grad_data(gy, W, g, gx);
    return;
  }
  // With stride 1 the gradient is itself a convolution: of gy, padded by d (k - 1) - p, with the
  // filters transposed and turned by 180 degrees. That product has the forward's shape (C / groups
  // x C_out / groups * kh * kw against the windows), where the general path below makes a column
  // matrix kh * kw times the image's size from a product of depth C_out / groups alone (32 for
  // the Fashion-MNIST network) and scatters it back: 1.3x faster there (docs/performance.md).
  // Its products have C / groups rows: with fewer than 16 (a first layer's one channel) they
  // waste most of the micro-kernel's 14-row tiles, and the general path is 8x faster. Half
  // gradients take the general path too (its columns the products' float32 sums): bfloat16 on
  // vdpbf16ps measured within 5% of the flipped convolution on bench_conv's layers, and 1.6x
  // faster on the Fashion network's third (Zen 5).
  const bool half = is_half(gx.dtype());
  const int64_t flip_ph = g.dy * (kh - 1) - g.ph, flip_pw = g.dx * (kw - 1) - g.pw;
  if (!half && g.sy == 1 && g.sx == 1 && flip_ph >= 0 && flip_pw >= 0 && !is_pointwise(g) && c_g >= 16) {
    const Tensor t = W.reshape({groups, c_out_g, c_g, kh, kw}).transpose({0, 2, 1, 3, 4});
    // (groups, C / groups, C_out / groups, kh, kw) with both window axes walked backward.
    std::vector<int64_t> strides = t.strides();
    strides[3] = -strides[3], strides[4] = -strides[4];
    const Tensor flipped =
        t.as_strided(t.shape(), strides, t.offset() + (kh - 1) * t.strides()[3] + (kw - 1) * t.strides()[4]);
    Conv2dGeometry flip = g;
    flip.ph = flip_ph, flip.pw = flip_pw, flip.out_h = gx.size(2), flip.out_w = gx.size(3);
    k.convolution_2d(gy, flipped.contiguous().reshape({c, c_out_g, kh, kw}), Tensor(), flip, gx);
    return;
  }
  const int64_t cols = g.out_h * g.out_w;
  const Tensor gy3 = gy.reshape({n, c_out, cols}), Wm = W.reshape({groups, c_out_g, depth});
  // col[i, group g] = W[g]^T gy[i, group g] for the images of GYB.
  auto products = [&](const Tensor& gyb, Tensor col) {
    for (int64_t gi = 0; gi < groups; ++gi) {
      Tensor out = col.narrow(1, gi * depth, depth);
      k.batched_gemm(Wm.narrow(0, gi, 1), true, gyb.narrow(1, gi * c_out_g, c_out_g), false, 1.0, 0.0, out);
    }
  };
  if (is_pointwise(g)) {
    products(gy3, gx.reshape({n, c, cols}));
    return;
  }
  // Half gradients: the columns hold the products' float32 sums and are put back in float32, so
  // that each element of gx is rounded once, after its last term.
  const DType sums = half ? DType::Float32 : gx.dtype();
  Tensor gx32 = half ? Tensor::empty(gx.shape(), sums, gx.device()) : gx;
  LoweredChunks(n, c * kh * kw, cols, sums, gy.device()).for_each([&](int64_t first, int64_t count, Tensor col) {
    products(gy3.narrow(0, first, count), col);
    Tensor gxb = gx32.narrow(0, first, count);
    k.col2im(col, g, gxb);
  });
  if (half) kernels_for(gx.device()).copy(gx32, gx);
}

void lowered_convolution_2d_grad_filter(const ConvLoweringKernels& k, const Tensor& x, const Tensor& gy,
                                        const Conv2dGeometry& g, Tensor& gW) {
  const int64_t n = x.size(0), c = x.size(1), c_out = gy.size(1), groups = g.groups;
  if (is_depthwise(c, g)) {
    k.depthwise_conv_grad_filter(x, gy, g, gW);
    return;
  }
  const int64_t c_out_g = c_out / groups, depth = c / groups * g.kh * g.kw, cols = g.out_h * g.out_w;
  const Tensor gy3 = gy.reshape({n, c_out, cols});
  const bool pointwise = is_pointwise(g);
  LoweredChunks chunks(pointwise ? 0 : n, c * g.kh * g.kw, cols, x.dtype(), x.device());
  // The images' products are summed in PARTS partial sums (a fixed split of each chunk, so that
  // a CPU team shares them out), then the parts are added up: acc (groups, parts, C_out/groups, depth).
  // Half gradients sum in float32 throughout and are rounded once at the end.
  const bool half = is_half(gW.dtype());
  const DType sums = half ? DType::Float32 : gW.dtype();
  const int64_t part_bytes = std::max<int64_t>(1, c_out * depth * int64_t(dtype_size(sums)));
  const int64_t most_parts = std::max<int64_t>(1, kConvLoweredBytes / part_bytes);
  const int64_t parts = std::clamp<int64_t>(std::min<int64_t>(pointwise ? n : chunks.min_chunk(), 16), 1, most_parts);
  Tensor sum = gW.reshape({groups, 1, c_out_g, depth});
  Tensor total = half ? Tensor::empty(sum.shape(), sums, x.device()) : sum;  // the parts' total
  Tensor acc = parts == 1 ? total : Tensor::empty({groups, parts, c_out_g, depth}, sums, x.device());
  double beta = 0.0;
  auto products = [&](const Tensor& col, const Tensor& gyb) {
    for (int64_t gi = 0; gi < groups; ++gi) {
      Tensor out = acc[gi];
      k.batched_gemm(gyb.narrow(1, gi * c_out_g, c_out_g), false, col.narrow(1, gi * depth, depth), true, 1.0, beta,
                     out);
    }
    beta = 1.0;
  };
  if (pointwise) {
    products(x.reshape({n, c, cols}), gy3);
  } else {
    chunks.for_each([&](int64_t first, int64_t count, Tensor col) {
      k.im2col(x.narrow(0, first, count), g, col);
      products(col, gy3.narrow(0, first, count));
    });
  }
  const Kernels& kernels = kernels_for(x.device());
  if (parts > 1) kernels.sum_axes(acc, {false, true, false, false}, total);
  if (half) kernels.copy(total, sum);
}

}  // namespace chainer
