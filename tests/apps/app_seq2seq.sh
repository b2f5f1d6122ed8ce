#!/usr/bin/env bash
# The seq2seq examples as users launch them, on small subsets (seconds each): seq2seq on CMUdict
# alone, resumed, and under mpiexec -n 2; seq2seq_mp1 under mpiexec -n 2 and its refusal of
# other process counts; --dump-ids; bad options. Every run must exit 0 and log the example's
# keys with the loss going down. Without festlex-cmu it is skipped (exit 77).
# Given SWORD_PARALLEL_TEXT ("" where it is not built), it runs the Bible's case instead: the
# TSV made on demand by the converter; skipped without the converter or the SWORD modules.
#   tests/apps/app_seq2seq.sh MPIEXEC SEQ2SEQ SEQ2SEQ_MP1 [SWORD_PARALLEL_TEXT]
set -u
mpiexec=${1:?usage: app_seq2seq.sh MPIEXEC SEQ2SEQ SEQ2SEQ_MP1 [SWORD_PARALLEL_TEXT]}
source "$(dirname "$0")/../lib.sh"
app=$(absolute "${2:?}")
mp1=$(absolute "${3:?}")
sword=${4:-}
# check_log NAME DIR EPOCHS [KEY...]: DIR/log has EPOCHS entries with the example's keys (and
# KEYs), and main/loss falls from the first to the last.
check_log() {
  python3 - "$@" <<'PY' || failures=$((failures + 1))
import json, sys
name, path, epochs, extra = sys.argv[1], sys.argv[2] + "/log", int(sys.argv[3]), sys.argv[4:]
log = json.load(open(path))
if [e.get("epoch") for e in log] != list(range(1, epochs + 1)):
    sys.exit(f"FAIL: {name}: log epochs {[e.get('epoch') for e in log]}, expected 1..{epochs}")
for e in log:
    missing = [k for k in ["main/loss", "main/perp", "validation/main/bleu"] + extra if k not in e]
    if missing:
        sys.exit(f"FAIL: {name}: epoch {e['epoch']} lacks {missing}: {sorted(e)}")
if not log[-1]["main/loss"] < log[0]["main/loss"]:
    sys.exit(f"FAIL: {name}: main/loss did not go down: {[e['main/loss'] for e in log]}")
print(f"ok: {name}: main/loss {log[0]['main/loss']:.3f} -> {log[-1]['main/loss']:.3f}, "
      f"BLEU {log[-1]['validation/main/bleu']:.4f}")
PY
}

if [ $# -ge 4 ]; then
  scratch app_seq2seq_bible
  if [ -z "$sword" ] || ! "$sword" --out probe.tsv >"$tmp/out" 2>&1; then
    echo "skipped: no sword_parallel_text or no SWORD Bibles (apt-get install libsword-dev sword-text-kjv sword-text-sparv): $(tail -c 200 "$tmp/out")"
    exit 77
  fi
  rm -f probe.tsv
  if "$app" --limit 500 --test-size 50 --max-vocab 2000 --unit 32 --layer 1 -e 2 --max-length 20 --no-plot -o rb \
      >"$tmp/out" 2>"$tmp/err"; then
    grep -q "does not exist: making it with .*sword_parallel_text.* --out 'bible.tsv'" "$tmp/out" ||
      fail "bible: no word of making bible.tsv: $(head -c 400 "$tmp/out")"
    [ -s bible.tsv ] || fail "bible: no bible.tsv made"
    check_log "seq2seq, the Bible" rb 2
  else
    fail "seq2seq, the Bible: exited with $?: $(tail -c 400 "$tmp/err")"
  fi
  expect_app_error "a missing --bible the converter cannot make" "--bible /nonexistent/dir/bible.tsv" \
    --bible /nonexistent/dir/bible.tsv
  finish
fi
if [ ! -f /usr/share/festival/dicts/cmu/cmudict-0.4.out ]; then
  echo "skipped: no CMUdict (apt-get install festlex-cmu)"
  exit 77
fi
scratch app_seq2seq
export MPIEXEC_TIMEOUT=120
small=(--data cmudict --limit 2000 --test-size 200 --unit 32 --layer 1 --no-plot)

"$app" -h >"$tmp/out" 2>&1 && grep -q "^usage: \[mpiexec -n N\] seq2seq" "$tmp/out" && grep -q -- "--dump-ids" "$tmp/out" &&
  grep -q "examples per mini-batch (default 64)" "$tmp/out" && grep -q "units in each hidden layer (default 1024)" "$tmp/out" ||
  fail "-h: the usage lacks the example's options and defaults: $(head -c 400 "$tmp/out")"
expect_app_error "an unknown task" "--data must be bible or cmudict, got 'wmt'" --data wmt
expect_app_error "layers 0" "-l/--layer" -l 0
expect_app_error "a subset larger than the data" "--limit 200000 is more than the" --data cmudict --limit 200000
app_saved=$app
app=$mp1
expect_app_error "seq2seq_mp1 alone" "seq2seq_mp1 runs on exactly 2 processes" "${small[@]}"
app=$app_saved

# One process, two epochs, then resumed to a third; --timing prints a JSON line per epoch.
if "$app" "${small[@]}" -e 2 -o r1 --timing >"$tmp/out" 2>"$tmp/err"; then
  check_log "seq2seq, 1 process" r1 2 validation/main/per validation/main/wer train_time peak_rss_mib
  [ "$(grep -c '^{"epoch": [0-9]*, "train_s": .*"tokens_per_s": .*"peak_rss_mib": ' "$tmp/out")" = 2 ] ||
    fail "--timing: expected 2 JSON lines: $(grep '^{' "$tmp/out")"
  grep -q "^#  result : " "$tmp/out" || fail "no translations printed: $(head -c 400 "$tmp/out")"
  snap=$(ls r1 | grep '^snapshot_iter_' | head -n 1)
  if [ -n "$snap" ] && "$app" "${small[@]}" -e 3 -o r1 -r "r1/$snap" >"$tmp/out" 2>"$tmp/err"; then
    check_log "seq2seq, resumed" r1 3
  else
    fail "seq2seq, resumed from r1/$snap: exited with $?: $(tail -c 400 "$tmp/err")"
  fi
else
  fail "seq2seq, 1 process: exited with $?: $(tail -c 400 "$tmp/err")"
fi

# Two processes, each on half the pairs.
if job "seq2seq, 2 processes" 2 "$app" "${small[@]}" -e 2 -o r2; then
  check_log "seq2seq, 2 processes" r2 2
  for r in 0 1; do ls r2 | grep -q "^snapshot_iter_.*\.rank$r-of-2$" || fail "no rank $r snapshot in r2: $(ls r2)"; done
fi

# The model-parallel example: its report comes from rank 1, which holds the loss.
if ALL_RANKS_PRINT=1 job "seq2seq_mp1, 2 processes" 2 "$mp1" "${small[@]}" -e 2 -o r3; then
  check_log "seq2seq_mp1, 2 processes" r3 2 validation/main/per
  grep -q '^\[1\] .*validation/main/bleu' "$tmp/out" || fail "seq2seq_mp1: rank 1 printed no report"
fi
# Mixed precision: the data-parallel example under mixed16 (loss scaling over 2 processes) and
# the model-parallel one with bfloat16 parameters.
job "seq2seq --dtype mixed16, 2 processes" 2 "$app" "${small[@]}" -e 2 --dtype mixed16 -o rm &&
  check_log "seq2seq --dtype mixed16" rm 2 validation/main/per
ALL_RANKS_PRINT=1 job "seq2seq_mp1 --dtype bfloat16, 2 processes" 2 "$mp1" "${small[@]}" -e 2 --dtype bfloat16 -o rmb &&
  check_log "seq2seq_mp1 --dtype bfloat16" rmb 2 validation/main/per
if "$mp1" "${small[@]}" -e 1 >"$tmp/out" 2>&1; then fail "seq2seq_mp1 alone exited 0"; fi
timeout -k 5 60 "$mpiexec" -n 3 "$mp1" "${small[@]}" -e 1 -o r4 >"$tmp/out" 2>&1 &&
  fail "seq2seq_mp1 at 3 processes exited 0"
grep -q "seq2seq_mp1 runs on exactly 2 processes .*got 3" "$tmp/out" || fail "3 processes: no message: $(tail -c 300 "$tmp/out")"

# --dump-ids: the counts match what the run says it trains and scores on.
if "$app" "${small[@]}" -e 1 --translations 0 -o r5 --dump-ids ids >"$tmp/out" 2>"$tmp/err"; then
  lines() { wc -l <"ids/$1" | tr -d ' '; }
  [ "$(lines train.source.txt)" = 2000 ] && [ "$(lines train.target.txt)" = 2000 ] &&
    [ "$(lines validation.source.txt)" = 200 ] && [ "$(lines validation.target.txt)" = 200 ] ||
    fail "--dump-ids: line counts $(wc -l ids/*.txt | tr '\n' ' ')"
  grep -q "vocabularies: $(lines vocab.source.txt) source, $(lines vocab.target.txt) target" "$tmp/out" ||
    fail "--dump-ids: vocabulary sizes differ from the run's: $(grep '^# data' "$tmp/out"), $(wc -l ids/vocab*)"
  [ "$(head -n 2 ids/vocab.target.txt | tr '\n' ' ')" = "<eos> <unk> " ] || fail "--dump-ids: vocab does not start <eos> <unk>"
  grep -qvE '^[0-9]+( [0-9]+)*$' ids/train.source.txt && fail "--dump-ids: a line that is not ids"
  echo "ok: --dump-ids"
else
  fail "--dump-ids: exited with $?: $(tail -c 400 "$tmp/err")"
fi

finish
