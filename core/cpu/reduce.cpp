#include <algorithm>
#include <limits>

#include "core/cpu/kernels.h"
#include "core/util/parallel.h"

namespace chainer::cpu::CHAINER_ISA {

// The elements per block of a sum down to one value.
constexpr int64_t kWholeSumBlock = 1 << 15;

// Sums A over the axes marked in REDUCE into OUT (the kept axes, in order); double
// accumulators keep float32 sums accurate.
void sum_axes(const Tensor& a, const std::vector<bool>& reduce, Tensor& out) {
  if (through_float32(out, [&](Tensor& out32) { sum_axes(widened(a), reduce, out32); })) return;
  CHAINER_DISPATCH_ALL(a.dtype(), "sum", [&] {
    using T = scalar_t;
    const Tensor ac = a.contiguous();
    const T* pa = ac.data<T>();
    const int64_t nd = a.ndim();
    const Shape& shape = a.shape();
    // Fast path: reduce the leading axis of a 2-D-like view (bias gradients).
    int64_t lead = 0;
    while (lead < nd && reduce[size_t(lead)]) ++lead;
    bool rest_kept = true;
    for (int64_t d = lead; d < nd; ++d) rest_kept &= !reduce[size_t(d)];
    std::vector<double> acc(size_t(out.numel()), 0.0);
    if (rest_kept) {
      int64_t rows = 1, cols = 1;
      for (int64_t d = 0; d < lead; ++d) rows *= shape[size_t(d)];
      for (int64_t d = lead; d < nd; ++d) cols *= shape[size_t(d)];
      if (cols == 1 && rows > kWholeSumBlock) {
        // One total (the finiteness check of loss scaling sums every gradient): blocks of a
        // fixed size summed in parallel, each in 8 interleaved lanes (a loop the compiler
        // vectorizes; one running sum waits on every addition's latency), then the lanes and
        // the blocks in order. The order depends on the length alone, not on the threads.
        const int64_t blocks = (rows + kWholeSumBlock - 1) / kWholeSumBlock;
        std::vector<double> partial(size_t(blocks), 0.0);
        parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
          for (int64_t blk = b0; blk < b1; ++blk) {
            const int64_t begin = blk * kWholeSumBlock, end = std::min(rows, begin + kWholeSumBlock);
            double lane[8] = {};
            int64_t i = begin;
            for (; i + 8 <= end; i += 8)
              for (int l = 0; l < 8; ++l) lane[l] += double(pa[i + l]);
            double sum = 0;
            for (; i < end; ++i) sum += double(pa[i]);
            for (int l = 0; l < 8; ++l) sum += lane[l];
            partial[size_t(blk)] = sum;
          }
        });
        for (double p : partial) acc[0] += p;
      } else {
        // Columns split over the team (each column still summed row by row, in order: the
        // result does not depend on the thread count); serial, this was ~1% of a tutorial step.
        parallel_for(cols, std::max<int64_t>(16, kGrain / std::max<int64_t>(rows, 1)), [&](int64_t j0, int64_t j1) {
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t j = j0; j < j1; ++j) acc[size_t(j)] += double(pa[r * cols + j]);
        });
      }
    } else {
      // Adjacent axes of one kind merged into groups (outer to inner); the last group is a
      // contiguous run of WIDTH elements. Per unit (an index into the kept groups but a
      // trailing kept one) the reduced groups are walked in memory order, each step adding one
      // run: into WIDTH outputs when the run is kept, into one when it is reduced. Units run in
      // parallel and each output sums in memory order, whatever the thread count.
      struct Group {
        int64_t size, stride;
        bool reduced;
      };
      std::vector<Group> groups, kept, reduced;
      for (int64_t d = 0; d < nd; ++d) {
        if (shape[size_t(d)] == 1) continue;
        if (!groups.empty() && groups.back().reduced == reduce[size_t(d)]) groups.back().size *= shape[size_t(d)];
        else groups.push_back({shape[size_t(d)], 0, reduce[size_t(d)]});
      }
      if (groups.empty()) groups.push_back({1, 0, false});
      for (int64_t i = int64_t(groups.size()) - 1, stride = 1; i >= 0; stride *= groups[size_t(i)].size, --i)
        groups[size_t(i)].stride = stride;
      const Group last = groups.back();
      for (size_t i = 0; i + 1 < groups.size(); ++i) (groups[i].reduced ? reduced : kept).push_back(groups[i]);
      int64_t units = 1, steps = 1;
      for (const Group& g : kept) units *= g.size;
      for (const Group& g : reduced) steps *= g.size;
      const int64_t width = last.size, outputs_per_unit = last.reduced ? 1 : width;
      parallel_for(units, std::max<int64_t>(1, kGrain / std::max<int64_t>(steps * width, 1)), [&](int64_t u0, int64_t u1) {
        std::vector<int64_t> at(reduced.size());
        for (int64_t u = u0; u < u1; ++u) {
          int64_t offset = 0;
          for (int64_t i = int64_t(kept.size()) - 1, rest = u; i >= 0; rest /= kept[size_t(i)].size, --i)
            offset += rest % kept[size_t(i)].size * kept[size_t(i)].stride;
          double* dst = acc.data() + u * outputs_per_unit;
          std::fill(at.begin(), at.end(), 0);
          for (int64_t step = 0; step < steps; ++step) {
            const T* src = pa + offset;
            if (last.reduced) {
              double sum = *dst;
              for (int64_t j = 0; j < width; ++j) sum += double(src[j]);
              *dst = sum;
            } else {
              for (int64_t j = 0; j < width; ++j) dst[j] += double(src[j]);
            }
            for (size_t i = reduced.size(); i-- > 0;) {  // the next run: an odometer over the reduced groups
              offset += reduced[i].stride;
              if (++at[i] < reduced[i].size) break;
              offset -= reduced[i].stride * reduced[i].size, at[i] = 0;
            }
          }
        }
      });
    }
    T* po = out.data<T>();
    for (size_t i = 0; i < acc.size(); ++i) po[i] = T(acc[i]);
  });
}

namespace {
// The max (IS_MAX) or min of A along AXIS and its first index: the running extreme starts at
// element 0 and is replaced only on a strict improvement, so ties keep the first.
template <bool IS_MAX>
void extreme_axis(const char* op, const Tensor& a, int64_t axis, Tensor& out, Tensor* index) {
  if (is_half(a.dtype())) {  // exact in float32, then exactly back
    Tensor out32 = out.defined() ? float32_like(out) : Tensor();
    extreme_axis<IS_MAX>(op, widened(a), axis, out32, index);
    if (out.defined()) copy(out32, out);
    return;
  }
  CHAINER_DISPATCH_ALL(a.dtype(), op, [&] {
    using T = scalar_t;
    const Tensor ac = a.contiguous();
    const T* pa = ac.data<T>();
    const auto [outer, len, inner] = axis_view(a.shape(), axis);
    T* po = out.defined() ? out.data<T>() : nullptr;
    int32_t* pi = index ? index->data<int32_t>() : nullptr;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const T* p = pa + o * len * inner + i;
        T best = p[0];
        int64_t at = 0;
        for (int64_t k = 1; k < len; ++k)
          if (IS_MAX ? p[k * inner] > best : p[k * inner] < best) best = p[k * inner], at = k;
        if (po) po[o * inner + i] = best;
        if (pi) pi[o * inner + i] = int32_t(at);
      }
  });
}
}  // namespace

void max_axis(const Tensor& a, int64_t axis, Tensor& out, Tensor* argmax) {
  extreme_axis<true>("max", a, axis, out, argmax);
}

void min_axis(const Tensor& a, int64_t axis, Tensor& out, Tensor* argmin) {
  extreme_axis<false>("min", a, axis, out, argmin);
}

void sum_of_squares(const std::vector<Tensor>& xs, Tensor& out) {
  double total = 0;
  for (const Tensor& x : xs) {
    double s = 0;  // per tensor, then added: the order GradientClipping always used
    CHAINER_DISPATCH_FLOATING(x.dtype(), "sum_of_squares", [&] {
      const Tensor c = x.contiguous();
      const scalar_t* p = c.data<scalar_t>();
      for (int64_t i = 0, n = c.numel(); i < n; ++i) s += double(p[i]) * double(p[i]);
    });
    total += s;
  }
  *out.data<double>() = total;
}

}  // namespace chainer::cpu::CHAINER_ISA
