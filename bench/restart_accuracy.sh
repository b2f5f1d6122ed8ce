#!/usr/bin/env bash
# Accuracy after a restart with another process count against an uninterrupted run: mnist_mlp
# with the multi-node checkpointer trains N processes for E1 epochs, then M processes resume its
# checkpoints to E2 epochs; an uninterrupted N-process run trains E2 epochs. Prints both runs'
# validation accuracy per epoch and the difference at the end.
#   bash bench/restart_accuracy.sh [--from 4] [--to 2] [--first 2] [--epochs 5] [--data DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
from=4 to=2 first=2 epochs=5 data=${MNIST_DIR:-../shared/datasets/mnist}
while (($#)); do
  case $1 in
    --from) from=$2 ;; --to) to=$2 ;; --first) first=$2 ;; --epochs) epochs=$2 ;; --data) data=$2 ;;
    *) echo "restart_accuracy.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
args=(build/apps/mnist_mlp --data "$data" --checkpoint-interval 100 --no-plot)
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $(date -u '+%F %H:%M') UTC; commit $(git rev-parse --short HEAD)"
echo "# mnist_mlp: $from processes for $first epochs, then $to processes to epoch $epochs; against $from processes for $epochs epochs"
mpiexec -n "$from" "${args[@]}" -e "$epochs" -o "$work/whole" >/dev/null
mpiexec -n "$from" "${args[@]}" -e "$first" -o "$work/restart" >/dev/null
mpiexec -n "$to" "${args[@]}" -e "$epochs" -o "$work/restart" >"$work/resumed.out"
grep -o "resumed from .*" "$work/resumed.out" | head -n 1
python3 - "$work/whole/log" "$work/restart/log" <<'PY'
import json, sys
whole, restart = (json.load(open(p)) for p in sys.argv[1:3])
print(f"{'epoch':>5} {'uninterrupted':>14} {'restarted':>10}")
for a, b in zip(whole, restart):
    print(f"{a['epoch']:>5} {a['validation/main/accuracy']:>14.4f} {b['validation/main/accuracy']:>10.4f}")
d = restart[-1]["validation/main/accuracy"] - whole[-1]["validation/main/accuracy"]
print(f"difference after epoch {whole[-1]['epoch']}: {100 * d:+.2f} points")
PY
