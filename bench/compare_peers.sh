#!/usr/bin/env bash
# Side-by-side training-epoch times of chainermn-cpp and the PyTorch peers, in one run of the
# machine, alternating engines round by round (the machine is shared and noisy), plus the GEMM
# floors: 1 process x 2 threads (ours, PyTorch, libtorch) and 2 processes x 1 thread (ours under
# mpiexec, PyTorch DDP with gloo). Installs the peers' packages on first use (see
# ../shared/peers/README.md).
#   bash bench/compare_peers.sh [--rounds 2] [--epochs 2]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=2 epochs=2
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
mpiexec=$(command -v mpiexec.mpich || command -v mpiexec)
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $(date -u +%F)"
for ((r = 1; r <= rounds; ++r)); do
  build/bench/bench_epoch --epochs "$epochs" --threads 2 --data "$data" >"$log/ours.$r"
  "$peers/run-peer" torch_single --epochs "$epochs" --data "$data" --flush-denormal >"$log/torch.$r" 2>/dev/null
  "$peers/run-peer" libtorch --epochs "$epochs" --data "$data" >"$log/libtorch.$r" 2>/dev/null
  "$mpiexec" -n 2 build/bench/bench_epoch --epochs "$epochs" --threads 1 --data "$data" >"$log/ours_2x1.$r"
  "$peers/run-peer" torch_ddp --epochs "$epochs" --data "$data" >"$log/ddp_2x1.$r" 2>/dev/null
done
build/bench/bench_gemm --threads 2 >"$log/gemm"
"$peers/run-peer" gemm_floor --threads 2 >"$log/floor" 2>/dev/null

# train_s of each epoch line, per engine and round.
times() { awk '{for (i = 1; i < NF; ++i) if ($i == "train_s") printf "%s ", $(i + 1)}' "$@"; }
printf "\n%-28s %s\n" "engine" "train seconds per epoch, epoch 1..$epochs, round by round"
for e in ours torch libtorch ours_2x1 ddp_2x1; do
  line=""
  for ((r = 1; r <= rounds; ++r)); do line+="[ $(times "$log/$e.$r")] "; done
  printf "%-28s %s\n" "$e" "$line"
done
echo
grep -E "^floor|^GEMM time|square" "$log/gemm"
tail -n 1 "$log/floor"
echo "ours, last round: $(tail -n 1 "$log/ours.$rounds")"
rm -rf "$log"
