#!/usr/bin/env bash
# The seq2seq example (apps/seq2seq) beside its PyTorch peer (bench/peers/seq2seq_peer.py: the same
# model, loss, optimizer and greedy BLEU) on the very same data, in one run of the machine, round by
# round (the machine is shared and noisy: the two runs of each ratio follow one another):
#   1. the app writes the ids it trains and scores on (--dump-ids) during its first run, and the
#      peer reads them, so both train on the same pairs with the same vocabularies;
#   2. each round: ours (--timing), then PyTorch, 1 process x THREADS threads each, EPOCHS epochs;
#   3. with --procs2, then also 2 processes x 1 thread: ours under mpiexec -n 2, the peer's --ddp
#      (gloo); --batchsize is per process in both.
# Prints per round and epoch: training seconds (evaluation excluded) and tokens/s of each engine,
# ours / PyTorch, BLEU, token and sequence error rates after that epoch, peak RSS; then the median
# ratio per epoch and a JSON line of everything.
#   bash bench/compare_seq2seq.sh [--data cmudict|bible] [--rounds 1] [--epoch 2] [--limit 20000]
#        [--unit 256] [--layer 2] [--batchsize 64] [--seed 0] [--threads 2] [--procs2]
#        [--app build/apps/seq2seq] [--keep DIR] [APP ARGS...]
# APP ARGS go to the app and shape the data the peer reads too (e.g. --max-vocab 8000). With
# --data bible the defaults add $bible_args below. Builds nothing: build/apps/seq2seq must exist.
# The peer's packages (python3-torch, python3-nltk) are installed on first use by run-cnn-peer.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
data=cmudict rounds=1 epoch=2 limit=20000 unit=256 layer=2 batchsize=64 seed=0 threads=2 procs2=0
app=build/apps/seq2seq keep=
# The Bible's configuration: a smaller output layer (8000 words) and short translations, so an
# epoch takes minutes rather than tens of minutes here.
bible_args=(--max-vocab 8000 --max-length 30)
extra=()
usage="usage: compare_seq2seq.sh [--data cmudict|bible] [--rounds N] [--epoch N] [--limit N] [--unit N] [--layer N]
       [--batchsize N] [--seed N] [--threads N] [--procs2] [--app PATH] [--keep DIR] [APP ARGS...]"
while (($#)); do
  case $1 in
    --data) data=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --epoch|-e) epoch=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    --unit|-u) unit=$2; shift 2 ;;
    --layer|-l) layer=$2; shift 2 ;;
    --batchsize|-b) batchsize=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --procs2) procs2=1; shift ;;
    --app) app=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    -h|--help) echo "$usage"; exit 0 ;;
    *) extra+=("$1"); shift ;;
  esac
done
[[ $data == cmudict || $data == bible ]] || { echo "compare_seq2seq.sh: --data is cmudict or bible, not '$data'" >&2; exit 2; }
((rounds >= 1 && epoch >= 1 && threads >= 1)) || { echo "compare_seq2seq.sh: --rounds, --epoch and --threads must be >= 1" >&2; exit 2; }
if [[ ! -x $app ]]; then
  echo "compare_seq2seq.sh: $app is not built: this script builds nothing (ninja -C build apps/seq2seq, or --app PATH)" >&2
  exit 1
fi
app=$(cd "$(dirname "$app")" && pwd)/$(basename "$app")
mpiexec=$(command -v mpiexec.mpich || command -v mpiexec || true)
if ((procs2)) && [[ -z $mpiexec ]]; then echo "compare_seq2seq.sh: --procs2 needs mpiexec (MPICH)" >&2; exit 1; fi
[[ $data != bible ]] || extra=("${bible_args[@]}" "${extra[@]}")
# The peer translates with the app's --max-length (its cap on a translation's tokens), so BLEU and
# the error rates score the same hypotheses' lengths.
peer_extra=()
for ((i = 0; i < ${#extra[@]}; ++i)); do
  [[ ${extra[i]} != --max-length ]] || peer_extra=(--max-length "${extra[i + 1]}")
done
if [[ -n $keep ]]; then mkdir -p "$keep"; log=$(cd "$keep" && pwd); else log=$(mktemp -d); trap 'rm -rf "$log"' EXIT; fi
ids=$log/ids
model=(--data "$data" --unit "$unit" --layer "$layer" --batchsize "$batchsize" --epoch "$epoch" --limit "$limit" --seed "$seed")

echo "# machine: $(lscpu | sed -n 's/^Model name: *//p') (family $(lscpu | sed -n 's/^CPU family: *//p'), model $(lscpu | sed -n 's/^Model: *//p')), $(nproc) cores; $(date -u '+%F %H:%M') UTC; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# commit $(git rev-parse --short HEAD 2>/dev/null || echo '?'); ours: $app ${model[*]} ${extra[*]}"

# run NAME COMMAND...: COMMAND's stdout into $log/NAME.ROUND and stderr into $log/NAME.ROUND.err,
# in $log/work (the app makes bible.tsv there once); on failure its stderr, and stop.
mkdir -p "$log/work"
run() {
  local name=$1
  shift
  (cd "$log/work" && "$@") >"$log/$name.$r" 2>"$log/$name.$r.err" ||
    { echo "compare_seq2seq.sh: $name failed (round $r): $*" >&2; tail -n 20 "$log/$name.$r.err" >&2; exit 1; }
}
ours() {  # NAME PROCS: our app, its log in $log/NAME.ROUND.result
  local name=$1 procs=$2 dump=()
  [[ -d $ids ]] || dump=(--dump-ids "$ids")
  if ((procs == 1)); then
    CHAINER_NUM_THREADS=$threads run "$name" "$app" "${model[@]}" "${extra[@]}" --timing -o "$log/$name.$r.result" "${dump[@]}"
  else
    CHAINER_NUM_THREADS=1 run "$name" "$mpiexec" -n "$procs" "$app" "${model[@]}" "${extra[@]}" --timing -o "$log/$name.$r.result" "${dump[@]}"
  fi
}
check_dump() {
  local f missing=()
  for f in train.source train.target validation.source validation.target vocab.source vocab.target; do
    [[ -s $ids/$f.txt ]] || missing+=("$f.txt")
  done
  ((${#missing[@]} == 0)) || { echo "compare_seq2seq.sh: $app --dump-ids $ids did not write ${missing[*]}" >&2; exit 1; }
  echo "# data: $(wc -l <"$ids/train.source.txt") training pairs, $(wc -l <"$ids/validation.source.txt") validation pairs; vocabularies $(wc -l <"$ids/vocab.source.txt") / $(wc -l <"$ids/vocab.target.txt")"
}

configs=("1 $threads")
((procs2)) && configs+=("2 1")
for ((r = 1; r <= rounds; ++r)); do
  for config in "${configs[@]}"; do
    read -r procs t <<<"$config"
    tag=p$procs
    fresh=0
    [[ -d $ids ]] || fresh=1
    ours "ours.$tag" "$procs"
    if ((fresh)); then
      check_dump
      # An app that only dumps when asked to (no epochs on that run): train again without it.
      grep -q '^{' "$log/ours.$tag.$r" || ours "ours.$tag" "$procs"
    fi
    if ((procs == 1)); then
      run "torch.$tag" "$repo/bench/peers/run-cnn-peer" seq2seq_peer --data-dir "$ids" --unit "$unit" --layer "$layer" \
        --batchsize "$batchsize" --epoch "$epoch" --seed "$seed" --threads "$t" "${peer_extra[@]}"
    else
      run "torch.$tag" "$repo/bench/peers/run-cnn-peer" seq2seq_peer --data-dir "$ids" --unit "$unit" --layer "$layer" \
        --batchsize "$batchsize" --epoch "$epoch" --seed "$seed" --threads "$t" --ddp --procs "$procs" "${peer_extra[@]}"
    fi
  done
done

python3 - "$log" "$rounds" "$data" "${configs[@]}" <<'PY'
import json, os, statistics, sys
log, rounds, data, configs = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]

def first(d, *keys):
    return next((d[k] for k in keys if k in d and d[k] is not None), None)

def ours_epochs(stdout_path, result_dir):
    """Our app's epochs: {epoch: {train_s, tokens_per_s, peak_rss_mib, loss, bleu, token_error_rate,
    sequence_error_rate}}. The --timing lines on stdout give the times, the log in -o DIR (as
    Chainer's LogReport writes it) the metrics; adjust the key names here when the app's change."""
    out = {}
    for line in open(stdout_path):
        if line.startswith("{"):
            d = json.loads(line)
            if "epoch" in d:
                out[int(d["epoch"])] = {"train_s": first(d, "train_s", "train_time"),
                                        "tokens_per_s": first(d, "tokens_per_s"),
                                        "peak_rss_mib": first(d, "peak_rss_mib")}
    path = os.path.join(result_dir, "log")
    for d in json.load(open(path)) if os.path.exists(path) else []:
        e = out.setdefault(int(d["epoch"]), {})
        for key, names in {"train_s": ("train_time",), "peak_rss_mib": ("peak_rss_mib",),
                           "loss": ("main/loss",), "bleu": ("validation/main/bleu", "bleu"),
                           "token_error_rate": ("validation/main/per", "token_error_rate"),
                           "sequence_error_rate": ("validation/main/wer", "sequence_error_rate")}.items():
            if e.get(key) is None:
                e[key] = first(d, *names)
    return out

def torch_epochs(stdout_path):
    return {int(d["epoch"]): d for d in (json.loads(l) for l in open(stdout_path) if l.startswith("{"))}

def f(v, fmt):
    return format(v, fmt) if isinstance(v, (int, float)) else "-"

rows, ratios = [], {}
head = (f"{'procs':<6}{'round':>5}{'epoch':>6} {'ours_s':>8} {'torch_s':>8} {'o/t':>6} | {'ours_tok/s':>10} {'torch_tok/s':>11} |"
        f" {'bleu_o':>7} {'bleu_t':>7} | {'ter_o':>6} {'ter_t':>6} | {'ser_o':>6} {'ser_t':>6} | {'rss_o':>6} {'rss_t':>6}")
print("\n" + head)
for config in configs:
    procs, threads = config.split()
    tag = "p" + procs
    for r in range(1, rounds + 1):
        o = ours_epochs(f"{log}/ours.{tag}.{r}", f"{log}/ours.{tag}.{r}.result")
        t = torch_epochs(f"{log}/torch.{tag}.{r}")
        for e in sorted(set(o) | set(t)):
            oe, te = o.get(e, {}), t.get(e, {})
            ratio = oe["train_s"] / te["train_s"] if oe.get("train_s") and te.get("train_s") else None
            if ratio is not None:
                ratios.setdefault((procs, e), []).append(ratio)
            rows.append({"procs": int(procs), "threads": int(threads), "round": r, "epoch": e, "ours": oe, "torch": te})
            print(f"{procs + 'x' + threads:<6}{r:>5}{e:>6} {f(oe.get('train_s'), '8.2f')} {f(te.get('train_s'), '8.2f')}"
                  f" {f(ratio, '6.2f')} | {f(oe.get('tokens_per_s'), '10.0f')} {f(te.get('tokens_per_s'), '11.0f')} |"
                  f" {f(oe.get('bleu'), '7.4f')} {f(te.get('bleu'), '7.4f')} |"
                  f" {f(oe.get('token_error_rate'), '6.3f')} {f(te.get('token_error_rate'), '6.3f')} |"
                  f" {f(oe.get('sequence_error_rate'), '6.3f')} {f(te.get('sequence_error_rate'), '6.3f')} |"
                  f" {f(oe.get('peak_rss_mib'), '6.0f')} {f(te.get('peak_rss_mib'), '6.0f')}")
medians = {f"{p}:{e}": statistics.median(v) for (p, e), v in sorted(ratios.items())}
for (p, e), v in sorted(ratios.items()):
    print(f"median ours / pytorch, {p} process(es), epoch {e}, over {len(v)} round(s): {statistics.median(v):.2f}")
print(json.dumps({"benchmark": "seq2seq", "data": data, "rows": rows, "median_ours_over_torch": medians}))
PY
cat <<'TXT'

Seconds of training per epoch (evaluation excluded), tokens/s (source and target tokens with
their <eos>, per second of training), o/t = ours / PyTorch; after each epoch on the validation
set: BLEU (NLTK's corpus_bleu, smoothing method1), token and sequence error rates (the G2P
task's phoneme and word error rates); peak RSS in MiB (rank 0's with 2 processes).
TXT
