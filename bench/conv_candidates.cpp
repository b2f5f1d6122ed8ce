// Time of one 2-D convolution layer's three passes (forward, backward-data, backward-weights with
// bias) on the candidates for our CPU convolution, float32, NCHW/OIHW user tensors:
//   dnnl-nchw     oneDNN as PyTorch 1.13's mkldnn_convolution calls it in eager mode: per call the
//                 primitive descriptors are made with format_tag::any (the backward ones with a
//                 forward hint), the primitive comes from oneDNN's cache, and activations and
//                 weights are reordered from NCHW/OIHW into the primitive's layouts and the result
//                 back out to NCHW/OIHW, all inside the time.
//   dnnl-blocked  the same primitives, made once, with the activations resident in oneDNN's layouts
//                 (no activation reorders); the weights are still reordered in from OIHW (gW out to
//                 OIHW) per call, as an optimizer over plain OIHW weights needs.
//   dnnl-prim     the primitive alone, everything in its layouts.
//   chainer       what the framework runs: ops::convolution_2d (no bias) and its two gradients,
//                 NCHW in and out (core/cpu/conv.cpp: the implicit GEMM, or the lowering).
//   gemm-img      the GEMM floor of an im2col lowering on our GEMM (chainer::ops through the kernel
//                 table), one product per image: y[n] = W (Cout x K) @ col (K x P), gcol = W^T @ gy[n],
//                 gW += gy[n] @ col^T, K = Cin*k*k, P = OH*OW. im2col / col2im are NOT timed; nor is
//                 the bias (forward add, backward sum).
//   gemm-batch    the same products once over the batch (ops::matmul, a fresh output per call):
//                 W @ col (K x N*P), W^T @ gy (Cout x N*P), gy @ col^T; the transposes between NCHW
//                 and the (C, N*P) matrices are NOT timed either.
// FLOP = 2 * N * Cout * P * K per pass (bias excluded); GFLOP/s is from the fastest window.
//   build/bench/conv_candidates [--threads 2] [--seconds 0.2] [--reps 3] [--only NAME,...]
//                               [--shapes fashion-1,...] [--json]
// Built only when oneDNN (libdnnl-dev) is found. oneDNN here runs on OpenMP (Debian's build):
// its team is sized by omp_set_num_threads(--threads); ours by chainer::set_num_threads.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>
#include <oneapi/dnnl/dnnl_debug.h>

#include "report_errors.h"
#include "core/cpu/family.h"  // gemm_backend()
#include "core/ops/ops.h"
#include "core/util/parallel.h"
#include "core/util/random.h"

using namespace chainer;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

namespace {

struct ConvShape {
  const char* name;
  int64_t n, c_in, c_out, hw, k, stride, pad;
  int64_t out() const { return (hw + 2 * pad - k) / stride + 1; }
  int64_t patch() const { return c_in * k * k; }  // K of the lowered product
  int64_t pixels() const { return out() * out(); }  // P of the lowered product
  double flop() const { return 2.0 * double(n) * double(c_out) * double(pixels()) * double(patch()); }
};

// The layer shapes of the convolution measurements (the Fashion-MNIST reference network's four
// convolutions and ResNet-50's typical layers).
const ConvShape kShapes[] = {
    {"fashion-1", 100, 1, 32, 28, 3, 1, 1},    {"fashion-2", 100, 32, 32, 28, 3, 1, 1},
    {"fashion-3", 100, 32, 64, 14, 3, 1, 1},   {"fashion-4", 100, 64, 64, 14, 3, 1, 1},
    {"resnet-3x3", 8, 64, 64, 56, 3, 1, 1},    {"resnet-1x1a", 8, 256, 64, 56, 1, 1, 0},
    {"resnet-1x1b", 8, 64, 256, 56, 1, 1, 0},  {"resnet-3x3s2", 8, 128, 128, 56, 3, 2, 1},
};
const char* const kPasses[] = {"forward", "backward-data", "backward-weights"};
const char* const kCandidates[] = {"chainer", "dnnl-nchw", "dnnl-blocked", "dnnl-prim", "gemm-img", "gemm-batch"};

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Timing {
  double min_s = 0, median_s = 0;
};

// REPS windows of at least SECONDS each after two warm-up calls; the time per call of each window,
// min and median over windows (the machine is shared: the fastest window is the least disturbed).
Timing time_calls(const std::function<void()>& fn, double seconds, int reps) {
  fn();
  fn();
  std::vector<double> per_call;
  for (int w = 0; w < reps; ++w) {
    int calls = 0;
    const double start = now();
    double elapsed = 0;
    do {
      fn();
      ++calls;
      elapsed = now() - start;
    } while (elapsed < seconds);
    per_call.push_back(elapsed / calls);
  }
  std::sort(per_call.begin(), per_call.end());
  return {per_call.front(), per_call[per_call.size() / 2]};
}

std::vector<float> random_values(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// ---- oneDNN ----

struct Dnnl {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
};

// Reorders FROM into a memory of DESC unless FROM already has it (ideep's reorder_if_differ_in).
dnnl::memory reorder_if_differ(Dnnl& d, dnnl::memory from, const dnnl::memory::desc& desc) {
  if (from.get_desc() == desc) return from;
  dnnl::memory to(desc, d.eng);
  dnnl::reorder(from, to).execute(d.strm, from, to);
  return to;
}

// Reorders FROM into the existing memory TO unless they share a descriptor (then copies nothing:
// TO is FROM's buffer in that case, set up by the caller).
void reorder_into(Dnnl& d, dnnl::memory from, dnnl::memory to) {
  if (from.get_desc() == to.get_desc()) return;
  dnnl::reorder(from, to).execute(d.strm, from, to);
}

struct DnnlLayer {
  ConvShape s;
  dnnl::memory::dims strides, pad;
  dnnl::memory::desc x_md, w_md, b_md, y_md;          // user layouts: nchw, oihw, x
  dnnl::memory::desc x_any, w_any, b_any, y_any;      // format_tag::any
  dnnl::primitive_attr attr;
  dnnl::memory x, w, b, y, gy, gx, gw, gb;            // user memories
  std::vector<float> xv, wv, bv, yv, gyv, gxv, gwv, gbv;

  DnnlLayer(Dnnl& d, const ConvShape& shape) : s(shape) {
    const int64_t oh = s.out();
    strides = {s.stride, s.stride};
    pad = {s.pad, s.pad};
    x_md = {{s.n, s.c_in, s.hw, s.hw}, dt::f32, tag::nchw};
    w_md = {{s.c_out, s.c_in, s.k, s.k}, dt::f32, tag::oihw};
    b_md = {{s.c_out}, dt::f32, tag::x};
    y_md = {{s.n, s.c_out, oh, oh}, dt::f32, tag::nchw};
    x_any = {{s.n, s.c_in, s.hw, s.hw}, dt::f32, tag::any};
    w_any = {{s.c_out, s.c_in, s.k, s.k}, dt::f32, tag::any};
    b_any = {{s.c_out}, dt::f32, tag::any};
    y_any = {{s.n, s.c_out, oh, oh}, dt::f32, tag::any};
    xv = random_values(x_md.get_size() / 4, 1);
    wv = random_values(w_md.get_size() / 4, 2);
    bv = random_values(b_md.get_size() / 4, 3);
    gyv = random_values(y_md.get_size() / 4, 4);
    yv.resize(y_md.get_size() / 4);
    gxv.resize(x_md.get_size() / 4);
    gwv.resize(w_md.get_size() / 4);
    gbv.resize(b_md.get_size() / 4);
    x = {x_md, d.eng, xv.data()};
    w = {w_md, d.eng, wv.data()};
    b = {b_md, d.eng, bv.data()};
    y = {y_md, d.eng, yv.data()};
    gy = {y_md, d.eng, gyv.data()};
    gx = {x_md, d.eng, gxv.data()};
    gw = {w_md, d.eng, gwv.data()};
    gb = {b_md, d.eng, gbv.data()};
  }

  dnnl::convolution_forward::primitive_desc forward_pd(Dnnl& d) const {
    dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                         x_any, w_any, b_any, y_any, strides, pad, pad);
    return {desc, attr, d.eng};
  }
  dnnl::convolution_backward_data::primitive_desc backward_data_pd(
      Dnnl& d, const dnnl::convolution_forward::primitive_desc& hint) const {
    dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, x_any, w_any, y_any, strides,
                                               pad, pad);
    return {desc, attr, d.eng, hint};
  }
  dnnl::convolution_backward_weights::primitive_desc backward_weights_pd(
      Dnnl& d, const dnnl::convolution_forward::primitive_desc& hint) const {
    dnnl::convolution_backward_weights::desc desc(dnnl::algorithm::convolution_direct, x_any, w_any, b_any, y_any,
                                                  strides, pad, pad);
    return {desc, attr, d.eng, hint};
  }

  // PyTorch's path, per call: descriptors, cached primitive, reorders in and out.
  void forward_nchw(Dnnl& d) {
    auto pd = forward_pd(d);
    dnnl::memory xs = reorder_if_differ(d, x, pd.src_desc());
    dnnl::memory ws = reorder_if_differ(d, w, pd.weights_desc());
    dnnl::memory ys = pd.dst_desc() == y_md ? y : dnnl::memory(pd.dst_desc(), d.eng);
    dnnl::convolution_forward(pd).execute(d.strm, {{DNNL_ARG_SRC, xs}, {DNNL_ARG_WEIGHTS, ws},
                                                   {DNNL_ARG_BIAS, b}, {DNNL_ARG_DST, ys}});
    reorder_into(d, ys, y);
    d.strm.wait();
  }
  void backward_data_nchw(Dnnl& d) {
    auto pd = backward_data_pd(d, forward_pd(d));
    dnnl::memory gys = reorder_if_differ(d, gy, pd.diff_dst_desc());
    dnnl::memory ws = reorder_if_differ(d, w, pd.weights_desc());
    dnnl::memory gxs = pd.diff_src_desc() == x_md ? gx : dnnl::memory(pd.diff_src_desc(), d.eng);
    dnnl::convolution_backward_data(pd).execute(
        d.strm, {{DNNL_ARG_DIFF_DST, gys}, {DNNL_ARG_WEIGHTS, ws}, {DNNL_ARG_DIFF_SRC, gxs}});
    reorder_into(d, gxs, gx);
    d.strm.wait();
  }
  void backward_weights_nchw(Dnnl& d) {
    auto pd = backward_weights_pd(d, forward_pd(d));
    dnnl::memory xs = reorder_if_differ(d, x, pd.src_desc());
    dnnl::memory gys = reorder_if_differ(d, gy, pd.diff_dst_desc());
    dnnl::memory gws = pd.diff_weights_desc() == w_md ? gw : dnnl::memory(pd.diff_weights_desc(), d.eng);
    dnnl::convolution_backward_weights(pd).execute(
        d.strm, {{DNNL_ARG_SRC, xs}, {DNNL_ARG_DIFF_DST, gys}, {DNNL_ARG_DIFF_WEIGHTS, gws}, {DNNL_ARG_DIFF_BIAS, gb}});
    reorder_into(d, gws, gw);
    d.strm.wait();
  }
};

// The primitives made once, with every tensor already in the layout each wants.
struct DnnlResident {
  dnnl::convolution_forward::primitive_desc fpd;
  dnnl::convolution_backward_data::primitive_desc dpd;
  dnnl::convolution_backward_weights::primitive_desc wpd;
  dnnl::convolution_forward fwd;
  dnnl::convolution_backward_data bwd_data;
  dnnl::convolution_backward_weights bwd_weights;
  // forward: x, w -> y; backward-data: gy, w -> gx; backward-weights: x, gy -> gw
  dnnl::memory f_x, f_w, f_y, d_gy, d_w, d_gx, w_x, w_gy, w_gw;

  DnnlResident(Dnnl& d, DnnlLayer& l)
      : fpd(l.forward_pd(d)), dpd(l.backward_data_pd(d, fpd)), wpd(l.backward_weights_pd(d, fpd)), fwd(fpd),
        bwd_data(dpd), bwd_weights(wpd) {
    f_x = reorder_if_differ(d, l.x, fpd.src_desc());
    f_w = reorder_if_differ(d, l.w, fpd.weights_desc());
    f_y = dnnl::memory(fpd.dst_desc(), d.eng);
    d_gy = reorder_if_differ(d, l.gy, dpd.diff_dst_desc());
    d_w = reorder_if_differ(d, l.w, dpd.weights_desc());
    d_gx = dnnl::memory(dpd.diff_src_desc(), d.eng);
    w_x = reorder_if_differ(d, l.x, wpd.src_desc());
    w_gy = reorder_if_differ(d, l.gy, wpd.diff_dst_desc());
    w_gw = wpd.diff_weights_desc() == l.w_md ? l.gw : dnnl::memory(wpd.diff_weights_desc(), d.eng);
    d.strm.wait();
  }

  // WEIGHT_REORDERS: also reorder w from OIHW in (gw out to OIHW), the dnnl-blocked candidate.
  void forward(Dnnl& d, DnnlLayer& l, bool weight_reorders) {
    if (weight_reorders) reorder_into(d, l.w, f_w);
    fwd.execute(d.strm, {{DNNL_ARG_SRC, f_x}, {DNNL_ARG_WEIGHTS, f_w}, {DNNL_ARG_BIAS, l.b}, {DNNL_ARG_DST, f_y}});
    d.strm.wait();
  }
  void backward_data(Dnnl& d, DnnlLayer& l, bool weight_reorders) {
    if (weight_reorders) reorder_into(d, l.w, d_w);
    bwd_data.execute(d.strm, {{DNNL_ARG_DIFF_DST, d_gy}, {DNNL_ARG_WEIGHTS, d_w}, {DNNL_ARG_DIFF_SRC, d_gx}});
    d.strm.wait();
  }
  void backward_weights(Dnnl& d, DnnlLayer& l, bool weight_reorders) {
    bwd_weights.execute(d.strm, {{DNNL_ARG_SRC, w_x}, {DNNL_ARG_DIFF_DST, w_gy}, {DNNL_ARG_DIFF_WEIGHTS, w_gw},
                                 {DNNL_ARG_DIFF_BIAS, l.gb}});
    if (weight_reorders) reorder_into(d, w_gw, l.gw);
    d.strm.wait();
  }
};

// The forward output of image 0, output channel 0 against a direct loop over the user tensors:
// the oneDNN setup computes the convolution it claims to. Returns the largest relative error.
double check_forward(Dnnl& d, DnnlLayer& l) {
  l.forward_nchw(d);
  const ConvShape& s = l.s;
  const int64_t oh = s.out();
  double worst = 0;
  for (int64_t i = 0; i < oh; ++i)
    for (int64_t j = 0; j < oh; ++j) {
      double acc = l.bv[0], mag = std::fabs(l.bv[0]);
      for (int64_t c = 0; c < s.c_in; ++c)
        for (int64_t u = 0; u < s.k; ++u)
          for (int64_t v = 0; v < s.k; ++v) {
            const int64_t r = i * s.stride - s.pad + u, q = j * s.stride - s.pad + v;
            if (r < 0 || r >= s.hw || q < 0 || q >= s.hw) continue;
            const double p = double(l.xv[(c * s.hw + r) * s.hw + q]) * l.wv[(c * s.k + u) * s.k + v];
            acc += p;
            mag += std::fabs(p);
          }
      worst = std::max(worst, std::fabs(acc - l.yv[i * oh + j]) / (mag + 1e-30));
    }
  return worst;
}

// ---- ours ----

struct ChainerLayer {
  ConvShape s;
  ops::Conv2dParams p;
  Tensor x, W, gy;
  explicit ChainerLayer(const ConvShape& shape) : s(shape) {
    p.sy = p.sx = s.stride;
    p.ph = p.pw = s.pad;
    x = random::normal({s.n, s.c_in, s.hw, s.hw});
    W = random::normal({s.c_out, s.c_in, s.k, s.k});
    gy = ops::convolution_2d(x, W, Tensor(), p);
  }
  void forward() { ops::convolution_2d(x, W, Tensor(), p); }
  void backward_data() { ops::convolution_2d_grad_data(gy, W, s.hw, s.hw, p); }
  void backward_weights() { ops::convolution_2d_grad_filter(x, gy, s.k, s.k, p); }
};


struct GemmLayer {
  ConvShape s;
  Tensor w, col, gy, y, gw;  // per image: col (K, P); gy, y (N, Cout, P)
  Tensor col_batch, gy_batch;  // over the batch: (K, N*P), (Cout, N*P)

  GemmLayer(const ConvShape& shape, bool batch) : s(shape) {
    const int64_t k = s.patch(), p = s.pixels();
    w = random::normal({s.c_out, k});
    gw = Tensor::zeros({s.c_out, k});
    if (batch) {
      col_batch = random::normal({k, s.n * p});
      gy_batch = random::normal({s.c_out, s.n * p});
    } else {
      col = random::normal({k, p});
      gy = random::normal({s.n, s.c_out, p});
      y = Tensor::empty({s.n, s.c_out, p});
    }
  }
  void forward_img() {
    for (int64_t i = 0; i < s.n; ++i) {
      Tensor yi = y[i];
      ops::gemm(w, false, col, false, 1.0, 0.0, yi);
    }
  }
  void backward_data_img() {
    for (int64_t i = 0; i < s.n; ++i) {
      Tensor gcol = ops::matmul(w, gy[i], true, false);
      (void)gcol;
    }
  }
  void backward_weights_img() {
    for (int64_t i = 0; i < s.n; ++i) ops::gemm(gy[i], false, col, true, 1.0, i == 0 ? 0.0 : 1.0, gw);
  }
  void forward_batch() { Tensor out = ops::matmul(w, col_batch); }
  void backward_data_batch() { Tensor gcol = ops::matmul(w, gy_batch, true, false); }
  void backward_weights_batch() { Tensor g = ops::matmul(gy_batch, col_batch, false, true); }
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t end = s.find(',', start);
    out.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

bool wanted(const std::vector<std::string>& list, const std::string& name) {
  return list.empty() || std::find(list.begin(), list.end(), name) != list.end();
}

struct Row {
  std::string shape, pass, candidate, impl;
  Timing t;
  double flop;
};

}  // namespace

namespace {
int run(int argc, char** argv) {
  int threads = 2, reps = 3;
  double seconds = 0.2;
  bool json = false;
  std::vector<std::string> only, shapes;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) only = split(argv[++i]);
    else if (!std::strcmp(argv[i], "--shapes") && i + 1 < argc) shapes = split(argv[++i]);
    else if (!std::strcmp(argv[i], "--json")) json = true;
    else {
      std::fprintf(stderr,
                   "usage: conv_candidates [--threads N] [--seconds S] [--reps R] [--only CANDIDATE,...] "
                   "[--shapes NAME,...] [--json]\n  candidates:");
      for (const char* c : kCandidates) std::fprintf(stderr, " %s", c);
      std::fprintf(stderr, "\n  shapes:");
      for (const ConvShape& s : kShapes) std::fprintf(stderr, " %s", s.name);
      std::fprintf(stderr, "\n");
      return 2;
    }
  }
  omp_set_num_threads(threads);
  set_num_threads(threads);
  const dnnl_version_t* v = dnnl_version();
  std::printf("oneDNN %d.%d.%d, cpu runtime %s, %d OpenMP threads, isa %s; our gemm %s, %d threads\n", v->major,
              v->minor, v->patch, v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "not OpenMP", omp_get_max_threads(),
              dnnl_cpu_isa2str(dnnl_get_effective_cpu_isa()), cpu::gemm_backend(), num_threads());
  std::printf("timing: %d windows of >= %.2f s after 2 warm-up calls; ms = per call, min / median of the windows; "
              "GFLOP/s from the min\n",
              reps, seconds);

  std::vector<Row> rows;
  Dnnl d;
  for (const ConvShape& s : kShapes) {
    if (!wanted(shapes, s.name)) continue;
    const double flop = s.flop();
    auto add = [&](const char* pass, const char* candidate, const std::string& impl, const std::function<void()>& fn) {
      if (!wanted(only, candidate)) return;
      rows.push_back({s.name, pass, candidate, impl, time_calls(fn, seconds, reps), flop});
    };
    // oneDNN first, then our GEMM: the two thread teams never run at once.
    {
      DnnlLayer l(d, s);
      const double err = check_forward(d, l);
      if (err > 1e-4) {
        std::fprintf(stderr, "%s: oneDNN forward differs from the direct loop (relative error %g)\n", s.name, err);
        return 1;
      }
      DnnlResident r(d, l);
      const std::string fi = r.fpd.impl_info_str(), di = r.dpd.impl_info_str(), wi = r.wpd.impl_info_str();
      add("forward", "dnnl-nchw", fi, [&] { l.forward_nchw(d); });
      add("forward", "dnnl-blocked", fi, [&] { r.forward(d, l, true); });
      add("forward", "dnnl-prim", fi, [&] { r.forward(d, l, false); });
      add("backward-data", "dnnl-nchw", di, [&] { l.backward_data_nchw(d); });
      add("backward-data", "dnnl-blocked", di, [&] { r.backward_data(d, l, true); });
      add("backward-data", "dnnl-prim", di, [&] { r.backward_data(d, l, false); });
      add("backward-weights", "dnnl-nchw", wi, [&] { l.backward_weights_nchw(d); });
      add("backward-weights", "dnnl-blocked", wi, [&] { r.backward_weights(d, l, true); });
      add("backward-weights", "dnnl-prim", wi, [&] { r.backward_weights(d, l, false); });
    }
    if (wanted(only, "chainer")) {
      ChainerLayer c(s);
      const std::string ci = std::string("ops::convolution_2d, ") + cpu::gemm_backend();
      add("forward", "chainer", ci, [&] { c.forward(); });
      add("backward-data", "chainer", ci, [&] { c.backward_data(); });
      add("backward-weights", "chainer", ci, [&] { c.backward_weights(); });
    }
    const std::string gi = std::string(cpu::gemm_backend()) + ", no im2col";
    if (wanted(only, "gemm-img")) {
      GemmLayer g(s, false);
      add("forward", "gemm-img", gi, [&] { g.forward_img(); });
      add("backward-data", "gemm-img", gi, [&] { g.backward_data_img(); });
      add("backward-weights", "gemm-img", gi, [&] { g.backward_weights_img(); });
    }
    if (wanted(only, "gemm-batch")) {
      GemmLayer g(s, true);
      add("forward", "gemm-batch", gi, [&] { g.forward_batch(); });
      add("backward-data", "gemm-batch", gi, [&] { g.backward_data_batch(); });
      add("backward-weights", "gemm-batch", gi, [&] { g.backward_weights_batch(); });
    }
  }

  std::printf("\n%-13s %-17s %-13s %9s %9s %9s  %s\n", "shape", "pass", "candidate", "ms min", "ms med", "GFLOP/s",
              "implementation");
  for (const char* pass : kPasses)
    for (const Row& r : rows) {
      if (r.pass != pass) continue;
      std::printf("%-13s %-17s %-13s %9.3f %9.3f %9.1f  %s\n", r.shape.c_str(), r.pass.c_str(), r.candidate.c_str(),
                  r.t.min_s * 1e3, r.t.median_s * 1e3, r.flop / r.t.min_s / 1e9, r.impl.c_str());
    }
  if (json)
    for (const Row& r : rows)
      std::printf("{\"shape\": \"%s\", \"pass\": \"%s\", \"candidate\": \"%s\", \"ms_min\": %.4f, \"ms_median\": %.4f, "
                  "\"gflops\": %.2f, \"impl\": \"%s\", \"threads\": %d}\n",
                  r.shape.c_str(), r.pass.c_str(), r.candidate.c_str(), r.t.min_s * 1e3, r.t.median_s * 1e3,
                  r.flop / r.t.min_s / 1e9, r.impl.c_str(), threads);
  return 0;
}
}  // namespace

int main(int argc, char** argv) { return bench::report_errors([&] { return run(argc, argv); }); }
