#!/usr/bin/python3
"""PyTorch peer of bench/bench_lstm (Debian python3-torch on the CPU; --device cuda on a GPU, cuDNN's LSTM): the same training step of an LSTM
stack on a batch of variable-length sequences, nn.LSTM (bidirectional with --bi) over a
PackedSequence (the sequences sorted inside pack_sequence, as NStepLSTM sorts them), the loss
sum(y^2) / tokens over every output, backward and an SGD step; the same sizes and the same
distribution of lengths (uniform in [min-len, max-len]) and inputs (standard normal).

usage: bench/peers/run-cnn-peer lstm_peer [--layers 2] [--units 256] [--in 256] [--batch 64]
       [--min-len 10] [--max-len 30] [--steps 20] [--warmup 3] [--threads 2] [--bi] [--seed 0]
       [--device cuda]
Prints one JSON line: the configuration, OPENBLAS_CORETYPE and the median seconds per step.
"""
import argparse
import json
import os
import time

import torch


def main():
    p = argparse.ArgumentParser()
    for name, default in [("layers", 2), ("units", 256), ("in", 256), ("batch", 64), ("min-len", 10),
                          ("max-len", 30), ("steps", 20), ("warmup", 3), ("threads", 2), ("seed", 0)]:
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--bi", action="store_true")
    p.add_argument("--device", default="cpu")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.set_flush_denormal(True)  # ours runs with FTZ/DAZ
    if a.device != "cpu":  # float32 as ours computes it on CUDA: no TF32 (cuDNN's default allows it)
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    g = torch.Generator().manual_seed(a.seed)
    lengths = torch.randint(a.min_len, a.max_len + 1, (a.batch,), generator=g).tolist()
    xs = [torch.randn(n, getattr(a, "in"), generator=g).to(a.device) for n in lengths]
    tokens = sum(lengths)
    lstm = torch.nn.LSTM(getattr(a, "in"), a.units, a.layers, bidirectional=a.bi).to(a.device)
    opt = torch.optim.SGD(lstm.parameters(), lr=0.01)
    times = []
    for s in range(a.warmup + a.steps):
        start = time.perf_counter()
        opt.zero_grad()
        packed = torch.nn.utils.rnn.pack_sequence(xs, enforce_sorted=False)
        out, _ = lstm(packed)
        loss = (out.data * out.data).sum() / tokens
        loss.backward()
        opt.step()
        if a.device != "cpu":
            torch.cuda.synchronize()  # the step's time, not its launches'
        t = time.perf_counter() - start
        if s >= a.warmup:
            times.append(t)
    times.sort()
    print(json.dumps({"engine": "pytorch " + torch.__version__, "device": a.device, "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE"),
                      "threads": a.threads, "layers": a.layers, "units": a.units, "in": getattr(a, "in"),
                      "batch": a.batch, "tokens": tokens, "bidirectional": a.bi,
                      "step_s_median": round(times[len(times) // 2], 5), "step_s_min": round(times[0], 5)}))


if __name__ == "__main__":
    main()
