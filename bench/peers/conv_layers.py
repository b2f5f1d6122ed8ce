#!/usr/bin/python3
"""PyTorch's (Debian python3-torch 1.13, CPU) time for one 2-D convolution layer's three passes at
the layer shapes of build/bench/conv_candidates, in the same table format.

What an epoch pays, pass by pass, float32, NCHW, bias on (nn.Conv2d's default):
  forward           F.conv2d(x, W, b) with W and b requiring grad (autograd records the node)
  backward-data     aten.convolution_backward(gy, x, W, ..., output_mask=[True, False, False]):
                    the op autograd's ConvolutionBackward0 node calls, input gradient only
  backward-weights  the same op with output_mask=[False, True, True]: gW and gb
  autograd-step     forward + y.backward(gy) with x, W, b requiring grad (all three gradients,
                    as a hidden layer's step pays); a cross-check of the three passes' sum
On CPU float32 with batch > 1 PyTorch 1.13 sends these to oneDNN (mkldnn_convolution and
mkldnn_convolution_backward, which reorder NCHW/OIHW to the blocked layouts and back per call);
`--show-backend` prints the aten ops a pass runs, ONEDNN_VERBOSE=1 the oneDNN primitives.

usage: bench/peers/run-cnn-peer conv_layers [--threads 2] [--seconds 0.2] [--reps 3]
       [--shapes fashion-1,...] [--no-flush-denormal] [--show-backend] [--json]
"""
import argparse
import json
import os
import statistics
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--threads', type=int, default=2)
    p.add_argument('--seconds', type=float, default=0.2, help='length of a timing window')
    p.add_argument('--reps', type=int, default=3, help='timing windows (min and median reported)')
    p.add_argument('--shapes', default='', help='comma-separated shape names (default: all)')
    p.add_argument('--no-flush-denormal', action='store_true',
                   help='leave FTZ/DAZ off (the peers set it: torch.set_flush_denormal(True))')
    p.add_argument('--show-backend', action='store_true',
                   help='print the aten ops each pass of the first shape runs, then exit')
    p.add_argument('--json', action='store_true', help='also print one JSON line per row')
    return p.parse_args()


args = parse_args()
# thread settings must be in the environment before torch loads OpenMP
os.environ['OMP_NUM_THREADS'] = str(args.threads)
os.environ['OPENBLAS_NUM_THREADS'] = str(args.threads)
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

# name, N, C_in, C_out, H=W, k, stride, pad (the same list as bench/conv_candidates.cpp)
SHAPES = [
    ('fashion-1', 100, 1, 32, 28, 3, 1, 1),
    ('fashion-2', 100, 32, 32, 28, 3, 1, 1),
    ('fashion-3', 100, 32, 64, 14, 3, 1, 1),
    ('fashion-4', 100, 64, 64, 14, 3, 1, 1),
    ('resnet-3x3', 8, 64, 64, 56, 3, 1, 1),
    ('resnet-1x1a', 8, 256, 64, 56, 1, 1, 0),
    ('resnet-1x1b', 8, 64, 256, 56, 1, 1, 0),
    ('resnet-3x3s2', 8, 128, 128, 56, 3, 2, 1),
]
PASSES = ('forward', 'backward-data', 'backward-weights', 'autograd-step')


def time_calls(fn, seconds, reps):
    """Two warm-up calls, then REPS windows of at least SECONDS: (min, median) per call."""
    fn()
    fn()
    per_call = []
    for _ in range(reps):
        calls = 0
        t0 = time.perf_counter()
        while True:
            fn()
            calls += 1
            dt = time.perf_counter() - t0
            if dt >= seconds:
                break
        per_call.append(dt / calls)
    return min(per_call), statistics.median(per_call)


def layer(shape):
    name, n, cin, cout, hw, k, stride, pad = shape
    oh = (hw + 2 * pad - k) // stride + 1
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, cin, hw, hw, generator=g)
    w = torch.randn(cout, cin, k, k, generator=g) * (1.0 / (cin * k * k)) ** 0.5
    b = torch.zeros(cout)
    gy = torch.randn(n, cout, oh, oh, generator=g)
    flop = 2.0 * n * cout * oh * oh * cin * k * k
    return x, w, b, gy, (stride, stride), (pad, pad), flop


def passes(shape):
    """The four timed callables of one layer shape."""
    x, w, b, gy, stride, pad, _ = layer(shape)
    wg = w.clone().requires_grad_(True)
    bg = b.clone().requires_grad_(True)
    xg = x.clone().requires_grad_(True)
    conv_bwd = torch.ops.aten.convolution_backward

    def forward():
        return F.conv2d(x, wg, bg, stride, pad)

    def backward_data():
        return conv_bwd(gy, x, w, [w.shape[0]], stride, pad, (1, 1), False, (0, 0), 1,
                        [True, False, False])

    def backward_weights():
        return conv_bwd(gy, x, w, [w.shape[0]], stride, pad, (1, 1), False, (0, 0), 1,
                        [False, True, True])

    def autograd_step():
        xg.grad = wg.grad = bg.grad = None
        F.conv2d(xg, wg, bg, stride, pad).backward(gy)

    return {'forward': forward, 'backward-data': backward_data,
            'backward-weights': backward_weights, 'autograd-step': autograd_step}


def show_backend(shape):
    from torch.profiler import profile, ProfilerActivity
    for name, fn in passes(shape).items():
        fn()
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            fn()
        ops = sorted({e.key for e in prof.key_averages()
                      if 'conv' in e.key or 'mkldnn' in e.key})
        print('%-17s %s' % (name, ', '.join(ops)))


def main():
    torch.set_num_threads(args.threads)
    if not args.no_flush_denormal:
        torch.set_flush_denormal(True)
    wanted = [s for s in args.shapes.split(',') if s]
    shapes = [s for s in SHAPES if not wanted or s[0] in wanted]
    print('torch %s, %d threads, mkldnn available %s, enabled %s, flush_denormal %s' % (
        torch.__version__, torch.get_num_threads(), torch.backends.mkldnn.is_available(),
        torch.backends.mkldnn.enabled, not args.no_flush_denormal))
    for line in torch.__config__.show().splitlines():
        if 'MKL-DNN' in line or 'CPU capability' in line or 'OpenMP' in line:
            print(line.strip())
    if args.show_backend:
        show_backend(shapes[0])
        return
    print('timing: %d windows of >= %.2f s after 2 warm-up calls; ms = per call, min / median of '
          'the windows; GFLOP/s from the min (autograd-step: 3 passes of FLOP)'
          % (args.reps, args.seconds))
    rows = []
    for shape in shapes:
        flop = layer(shape)[-1]
        for pass_name, fn in passes(shape).items():
            t_min, t_med = time_calls(fn, args.seconds, args.reps)
            f = 3 * flop if pass_name == 'autograd-step' else flop
            rows.append(dict(shape=shape[0], pass_=pass_name, candidate='torch', ms_min=t_min * 1e3,
                             ms_median=t_med * 1e3, gflops=f / t_min / 1e9))
    print('\n%-13s %-17s %-13s %9s %9s %9s' % ('shape', 'pass', 'candidate', 'ms min', 'ms med',
                                               'GFLOP/s'))
    for pass_name in PASSES:
        for r in rows:
            if r['pass_'] == pass_name:
                print('%-13s %-17s %-13s %9.3f %9.3f %9.1f' % (
                    r['shape'], r['pass_'], r['candidate'], r['ms_min'], r['ms_median'],
                    r['gflops']))
    if args.json:
        for r in rows:
            d = dict(r)
            d['pass'] = d.pop('pass_')
            d['threads'] = args.threads
            d['torch'] = torch.__version__
            print(json.dumps(d))
    sys.stdout.flush()


if __name__ == '__main__':
    main()
