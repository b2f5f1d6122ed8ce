#!/usr/bin/env bash
# The quality of train_dcgan's generator beside the same DCGAN in PyTorch (bench/peers/dcgan_peer.py)
# after the same number of iterations: both train from their own initialization on Fashion-MNIST
# padded to 32x32 (one process, THREADS threads each, one after the other), then one classifier
# (apps/fashion_mnist_cnn's CNN, trained in PyTorch for CLASSIFIER_EPOCHS epochs) scores SAMPLES
# images of each generator (test mode, z ~ U(-1, 1), the 28x28 centre) with an Inception-score-like
# figure, exp(E_x KL(p(y|x) || p(y))): 1 when every sample looks like one class, 10 at most; the
# real test images give the reference. Our generator is read from its gen_iter_N.npz into the
# peer's PyTorch module, so both sides' samples are drawn and scored by the same code.
#   bash bench/compare_dcgan.sh [--iterations 1000] [--ch 128] [--batchsize 50] [--samples 5000]
#        [--classifier-epochs 1] [--threads 2] [--seed 0] [--data DIR]
# --ch 512 is the example's width (about 6 s an iteration for ours on 2 cores here; --ch 128, 16x
# fewer multiply-adds, about 0.6 s). Prints one JSON line per source, then a summary line.
set -euo pipefail
cd "$(dirname "$0")/.."
iterations=1000 ch=128 batchsize=50 samples=5000 classifier_epochs=1 threads=2 seed=0
data=/usr/share/datasets/fashion-mnist
while (($#)); do
  case $1 in
    --iterations) iterations=$2; shift 2 ;;
    --ch) ch=$2; shift 2 ;;
    --batchsize) batchsize=$2; shift 2 ;;
    --samples) samples=$2; shift 2 ;;
    --classifier-epochs) classifier_epochs=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    *) echo "usage: compare_dcgan.sh [--iterations N] [--ch N] [--batchsize N] [--samples N]" \
         "[--classifier-epochs N] [--threads N] [--seed N] [--data DIR]" >&2
       exit 2 ;;
  esac
done
[[ -x build/apps/train_dcgan ]] ||
  { echo "compare_dcgan.sh: build/apps/train_dcgan is not built (ninja -C build apps/train_dcgan)" >&2; exit 1; }
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $(date -u '+%F %H:%M') UTC"
echo "# $iterations iterations of batch $batchsize, --ch $ch, seed $seed; $samples samples scored;" \
  "classifier: $classifier_epochs epoch(s)"
display=$((iterations < 100 ? iterations : 100))

start=$(date +%s.%N)
build/apps/train_dcgan --iteration "$iterations" --ch "$ch" -b "$batchsize" --seed "$seed" --threads "$threads" \
  --snapshot_interval "$iterations" --display_interval "$display" --no-plot --data "$data" -o "$log/ours" \
  >"$log/ours.out" 2>"$log/ours.err" ||
  { echo "compare_dcgan.sh: train_dcgan failed" >&2; tail -n 20 "$log/ours.err" >&2; exit 1; }
ours_s=$(python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 1))" "$start" "$(date +%s.%N)")
last=$(python3 -c "import json, sys; print(json.dumps(json.load(open(sys.argv[1]))[-1]))" "$log/ours/log")
echo "{\"source\": \"ours, training\", \"train_s\": $ours_s, \"last\": $last}"
bench/peers/run-cnn-peer dcgan_peer train --iterations "$iterations" --ch "$ch" --batchsize "$batchsize" \
  --seed "$seed" --threads "$threads" --data "$data" --display-interval "$display" --out "$log/peer.pt" |
  tail -n 2
bench/peers/run-cnn-peer dcgan_peer score --ours "$log/ours/gen_iter_$iterations.npz" --peer "$log/peer.pt" --ch "$ch" \
  --classifier-epochs "$classifier_epochs" --samples "$samples" --seed "$seed" --threads "$threads" --data "$data" |
  tee "$log/scores"
python3 - "$log/scores" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{") and "IS" in l]
print("summary: " + ", ".join(f"{r['source']} IS {r['IS']}" for r in rows))
PY
