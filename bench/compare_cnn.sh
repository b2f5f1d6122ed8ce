#!/usr/bin/env bash
# Side-by-side training epochs of the Fashion-MNIST CNN (apps/fashion_mnist_cnn) and its PyTorch
# peers (bench/peers/run-cnn-peer: the same network, data, optimizer and initialization), in one
# run of the machine, round by round (the machine is shared and noisy: the runs of one round
# follow one another, PyTorch, ours, libtorch, so each ratio's runs are minutes apart):
#   1 process x 2 threads each: ours (--threads 2 --timing), PyTorch (Python), libtorch (C++).
# Each engine trains WARMUP + EPOCHS epochs from its start and the first WARMUP are dropped (the
# first epoch pays for first-touch allocations and caches on every engine). Per engine: the mean
# training seconds of the kept epochs (evaluation excluded: our log's train_time, the peers'
# train_s), the test accuracy after the last epoch and the peak RSS (ru_maxrss); then the ratios
# ours / PyTorch and ours / libtorch per round and their median, and a JSON line of everything.
# --dtype mixed_bf16 trains ours under mixed_bf16 and PyTorch under torch.autocast("cpu",
# dtype=torch.bfloat16) (its CPU autocast has bfloat16 only), without libtorch.
#   bash bench/compare_cnn.sh [--epochs 1] [--warmup 1] [--rounds 1] [--data DIR] [--dtype float32|mixed_bf16]
# DIR: a Fashion-MNIST directory (default: Debian's dataset-fashion-mnist, which run-cnn-peer
# installs on first use). Takes about (WARMUP + EPOCHS) x 35-60 s per engine and round here.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=1 epochs=1 warmup=1 data=/usr/share/datasets/fashion-mnist dtype=float32
while (($#)); do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --data) data=$2; shift 2 ;;
    --dtype) dtype=$2; shift 2 ;;
    *) echo "usage: compare_cnn.sh [--epochs N] [--warmup N] [--rounds N] [--data DIR] [--dtype float32|mixed_bf16]" >&2; exit 2 ;;
  esac
done
((epochs >= 1 && warmup >= 0 && rounds >= 1)) || { echo "compare_cnn.sh: --epochs and --rounds must be >= 1, --warmup >= 0" >&2; exit 2; }
[[ -x build/apps/fashion_mnist_cnn ]] || { echo "compare_cnn.sh: build/apps/fashion_mnist_cnn is not built (ninja -C build)" >&2; exit 1; }
case $dtype in
  float32) amp=() ;;
  mixed_bf16) amp=(--amp bfloat16) ;;
  *) echo "compare_cnn.sh: --dtype $dtype: expected float32 or mixed_bf16 (PyTorch's CPU autocast has bfloat16 only)" >&2; exit 2 ;;
esac
total=$((warmup + epochs))
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p') (family $(lscpu | sed -n 's/^CPU family: *//p'), model $(lscpu | sed -n 's/^Model: *//p')), $(nproc) cores; $(date -u '+%F %H:%M') UTC"
echo "# $total epoch(s) per engine, the first $warmup dropped; data: $data; dtype: $dtype${amp:+ (PyTorch: ${amp[*]}; no libtorch)}"

# run NAME COMMAND...: COMMAND's stdout into $log/NAME.ROUND; on failure its stderr, and stop.
run() {
  local name=$1
  shift
  "$@" >"$log/$name.$r" 2>"$log/$name.err" || { echo "compare_cnn.sh: $name failed: $*" >&2; tail -n 20 "$log/$name.err" >&2; exit 1; }
}

printf "\n%-6s %8s %8s %8s | %7s %7s %7s | %8s %8s %8s | %7s %7s\n" round ours torch libtorch \
  acc_o acc_t acc_l rss_o rss_t rss_l "o/t" "o/l"
for ((r = 1; r <= rounds; ++r)); do
  run torch bench/peers/run-cnn-peer fashion_mnist_cnn --epochs "$total" --data "$data" --threads 2 "${amp[@]}"
  run ours build/apps/fashion_mnist_cnn -e "$total" --threads 2 --timing --data "$data" --dtype "$dtype" -o "$log/ours.$r.result"
  [[ $dtype != float32 ]] || run libtorch bench/peers/run-cnn-peer libtorch_cnn --epochs "$total" --data "$data" --threads 2
  python3 - "$log" "$r" "$warmup" <<'PY' | tee -a "$log/rows"
import json, sys
log, r, warmup = sys.argv[1], sys.argv[2], int(sys.argv[3])

def peer(name):
    """(train_s of the kept epochs, last test_acc, peak RSS MiB) from a peer's output."""
    lines = open(f"{log}/{name}.{r}").read().splitlines()
    epochs = [dict(zip(l.split()[0::2], l.split()[1::2])) for l in lines if l.startswith("epoch ")]
    summary = json.loads(next(l for l in reversed(lines) if l.startswith("{")))
    return [float(e["train_s"]) for e in epochs[warmup:]], float(epochs[-1]["test_acc"]), summary["peak_rss_mib"]

def ours():
    entries = json.load(open(f"{log}/ours.{r}.result/log"))
    return ([e["train_time"] for e in entries[warmup:]], entries[-1]["validation/main/accuracy"],
            entries[-1]["peak_rss_mib"])

import os
res = {"ours": ours(), "torch": peer("torch")}
if os.path.exists(f"{log}/libtorch.{r}"):
    res["libtorch"] = peer("libtorch")
mean = {k: sum(v[0]) / len(v[0]) for k, v in res.items()}
def cell(value, width, spec):
    return f" {value:{width}{spec}}" if value is not None else f" {'-':>{width}}"
lib = res.get("libtorch")
print(f"{r:<6} {mean['ours']:8.2f} {mean['torch']:8.2f}" + cell(mean.get('libtorch'), 8, '.2f') + " |"
      f" {res['ours'][1]:7.4f} {res['torch'][1]:7.4f}" + cell(lib and lib[1], 7, '.4f') + " |"
      f" {res['ours'][2]:8.0f} {res['torch'][2]:8.0f}" + cell(lib and lib[2], 8, '.0f') + " |"
      f" {mean['ours'] / mean['torch']:7.2f}" + cell(lib and mean['ours'] / mean['libtorch'], 7, '.2f'))
with open(f"{log}/json", "a") as f:
    f.write(json.dumps({k: {"train_s": v[0], "test_acc": v[1], "peak_rss_mib": v[2]} for k, v in res.items()}) + "\n")
PY
done
python3 - "$log" "$epochs" "$warmup" "$dtype" <<'PY'
import json, statistics, sys
log, epochs, warmup = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = [line.split() for line in open(f"{log}/rows")]
medians = [statistics.median(float(row[c]) for row in rows) if rows[0][c] != "-" else None for c in (13, 14)]
print(f"{'median':<6} {'':>8} {'':>8} {'':>8} | {'':>7} {'':>7} {'':>7} | {'':>8} {'':>8} {'':>8} |"
      + "".join(f" {m:7.2f}" if m is not None else f" {'-':>7}" for m in medians))
rounds = [json.loads(line) for line in open(f"{log}/json")]
print(json.dumps({"benchmark": "fashion_mnist_cnn", "dtype": sys.argv[4], "epochs": epochs, "warmup": warmup, "threads": 2,
                  "rounds": rounds, "median_ours_over_torch": medians[0], "median_ours_over_libtorch": medians[1]}))
PY
cat <<'TXT'

Seconds per training epoch (mean of the kept epochs; evaluation excluded), test accuracy after
the last epoch, peak RSS in MiB, each engine 1 process x 2 threads. Ratios:
  o/t  ours / PyTorch (Python)
  o/l  ours / libtorch (C++)
TXT
