#!/usr/bin/python3
"""PyTorch peer of bench/bench_half_gemm (Debian python3-torch on the CPU): the same products
(the tutorial MLP's at batch 100, forward and backward, and two square ones) as GFLOP/s, in
float32 (torch.mm), bfloat16 (torch.mm of bfloat16 tensors), under torch.autocast("cpu",
dtype=torch.bfloat16) (torch.mm of float32 tensors, which autocast casts to bfloat16 at each
call) and float16 (torch.mm of float16 tensors, where this PyTorch has it); and each layer's
nn.Linear forward and backward under autocast, counted as its three products.

usage: bench/peers/run-cnn-peer half_gemm_peer [--threads 2] [--seconds 0.5]
Prints a table and one JSON line (the same keys as bench_half_gemm's).
"""
import argparse
import json
import time

import torch

CASES = [  # name, m, n, k, trans_a, trans_b (bench_half_gemm.cpp's)
    ("fwd1 x W1^T 100x784x1000", 100, 1000, 784, False, True),
    ("fwd2 h W2^T 100x1000x1000", 100, 1000, 1000, False, True),
    ("fwd3 h W3^T 100x1000x10", 100, 10, 1000, False, True),
    ("gW1 gy^T x 1000x100x784", 1000, 784, 100, True, False),
    ("gW2 gy^T h 1000x100x1000", 1000, 1000, 100, True, False),
    ("gW3 gy^T h 10x100x1000", 10, 1000, 100, True, False),
    ("gx2 gy W2 100x1000x1000", 100, 1000, 1000, False, False),
    ("gx3 gy W3 100x10x1000", 100, 1000, 10, False, False),
    ("square 512", 512, 512, 512, False, False),
    ("square 1024", 1024, 1024, 1024, False, False),
]


def seconds_per_call(fn, min_seconds):
    """The best of 5 windows of at least MIN_SECONDS / 5 each, after a warm-up call (as bench/call_timing.h)."""
    fn()
    best = 1e30
    for _ in range(5):
        reps, start = 0, time.perf_counter()
        while True:
            fn()
            reps += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_seconds / 5:
                break
        best = min(best, elapsed / reps)
    return best


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seconds", type=float, default=0.5)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    print(f"pytorch {torch.__version__}, {a.threads} threads, bf16 matmul through oneDNN: "
          f"{torch.backends.mkldnn.is_available()}")
    print(f"  {'':28} {'float32':>10} {'bfloat16':>10} {'autocast':>10} {'float16':>10}   GFLOP/s")
    result = {}
    for name, m, n, k, ta, tb in CASES:
        flop = 2.0 * m * n * k
        a32 = torch.randn((k, m) if ta else (m, k))
        b32 = torch.randn((n, k) if tb else (k, n))
        row = {}
        for key, dtype, autocast in [("float32", torch.float32, False), ("bfloat16", torch.bfloat16, False),
                                     ("autocast_bf16", torch.float32, True), ("float16", torch.float16, False)]:
            x, y = a32.to(dtype), b32.to(dtype)
            x, y = (x.t() if ta else x), (y.t() if tb else y)

            def call():
                if autocast:
                    with torch.autocast("cpu", dtype=torch.bfloat16):
                        return torch.mm(x, y)
                return torch.mm(x, y)
            try:
                row[key] = round(flop / seconds_per_call(call, a.seconds) / 1e9, 1)
            except RuntimeError:  # no float16 product on the CPU in this PyTorch
                row[key] = None
        result[name] = row
        print(f"  {name:28}" + "".join(f" {row[key]:>10}" if row[key] is not None else f" {'n/a':>10}"
                                       for key in ("float32", "bfloat16", "autocast_bf16", "float16")))
    # nn.Linear forward + backward under autocast: y = x W^T + b, then gx and gW (3 products).
    linear = {}
    for name, batch, inp, out in [("linear1 784->1000", 100, 784, 1000), ("linear2 1000->1000", 100, 1000, 1000),
                                  ("linear3 1000->10", 100, 1000, 10)]:
        layer = torch.nn.Linear(inp, out)
        x = torch.randn(batch, inp, requires_grad=True)

        def step():
            with torch.autocast("cpu", dtype=torch.bfloat16):
                y = layer(x)
            y.float().sum().backward()
        linear[name] = round(3 * 2.0 * batch * inp * out / seconds_per_call(step, a.seconds) / 1e9, 1)
        print(f"  {name:28} {linear[name]:>10} GFLOP/s: nn.Linear forward + backward under autocast (bfloat16)")
    print(json.dumps({"pytorch": torch.__version__, "threads": a.threads, "gflops": result, "linear_autocast": linear}))


if __name__ == "__main__":
    main()
