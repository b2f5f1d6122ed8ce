#!/usr/bin/env bash
# The LSTM stack's training step beside PyTorch's nn.LSTM, in one run of the machine, round by
# round (ours, then PyTorch): bench_lstm and bench/peers/lstm_peer.py on the same sizes, 1 process
# x THREADS threads each. Prints each round's median seconds per step, their ratio ours / PyTorch,
# and the median ratio over the rounds.
#   bash bench/compare_lstm.sh [--rounds 3] [ARGS...]   (ARGS: bench_lstm's, e.g. --bi --units 512)
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
[[ -x build/bench/bench_lstm ]] || { echo "compare_lstm.sh: build/bench/bench_lstm is not built (ninja -C build)" >&2; exit 1; }
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p') (family $(lscpu | sed -n 's/^CPU family: *//p'), model $(lscpu | sed -n 's/^Model: *//p')), $(nproc) cores; $(date -u '+%F %H:%M') UTC"
ratios=()
for ((r = 1; r <= rounds; ++r)); do
  ours=$(build/bench/bench_lstm "${args[@]}")
  torch=$(bench/peers/run-cnn-peer lstm_peer "${args[@]}")
  ((r > 1)) || { echo "$ours"; echo "$torch"; }
  ratio=$(python3 -c 'import json,sys; o=json.loads(sys.argv[1]); t=json.loads(sys.argv[2]); print("%.3f %.4f %.4f" % (o["step_s_median"] / t["step_s_median"], o["step_s_median"], t["step_s_median"]))' "$ours" "$torch")
  read -r q o t <<<"$ratio"
  echo "round $r: ours $o s/step, pytorch $t s/step, ours / pytorch $q"
  ratios+=("$q")
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END {print "median ours / pytorch over " NR " rounds: " a[int((NR + 1) / 2)]}'
