// Convolutions as packed GEMMs whose B operand comes straight from the image: the panels that
// the GEMM would pack from an im2col matrix are packed from the image itself (sgemm_filled_b),
// so the lowered matrix (kh * kw times the image) is never written nor read back. With the
// lowered matrix, the 3x3 layers of the Fashion-MNIST network ran at 35-60% of the GEMM's rate:
// each image's columns (0.9 MB for 32 channels of 28 x 28) passed through memory three times
// per product (docs/performance.md).
//
// Forward: per image and group, y = W (C_out/g x depth) * windows (depth x pixels), a panel
// being a panel's width of output pixels (32 in AVX-512, 16 in AVX2) by a slice of window rows
// (c, i, j). Filter gradient: gW += gy (C_out/g x pixels) * windows^T, a panel being a slice of
// pixels by a panel's width of window rows, made as rows of pixels and transposed. The data
// gradient with stride 1 is a forward convolution (the flipped filters, core/ops/conv_lowering.cpp);
// other strides keep the lowering. The vector families only (AVX2, AVX-512); the generic family
// lowers every convolution.
#include <algorithm>
#include <cstring>

#include "core/ops/conv_lowering.h"
#include "core/cpu/kernels.h"
#include "core/util/parallel.h"
#include "core/tensor/tensor.h"
#if defined(CHAINER_ISA_PACKED)
#include "core/cpu/simd.h"
#endif

namespace chainer::cpu::CHAINER_ISA {

#if defined(CHAINER_ISA_PACKED)
namespace {
using namespace simd;
constexpr int64_t NR = kGemmPanelWidth;
constexpr int64_t kHalves = NR / kLanes;  // vectors per panel row
static_assert(kHalves == 2);

// One image's group of C planes of H x W (float32) seen as the window matrix of geometry G:
// row r = (c, i, j) (c * kh * kw + i * kw + j), column p = output pixel (p / out_w, p % out_w);
// element x[c, oy * sy - ph + i * dy, ox * sx - pw + j * dx], 0 outside the image.
struct Windows {
  const float* x;
  int64_t h, w;
  Conv2dGeometry g;
  int64_t pixels() const { return g.out_h * g.out_w; }
};

// The lanes [lo, hi) of 32 as a bit mask (bounds clamped to [0, 32]).
inline uint32_t lanes(int64_t lo, int64_t hi) {
  lo = std::clamp<int64_t>(lo, 0, 32), hi = std::clamp<int64_t>(hi, 0, 32);
  if (hi <= lo) return 0;
  const uint64_t upto = (uint64_t(1) << hi) - 1;
  return uint32_t(upto & ~((uint64_t(1) << lo) - 1));
}

// Output columns [lo, hi) of a row whose input column ox * s - p + off lies in [0, w).
inline void valid_columns(int64_t out, int64_t w, int64_t s, int64_t p, int64_t off, int64_t& lo, int64_t& hi) {
  const int64_t first = p - off, last = w - 1 + p - off;
  lo = first <= 0 ? 0 : (first + s - 1) / s;
  hi = last < 0 ? 0 : std::min(out, last / s + 1);
  if (hi < lo) hi = lo;
}

// The forward's B panel: window rows [p0, p0 + kc) by the NR output pixels from j0.
// A run of pixels within one output row reads consecutive input columns when sx = 1: one masked
// load per run and vector of lanes. Other strides gather.
void fill_window_columns(const void* context, int64_t p0, int64_t kc, int64_t j0, float* panel) {
  const Windows& win = *static_cast<const Windows*>(context);
  const Conv2dGeometry& g = win.g;
  const int64_t count = std::min(NR, win.pixels() - j0), taps = g.kh * g.kw;
  int64_t c = p0 / taps, i = p0 % taps / g.kw, j = p0 % g.kw;
  // The runs: lanes [lane, lane + len) are pixels (oy, ox0 ...) of one output row.
  int64_t run_lane[NR], run_len[NR], run_oy[NR], run_ox0[NR], runs = 0;
  for (int64_t lane = 0; lane < count; ++runs) {
    const int64_t p = j0 + lane;
    run_lane[runs] = lane, run_oy[runs] = p / g.out_w, run_ox0[runs] = p % g.out_w;
    run_len[runs] = std::min(g.out_w - run_ox0[runs], count - lane);
    lane += run_len[runs];
  }
  constexpr int64_t kTable = 256;
  if (g.sx == 1 && g.kh * runs <= kTable && g.kw * runs <= kTable) {
    // Per window row (i) and run: the input row's offset, or -1 outside the image. Per window
    // column (j) and run: the lanes inside the image, and the offset of lane 0's input column
    // (masked-off lanes touch no memory, so it may lie outside the plane).
    int64_t row_offset[kTable], column_offset[kTable];
    uint32_t column_lanes[kTable];
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t q = 0; q < runs; ++q) {
        const int64_t iy = run_oy[q] * g.sy - g.ph + i * g.dy;
        row_offset[i * runs + q] = iy >= 0 && iy < win.h ? iy * win.w : -1;
      }
    for (int64_t j = 0; j < g.kw; ++j) {
      int64_t lo, hi;  // the output columns whose input column lies inside the image
      valid_columns(g.out_w, win.w, 1, g.pw, j * g.dx, lo, hi);
      for (int64_t q = 0; q < runs; ++q) {
        const int64_t shift = run_lane[q] - run_ox0[q];  // lane of output column ox: ox + shift
        column_lanes[j * runs + q] =
            lanes(std::max(lo, run_ox0[q]) + shift, std::min(hi, run_ox0[q] + run_len[q]) + shift);
        column_offset[j * runs + q] = -g.pw + j * g.dx - shift;
      }
    }
    for (int64_t r = 0; r < kc; ++r) {
      const float* plane = win.x + c * win.h * win.w;
      Vec v0 = zero(), v1 = zero();
      for (int64_t q = 0; q < runs; ++q) {
        const int64_t row = row_offset[i * runs + q];
        const uint32_t bits = column_lanes[j * runs + q];
        if (row < 0 || !bits) continue;
        const uintptr_t base = reinterpret_cast<uintptr_t>(plane) + uintptr_t(row + column_offset[j * runs + q]) * sizeof(float);
        v0 = bit_or(v0, load_masked(mask(bits), base));
        v1 = bit_or(v1, load_masked(mask(bits >> kLanes), base + kLanes * sizeof(float)));
      }
      store(panel + r * NR, v0);
      store(panel + r * NR + kLanes, v1);
      if (++j == g.kw) j = 0, ++i;
      if (i == g.kh) i = 0, ++c;
    }
    return;
  }
  // Any stride: per lane its output row and column; per window row a masked gather.
  alignas(64) int32_t oy[NR], ox[NR];
  for (int64_t l = 0; l < NR; ++l) {
    const int64_t p = j0 + std::min(l, count - 1);
    oy[l] = int32_t(p / g.out_w), ox[l] = int32_t(p % g.out_w);
  }
  const uint32_t live = lanes(0, count);
  const IVec vh = iset1(int32_t(win.h)), vw = iset1(int32_t(win.w));
  IVec ty[kHalves], tx[kHalves];  // oy * sy - ph and ox * sx - pw per lane
  Mask live_mask[kHalves];
  for (int v = 0; v < kHalves; ++v) {
    ty[v] = isub(imul(iload(oy + kLanes * v), iset1(int32_t(g.sy))), iset1(int32_t(g.ph)));
    tx[v] = isub(imul(iload(ox + kLanes * v), iset1(int32_t(g.sx))), iset1(int32_t(g.pw)));
    live_mask[v] = mask(live >> (kLanes * v));
  }
  for (int64_t r = 0; r < kc; ++r) {
    const float* plane = win.x + c * win.h * win.w;
    for (int v = 0; v < kHalves; ++v) {
      const IVec iy = iadd(ty[v], iset1(int32_t(i * g.dy)));
      const IVec ix = iadd(tx[v], iset1(int32_t(j * g.dx)));
      const Mask m = in_range(in_range(live_mask[v], iy, vh), ix, vw);
      store(panel + r * NR + kLanes * v, gather(m, iadd(imul(iy, vw), ix), plane));
    }
    if (++j == g.kw) j = 0, ++i;
    if (i == g.kh) i = 0, ++c;
  }
}

// Stride 1, through a copy of the image with its padding written out (PADDED, C planes of
// hp x wp, wp = W + 2 pw): output pixel (oy, ox) is taken as column oy * wp + ox of a product
// over out_h * wp columns, the last wp - out_w of each row thrown away. Window row (c, i, j)
// over those columns is then one contiguous run of the padded plane, from offset
// i * dy * wp + j * dx: a panel row is two plain loads, where fill_window_columns needs a
// masked load per output row a panel crosses, and per tap its tables.
struct PaddedWindows {
  const float* padded;
  int64_t hp, wp;
  Conv2dGeometry g;
};

void fill_padded_columns(const void* context, int64_t p0, int64_t kc, int64_t j0, float* panel) {
  const PaddedWindows& win = *static_cast<const PaddedWindows*>(context);
  const Conv2dGeometry& g = win.g;
  const int64_t taps = g.kh * g.kw;
  int64_t c = p0 / taps, i = p0 % taps / g.kw, j = p0 % g.kw;
  // Lanes past the last column read the slack after the planes (padded_windows_floats) and
  // make columns the product never stores.
  for (int64_t r = 0; r < kc; ++r) {
    const float* src = win.padded + (c * win.hp + i * g.dy) * win.wp + j * g.dx + j0;
    store(panel + r * NR, load(src));
    store(panel + r * NR + kLanes, load(src + kLanes));
    if (++j == g.kw) j = 0, ++i;
    if (i == g.kh) i = 0, ++c;
  }
}

// DST[0, count) = window row R over the pixels [p0, p0 + count); it may also write up to
// kLanes floats past them (whole vectors: masked stores are slow in AVX2 on AMD's cores), which
// the caller writes afterwards or leaves as slack.
void window_row(const Windows& win, int64_t r, int64_t p0, int64_t count, float* dst) {
  const Conv2dGeometry& g = win.g;
  const int64_t taps = g.kh * g.kw, c = r / taps, i = r % taps / g.kw, j = r % g.kw;
  const float* plane = win.x + c * win.h * win.w;
  int64_t lo, hi;
  valid_columns(g.out_w, win.w, g.sx, g.pw, j * g.dx, lo, hi);
  for (int64_t p = p0; p < p0 + count;) {
    const int64_t oy = p / g.out_w, ox0 = p % g.out_w, len = std::min(g.out_w - ox0, p0 + count - p);
    float* out = dst + (p - p0);
    const int64_t iy = oy * g.sy - g.ph + i * g.dy;
    const int64_t a = std::clamp(lo, ox0, ox0 + len), b = std::clamp(hi, a, ox0 + len);
    if (iy < 0 || iy >= win.h || a == b) {
      std::memset(out, 0, size_t(len) * sizeof(float));
    } else if (g.sx == 1) {
      // A vector of pixels at a time: the lanes inside the image loaded (masked-off lanes touch
      // no memory), the rest stored as zeros; the last vector's lanes past the run land on the
      // pixels after it, written next.
      const uintptr_t src = reinterpret_cast<uintptr_t>(plane + iy * win.w - g.pw + j * g.dx);
      for (int64_t t = 0; t < len; t += kLanes) {
        const int64_t first = ox0 + t;
        const uint32_t inside = lanes(a - first, b - first) & lanes(0, len - t);
        store(out + t, load_masked(mask(inside), src + uintptr_t(first) * sizeof(float)));
      }
    } else {
      std::memset(out, 0, size_t(a - ox0) * sizeof(float));
      const float* src = plane + iy * win.w - g.pw + j * g.dx;  // src[ox * sx]: pixel ox's input
      for (int64_t ox = a; ox < b; ++ox) out[ox - ox0] = src[ox * g.sx];
      std::memset(out + (b - ox0), 0, size_t(ox0 + len - b) * sizeof(float));
    }
    p += len;
  }
}

// The filter gradient's B operand (pixels x window rows): the windows of one image and their
// number of rows.
struct WindowRows {
  Windows win;
  int64_t depth;
};

// Its panel: pixels [p0, p0 + kc) by the NR window rows from j0, made as rows of pixels (in L1)
// and transposed.
void fill_window_rows(const void* context, int64_t p0, int64_t kc, int64_t j0, float* panel) {
  const WindowRows& wr = *static_cast<const WindowRows*>(context);
  const Windows& win = wr.win;
  const Conv2dGeometry& g = win.g;
  // Rows of up to 512 pixels, and the slack that whole-vector stores past the last one write.
  alignas(64) thread_local float rows[NR * 512 + kLanes];
  CHAINER_ASSERT(kc <= 512, "fill_window_rows: a slice of ", kc, " pixels");
  const int64_t count = std::min(NR, wr.depth - j0), chunks = (g.out_w + kLanes - 1) / kLanes;
  constexpr int64_t kTable = 256;
  if (g.sx == 1 && p0 % g.out_w == 0 && kc % g.out_w == 0 && g.kw * chunks <= kTable) {
    // Slices of whole output rows (sgemm_filled_b's k_align): each output row's pixels are one
    // input row's columns, shifted by the window column j; per j and vector of pixels, the lanes
    // inside the image. Each vector is stored whole: the lanes past the output row land on the
    // next row, written next (or on the slack).
    Mask load[kTable];
    for (int64_t j = 0; j < g.kw; ++j) {
      int64_t lo, hi;
      valid_columns(g.out_w, win.w, 1, g.pw, j * g.dx, lo, hi);
      for (int64_t t = 0; t < chunks; ++t)
        load[j * chunks + t] = mask(lanes(lo - kLanes * t, hi - kLanes * t) & lanes(0, g.out_w - kLanes * t));
    }
    const int64_t taps = g.kh * g.kw, oy0 = p0 / g.out_w, out_rows = kc / g.out_w;
    int64_t c = j0 / taps, i = j0 % taps / g.kw, j = j0 % g.kw;
    for (int64_t q = 0; q < count; ++q) {
      const float* plane = win.x + c * win.h * win.w - g.pw + j * g.dx;
      for (int64_t oy = oy0; oy < oy0 + out_rows; ++oy) {
        float* out = rows + q * kc + (oy - oy0) * g.out_w;
        const int64_t iy = oy * g.sy - g.ph + i * g.dy;
        if (iy < 0 || iy >= win.h) {
          for (int64_t t = 0; t < chunks; ++t) store(out + kLanes * t, zero());
          continue;
        }
        const uintptr_t src = reinterpret_cast<uintptr_t>(plane + iy * win.w);
        for (int64_t t = 0; t < chunks; ++t)
          store(out + kLanes * t, load_masked(load[j * chunks + t], src + uintptr_t(kLanes * t) * sizeof(float)));
      }
      if (++j == g.kw) j = 0, ++i;
      if (i == g.kh) i = 0, ++c;
    }
  } else {
    for (int64_t q = 0; q < count; ++q) window_row(win, j0 + q, p0, kc, rows + q * kc);
  }
  gemm_panel_from_rows(rows, kc, count, kc, panel);
}
}  // namespace

bool implicit_conv_applies(const Tensor& x, const Conv2dGeometry& g) {
  return x.dtype() == DType::Float32 && gemm_backend()[0] == 'p' && !is_depthwise(x.size(1), g) &&
         !is_pointwise(g) && x.size(2) * x.size(3) < (int64_t(1) << 30);
}

namespace {
// The padded path when the thrown-away columns cost less than the masked loads they save:
// stride 1, and at most a seventh more columns (3x3 layers 28 and 14 wide: 30 / 28 and 16 / 14,
// both faster so, the Fashion network's epoch by 6%; 7 wide, 9 / 7, not taken).
bool padded_path_pays(int64_t w, const Conv2dGeometry& g) {
  return g.sy == 1 && g.sx == 1 && 7 * (w + 2 * g.pw) <= 8 * g.out_w;
}

// The padded planes of C_G channels and the slack after them that the last panel's lanes read:
// up to (kw - 1) dx + 31 floats past the last plane.
int64_t padded_floats(int64_t c_g, int64_t h, int64_t w, const Conv2dGeometry& g) {
  return c_g * (h + 2 * g.ph) * (w + 2 * g.pw) + (g.kw - 1) * g.dx + 2 * NR;
}

// One image's group through the padded path: X's C_G planes copied into PADDED with zero
// borders, the product over out_h * wp columns into SCRATCH, then its rows' first out_w
// columns (plus the bias) into OUT.
void padded_convolution(const float* x, int64_t c_g, int64_t h, int64_t w, const float* weights, int64_t c_out_g,
                        const float* bias, const Conv2dGeometry& g, float* padded, float* scratch, float* out) {
  const int64_t hp = h + 2 * g.ph, wp = w + 2 * g.pw, depth = c_g * g.kh * g.kw, columns = g.out_h * wp;
  std::memset(padded, 0, size_t(padded_floats(c_g, h, w, g)) * sizeof(float));
  for (int64_t c = 0; c < c_g; ++c)
    for (int64_t iy = 0; iy < h; ++iy)
      std::memcpy(padded + (c * hp + iy + g.ph) * wp + g.pw, x + (c * h + iy) * w, size_t(w) * sizeof(float));
  const PaddedWindows win{padded, hp, wp, g};
  sgemm_filled_b(c_out_g, columns, depth, weights, depth, false, fill_padded_columns, &win, 1.f, 0.f, scratch, columns);
  for (int64_t o = 0; o < c_out_g; ++o) {
    const float shift = bias ? bias[o] : 0.f;
    for (int64_t oy = 0; oy < g.out_h; ++oy) {
      const float* src = scratch + o * columns + oy * wp;
      float* dst = out + (o * g.out_h + oy) * g.out_w;
      for (int64_t ox = 0; ox < g.out_w; ++ox) dst[ox] = src[ox] + shift;
    }
  }
}
}  // namespace

void implicit_convolution_2d(const Tensor& x, const Tensor& W, const Tensor& b, const Conv2dGeometry& g, Tensor& y) {
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3), c_out = y.size(1), groups = g.groups;
  const int64_t c_g = c / groups, c_out_g = c_out / groups, depth = c_g * g.kh * g.kw, pixels = g.out_h * g.out_w;
  const float* px = x.data<float>();
  const float* pw = W.data<float>();
  const float* pb = b.defined() ? b.data<float>() : nullptr;
  float* py = y.data<float>();
  if (padded_path_pays(w, g)) {
    // Per task its padded planes and its product, from the allocator for this call.
    const int64_t padded_size = padded_floats(c_g, h, w, g), scratch_size = c_out_g * g.out_h * (w + 2 * g.pw);
    parallel_tasks(n * groups, num_threads(), [&](int64_t task) {
      const int64_t image = task / groups, group = task % groups;
      Tensor buffer = Tensor::empty({padded_size + scratch_size}, DType::Float32, Device::cpu());
      float* padded = buffer.data<float>();
      padded_convolution(px + (image * c + group * c_g) * h * w, c_g, h, w, pw + group * c_out_g * depth, c_out_g,
                         pb ? pb + group * c_out_g : nullptr, g, padded, padded + padded_size,
                         py + (image * c_out + group * c_out_g) * pixels);
    });
    return;
  }
  parallel_tasks(n * groups, num_threads(), [&](int64_t task) {
    const int64_t image = task / groups, group = task % groups;
    const Windows win{px + (image * c + group * c_g) * h * w, h, w, g};
    float* out = py + (image * c_out + group * c_out_g) * pixels;
    if (pb)  // the product adds onto the bias
      for (int64_t o = 0; o < c_out_g; ++o) std::fill(out + o * pixels, out + (o + 1) * pixels, pb[group * c_out_g + o]);
    sgemm_filled_b(c_out_g, pixels, depth, pw + group * c_out_g * depth, depth, false, fill_window_columns, &win, 1.f,
                   pb ? 1.f : 0.f, out, pixels);
  });
}

void implicit_convolution_2d_grad_filter(const Tensor& x, const Tensor& gy, const Conv2dGeometry& g, Tensor& gW) {
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3), c_out = gy.size(1), groups = g.groups;
  const int64_t c_g = c / groups, c_out_g = c_out / groups, depth = c_g * g.kh * g.kw, pixels = g.out_h * g.out_w;
  const float* px = x.data<float>();
  const float* pg = gy.data<float>();
  const int64_t size = c_out * depth;
  // DST (filters [m0, m1) of GROUP, rows DEPTH apart) = the sum over images [i0, i1), in order,
  // of gy's rows of those filters times the images' windows.
  const auto sum_images = [&](int64_t group, int64_t m0, int64_t m1, int64_t i0, int64_t i1, float* dst) {
    for (int64_t image = i0; image < i1; ++image) {
      const WindowRows rows{{px + (image * c + group * c_g) * h * w, h, w, g}, depth};
      sgemm_filled_b(m1 - m0, depth, pixels, pg + (image * c_out + group * c_out_g + m0) * pixels, pixels, false,
                     fill_window_rows, &rows, 1.f, image == i0 ? 0.f : 1.f, dst, depth, g.out_w);
    }
  };
  // Either way below, the result does not depend on the thread count.
  if (c_out_g >= 128) {
    // Many filters: tasks of filter rows, each summing every image into its rows of gW (partial
    // sums over images would be as large as gW several times over: nin's 1024 3x3 filters of
    // 384 channels, 14 MB each).
    const int64_t blocks = std::min<int64_t>(c_out_g / 64, 16);
    float* out = gW.data<float>();
    parallel_tasks(blocks * groups, num_threads(), [&](int64_t task) {
      const int64_t block = task / groups, group = task % groups;
      const int64_t m0 = c_out_g * block / blocks, m1 = c_out_g * (block + 1) / blocks;
      sum_images(group, m0, m1, 0, n, out + (group * c_out_g + m0) * depth);
    });
    return;
  }
  // Few filters: PARTS partial sums, each over a fixed run of images, then added up in order.
  const int64_t parts = std::min<int64_t>(n, 16);
  Tensor acc = parts == 1 ? gW : Tensor::empty({parts, size}, DType::Float32, Device::cpu());
  float* pa = acc.data<float>();
  parallel_tasks(parts * groups, num_threads(), [&](int64_t task) {
    const int64_t part = task / groups, group = task % groups;
    sum_images(group, 0, c_out_g, n * part / parts, n * (part + 1) / parts, pa + part * size + group * c_out_g * depth);
  });
  if (parts == 1) return;
  float* out = gW.data<float>();
  parallel_for(size, 4096, [&](int64_t begin, int64_t end) {
    for (int64_t e = begin; e < end; ++e) {
      float sum = pa[e];
      for (int64_t q = 1; q < parts; ++q) sum += pa[q * size + e];
      out[e] = sum;
    }
  });
}
#else
bool implicit_conv_applies(const Tensor&, const Conv2dGeometry&) { return false; }
void implicit_convolution_2d(const Tensor&, const Tensor&, const Tensor&, const Conv2dGeometry&, Tensor&) {
  CHAINER_ASSERT(false, "implicit_convolution_2d needs a vector family (AVX2 or AVX-512)");
}
void implicit_convolution_2d_grad_filter(const Tensor&, const Tensor&, const Conv2dGeometry&, Tensor&) {
  CHAINER_ASSERT(false, "implicit_convolution_2d_grad_filter needs a vector family (AVX2 or AVX-512)");
}
#endif

}  // namespace chainer::cpu::CHAINER_ISA
