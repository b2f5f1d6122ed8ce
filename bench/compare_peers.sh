#!/usr/bin/env bash
# Side-by-side training-epoch times of chainermn-cpp and the PyTorch peers, in one run of the
# machine, round by round (the machine is shared and noisy: each round also measures the GEMM
# rates, and the two runs of each epoch ratio follow one another, so they are taken within a
# minute or two):
#   1 process x 2 threads: ours, PyTorch (Python, flush-denormal), libtorch;
#   2 processes x 1 thread: ours under mpiexec, PyTorch DDP (gloo);
#   the 1000^3 float32 GEMM rate on 2 threads, PyTorch's (the peers' gemm_floor) and ours.
# Then the ratios against their targets, per round and their median.
# Installs the peers' packages on first use (see ../shared/peers/README.md).
#   bash bench/compare_peers.sh [--rounds 3] [--epochs 2]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=3 epochs=2
while (($#)); do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    *) echo "usage: compare_peers.sh [--rounds N] [--epochs N]" >&2; exit 2 ;;
  esac
done
peers=../shared/peers
data=${MNIST_DIR:-../shared/datasets/mnist}
[[ -x build/bench/bench_epoch ]] || bash scripts/setup.sh
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
mpiexec=$(command -v mpiexec.mpich || command -v mpiexec)
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $(date -u '+%F %H:%M') UTC"

# Mean train_s over the epoch lines of a log (ours and the peers print the same format).
mean_train() { awk '{for (i = 1; i < NF; ++i) if ($i == "train_s") {s += $(i + 1); n++}} END {printf "%.3f", s / n}' "$1"; }

printf "\n%-6s %8s %8s %8s %8s %8s %9s %9s | %7s %7s %7s %7s %7s\n" round ours torch libtorch ours2x1 ddp2x1 torchGF oursGF \
  "o/t" "o/fl_t" "o/fl_o" "2/ddp" "2/o"
for ((r = 1; r <= rounds; ++r)); do
  # Each ratio's two runs are neighbours: PyTorch, ours 1x2, ours 2x1, DDP.
  "$peers/run-peer" torch_single --epochs "$epochs" --data "$data" --flush-denormal >"$log/torch" 2>/dev/null
  build/bench/bench_epoch --epochs "$epochs" --threads 2 --data "$data" >"$log/ours"
  "$mpiexec" -n 2 build/bench/bench_epoch --epochs "$epochs" --threads 1 --data "$data" >"$log/ours2"
  "$peers/run-peer" torch_ddp --epochs "$epochs" --data "$data" >"$log/ddp" 2>/dev/null
  "$peers/run-peer" libtorch --epochs "$epochs" --data "$data" >"$log/libtorch" 2>/dev/null
  "$peers/run-peer" gemm_floor --threads 2 >"$log/floor" 2>/dev/null
  build/bench/bench_gemm --threads 2 >"$log/gemm"
  o=$(mean_train "$log/ours") t=$(mean_train "$log/torch") l=$(mean_train "$log/libtorch")
  o2=$(mean_train "$log/ours2") d=$(mean_train "$log/ddp")
  tgf=$(tail -n 1 "$log/floor" | sed -n 's/.*"gflops_best": \([0-9.]*\).*/\1/p')
  ogf=$(sed -n 's/.*"square_gflops": \([0-9.]*\).*/\1/p' "$log/gemm")
  # Floor: the 645.84 GFLOP of one training epoch (3 x forward, the peers' count) at that rate.
  awk -v r="$r" -v o="$o" -v t="$t" -v l="$l" -v o2="$o2" -v d="$d" -v tgf="$tgf" -v ogf="$ogf" 'BEGIN {
    printf "%-6s %8.2f %8.2f %8.2f %8.2f %8.2f %9.1f %9.1f | %7.2f %7.2f %7.2f %7.2f %7.2f\n", r, o, t, l, o2, d, tgf, ogf,
      o / t, o / (645.84 / tgf), o / (645.84 / ogf), o2 / d, o2 / o }' | tee -a "$log/ratios"
done
python3 - "$log/ratios" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
medians = [statistics.median(float(r[c]) for r in rows) for c in range(9, 14)]
print(f"{'median':<6} {'':>8} {'':>8} {'':>8} {'':>8} {'':>8} {'':>9} {'':>9} |" + "".join(f" {m:7.2f}" for m in medians))
PY
cat <<'TXT'

Seconds per training epoch (mean of the epochs of each engine in that round); GEMM rates of a
1000^3 float32 product on 2 threads, best of 5 windows. Ratios and their targets:
  o/t     ours 1x2 / PyTorch 1x2                                    (target: <= 0.6)
  o/fl_t  ours 1x2 / floor from PyTorch's GEMM rate (645.84 GFLOP)  (target: <= 1.3)
  o/fl_o  ours 1x2 / floor from our own GEMM rate
  2/ddp   ours 2x1 / PyTorch DDP 2x1                                (target: <= 0.6)
  2/o     ours 2x1 / ours 1x2                                       (target: <= 1.15)
TXT
echo "ours, last round: $(tail -n 1 "$log/ours")"
