#!/usr/bin/env bash
# Half-precision matrix products beside PyTorch's, in one run of the machine: bench_half_gemm in
# the kernel families this CPU has from avx512 up (avx512_bf16: bfloat16 by vdpbf16ps; avx512 and
# avx2: half operands widened while packing, what a CPU without AVX512_BF16 gets), then
# bench/peers/half_gemm_peer.py (torch.mm in float32, bfloat16 and float16, torch.autocast, and
# nn.Linear forward + backward under autocast), 1 process x THREADS threads each. GFLOP/s.
#   bash bench/compare_half_gemm.sh [--threads 2] [--seconds 0.5]
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -x build/bench/bench_half_gemm ]] || { echo "compare_half_gemm.sh: build/bench/bench_half_gemm is not built (ninja -C build bench/bench_half_gemm)" >&2; exit 1; }
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p') (family $(lscpu | sed -n 's/^CPU family: *//p'), model $(lscpu | sed -n 's/^Model: *//p')), $(nproc) cores; $(date -u '+%F %H:%M') UTC; load $(cut -d' ' -f1-3 /proc/loadavg)"
for isa in avx512_bf16 avx512 avx2; do
  out=$(CHAINER_CPU_ISA=$isa build/bench/bench_half_gemm "$@" 2>&1) || { echo "# $isa: $(echo "$out" | tail -1)"; continue; }
  echo "# ours, CHAINER_CPU_ISA=$isa"
  echo "$out"
done
echo "# pytorch"
bench/peers/run-cnn-peer half_gemm_peer "$@"
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
