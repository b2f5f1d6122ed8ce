// What the tests of the 2-D convolutions share (convolution_2d, depthwise_convolution_2d,
// deconvolution_2d and their links): the table of geometries, a direct convolution written in
// float64 from the definition, and require_close. Header-only.
#pragma once
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "core/ops/ops.h"
#include "core/tensor/tensor.h"
#include "nn/functions.h"

namespace chainer::testing {

/// One convolution: x (n, c, h, w), W (c_out, c / groups, kh, kw) and the arguments.
struct ConvCase {
  std::string name;
  int64_t n, c, h, w, c_out, kh, kw;
  functions::Pair stride = 1, pad = 0, dilate = 1;
  int64_t groups = 1;
  bool cover_all = false;
};

/// The geometries every check runs over.
inline std::vector<ConvCase> conv_cases() {
  return {
      {"3x3, pad 1", 2, 3, 5, 5, 4, 3, 3, 1, 1},
      {"batch 1, one channel, 1x1 output", 1, 1, 3, 3, 2, 3, 3},
      {"non-square image and kernel, stride (2, 1), pad (0, 2)", 2, 2, 7, 4, 3, 3, 2, {2, 1}, {0, 2}},
      {"stride 3 with cover_all", 2, 2, 7, 8, 3, 2, 3, 3, 0, 1, 1, true},
      {"dilate (2, 1), pad 2", 1, 2, 6, 5, 2, 3, 2, 1, 2, {2, 1}},
      {"groups 2", 2, 4, 5, 4, 6, 3, 3, 1, 1, 1, 2},
      {"depthwise: groups 3, multiplier 2", 2, 3, 5, 5, 6, 3, 3, 2, 1, 1, 3},
      {"depthwise, stride (2, 1), pad (1, 2), dilate (1, 2), cover_all", 2, 2, 7, 6, 4, 3, 2, {2, 1}, {1, 2}, {1, 2}, 2,
       true},
      {"1x1, stride 1, no padding (no lowering)", 3, 4, 3, 5, 2, 1, 1},
      {"16 channels, dilate 2, pad (2, 1) (the data gradient as a flipped convolution)", 2, 16, 6, 5, 3, 3, 2, 1,
       {2, 1}, 2},
      {"1x1, stride 2", 2, 3, 5, 5, 2, 1, 1, 2},
      {"kernel as large as the padded input", 2, 2, 3, 2, 2, 5, 4, 1, 1},
      {"pad larger than the kernel", 1, 2, 3, 3, 2, 2, 2, 2, 3},
  };
}

/// The arguments of K as core/ops takes them.
inline ops::Conv2dParams params_of(const ConvCase& k) {
  return {.sy = k.stride.y, .sx = k.stride.x, .ph = k.pad.y, .pw = k.pad.x, .dy = k.dilate.y, .dx = k.dilate.x,
          .groups = k.groups, .cover_all = k.cover_all};
}

/// The output extent of a convolution along one axis (Chainer's get_conv_outsize).
inline int64_t out_extent(int64_t size, int64_t k, int64_t s, int64_t p, int64_t d, bool cover_all) {
  const int64_t dk = (k - 1) * d + 1;
  return cover_all ? (size + 2 * p - dk + s - 1) / s + 1 : (size + 2 * p - dk) / s + 1;
}

/// The convolution by its definition, in float64: y[n, o, oy, ox] = b[o] + the sum over the
/// channels c of o's group and the window (i, j) of W[o, c - first, i, j] x[n, c, iy, ix].
inline Tensor direct_convolution(const Tensor& x, const Tensor& W, const Tensor& b, const ConvCase& k) {
  const int64_t oh = out_extent(k.h, k.kh, k.stride.y, k.pad.y, k.dilate.y, k.cover_all);
  const int64_t ow = out_extent(k.w, k.kw, k.stride.x, k.pad.x, k.dilate.x, k.cover_all);
  const std::vector<double> xv = x.to_vector<double>(), wv = W.to_vector<double>();
  const std::vector<double> bv = b.defined() ? b.to_vector<double>() : std::vector<double>(size_t(k.c_out), 0.0);
  const int64_t cg = k.c / k.groups, og = k.c_out / k.groups;
  std::vector<double> y;
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t o = 0; o < k.c_out; ++o)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          double sum = bv[size_t(o)];
          for (int64_t cc = 0; cc < cg; ++cc)
            for (int64_t i = 0; i < k.kh; ++i)
              for (int64_t j = 0; j < k.kw; ++j) {
                const int64_t iy = oy * k.stride.y - k.pad.y + i * k.dilate.y;
                const int64_t ix = ox * k.stride.x - k.pad.x + j * k.dilate.x;
                if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
                const int64_t c = o / og * cg + cc;
                sum += wv[size_t(((o * cg + cc) * k.kh + i) * k.kw + j)] * xv[size_t(((n * k.c + c) * k.h + iy) * k.w + ix)];
              }
          y.push_back(sum);
        }
  return Tensor::from_vector(y, {k.n, k.c_out, oh, ow});
}

/// GOT has WANT's shape and every element within TOL (1 + |want|); the count of the others and
/// the first of them otherwise.
inline void require_close(const Tensor& got, const Tensor& want, double tol) {
  REQUIRE(shape_str(got.shape()) == shape_str(want.shape()));
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < g.size(); ++i)
    if (!(std::abs(g[i] - w[i]) <= tol * (1 + std::abs(w[i]))) && bad++ == 0) first = i;
  INFO(bad << " of " << g.size() << " elements differ; the first at " << first << ": got "
            << (bad ? g[first] : 0.0) << ", want " << (bad ? w[first] : 0.0));
  CHECK(bad == 0);
}

}  // namespace chainer::testing
