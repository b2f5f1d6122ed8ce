#!/usr/bin/env bash
# Half-precision matrix products beside PyTorch's, in one run of the machine, round by round:
# bench_half_gemm in the kernel families this CPU has from avx512 up (avx512_bf16: bfloat16 by
# vdpbf16ps; avx512 and avx2: half operands widened while packing, what a CPU without
# AVX512_BF16 gets), then bench/peers/half_gemm_peer.py (torch.mm in float32, bfloat16 and
# float16, torch.autocast, and nn.Linear forward + backward under autocast), 1 process x THREADS
# threads each. Prints every round, then the best of the rounds per case (GFLOP/s): PyTorch's
# OpenMP team loses whole seconds to other work on a shared machine (docs/performance.md), and
# the best round is the least disturbed, as the benchmarks' best window is.
#   bash bench/compare_half_gemm.sh [--rounds 3] [--threads 2] [--seconds 0.5]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=3
args=()
while (($#)); do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
[[ -x build/bench/bench_half_gemm ]] || { echo "compare_half_gemm.sh: build/bench/bench_half_gemm is not built (ninja -C build bench/bench_half_gemm)" >&2; exit 1; }
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p') (family $(lscpu | sed -n 's/^CPU family: *//p'), model $(lscpu | sed -n 's/^Model: *//p')), $(nproc) cores; $(date -u '+%F %H:%M') UTC; load $(cut -d' ' -f1-3 /proc/loadavg)"
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for ((r = 1; r <= rounds; ++r)); do
  echo "# round $r"
  for isa in avx512_bf16 avx512 avx2; do
    out=$(CHAINER_CPU_ISA=$isa build/bench/bench_half_gemm "${args[@]}" 2>&1) || { echo "# $isa: $(echo "$out" | tail -1)"; continue; }
    echo "$out" | grep -v '^{'
    echo "$out" | grep '^{' | sed "s/^{/{\"isa\": \"$isa\", /" >>"$results"
  done
  out=$(bench/peers/run-cnn-peer half_gemm_peer "${args[@]}")
  echo "$out" | grep -v '^{'
  echo "$out" | grep '^{' >>"$results"
  echo "# load: $(cut -d' ' -f1-3 /proc/loadavg)"
done
python3 - "$results" "$rounds" <<'PY'
import json, sys
ours, torch, linear = {}, {}, {}
for line in open(sys.argv[1]):
    j = json.loads(line)
    for case, rates in j["gflops"].items():
        for dtype, v in rates.items():
            if v is None:
                continue
            key = (j["isa"], dtype) if "isa" in j else dtype
            d = ours if "isa" in j else torch
            d.setdefault(case, {})[key] = max(d.get(case, {}).get(key, 0), v)
    for case, v in j.get("linear_autocast", {}).items():
        linear[case] = max(linear.get(case, 0), v)
cols = [("ours f32", ours, ("avx512_bf16", "float32")), ("ours bf16", ours, ("avx512_bf16", "bfloat16")),
        ("ours f16", ours, ("avx512_bf16", "float16")), ("bf16 avx512", ours, ("avx512", "bfloat16")),
        ("f32 avx2", ours, ("avx2", "float32")), ("bf16 avx2", ours, ("avx2", "bfloat16")),
        ("f16 avx2", ours, ("avx2", "float16")), ("torch f32", torch, "float32"), ("torch bf16", torch, "bfloat16"),
        ("autocast", torch, "autocast_bf16")]
print(f"# best of {sys.argv[2]} rounds, GFLOP/s (ours f32/bf16/f16: the avx512_bf16 family; bf16 avx512: widened "
      "while packing, as on a CPU without AVX512_BF16; avx2: the AVX2 family)")
print(f"  {'':28}" + "".join(f" {name:>11}" for name, _, _ in cols))
for case in ours:
    print(f"  {case:28}" + "".join(f" {d.get(case, {}).get(key, float('nan')):11.1f}" for _, d, key in cols))
for case, v in linear.items():
    print(f"  {case:28} nn.Linear forward + backward under autocast: {v:.1f} GFLOP/s")
PY
