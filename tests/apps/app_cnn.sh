#!/usr/bin/env bash
# fashion_mnist_cnn as users launch it, on a subset (3000 training, 1000 test examples: one short
# epoch): alone, finding the data by itself (Debian's dataset-fashion-mnist or Chainer's dataset
# root), then resumed to a second epoch; under mpiexec -n 2 with --data and --timing; and with
# --checkpoint-interval, 2 processes, then 1 from their checkpoints, then 2 again (the model's
# batch normalization holds running statistics that each rank gathers from its own share). Each
# run must exit 0, and write a log whose entries have the reported keys and a test accuracy well
# above chance (0.1), and its snapshots; bad options must fail with a clear message. Without the
# data set (no package, nothing in the dataset root) it is skipped (exit 77), saying so.
#   tests/apps/app_cnn.sh MPIEXEC FASHION_MNIST_CNN
set -u
mpiexec=${1:?usage: app_cnn.sh MPIEXEC FASHION_MNIST_CNN}
app=${2:?}
source "$(dirname "$0")/../lib.sh"
app=$(absolute "$app")

find_fashion_mnist
data=$fashion_mnist
scratch app_cnn
export MPIEXEC_TIMEOUT=120
subset=(--train-size 3000 --test-size 1000)

# check_log NAME DIR EPOCHS [KEY...]: DIR/log has EPOCHS entries with the report's keys (and
# KEYs), the last with test accuracy >= 0.5.
check_log() { check_app_log "$1" "$2" "$3" 0.5 "${@:4}"; }

"$app" -h >"$tmp/out" 2>&1 || fail "-h exited with $?"
grep -q "^usage: fashion_mnist_cnn" "$tmp/out" && grep -q -- "--train-size" "$tmp/out" &&
  grep -q "passes over the training set (default 10)" "$tmp/out" && ! grep -q -- "--unit" "$tmp/out" ||
  fail "-h: the usage lacks the CNN's options and defaults (or lists -u): $(head -c 600 "$tmp/out")"
expect_app_error "-u (the MLP's option)" "unknown option '-u'" -u 100
expect_app_error "batch size 0" "-b/--batchsize" -b 0
expect_app_error "--train-size 0" "--train-size" --train-size 0
expect_app_error "a subset larger than the data" "--train-size 70000 is more than the 60000 training examples" \
  --data "$data" --train-size 70000 -o "$tmp/large"
expect_app_error "missing data directory" "/nonexistent/fashion" --data /nonexistent/fashion

# One process, the data found without --data; then resumed from its snapshot to a second epoch.
if "$app" "${subset[@]}" -e 1 -o r1 >"$tmp/out" 2>"$tmp/err"; then
  grep -q "validation/main/accuracy" "$tmp/out" || fail "1 process: no report printed"
  check_log "1 process" r1 1
  [ -f r1/snapshot_iter_30 ] || fail "1 process: no r1/snapshot_iter_30: $(ls r1)"
  if "$app" "${subset[@]}" -e 2 -o r1 -r r1/snapshot_iter_30 >"$tmp/out" 2>"$tmp/err"; then
    check_log "1 process, resumed" r1 2
  else
    fail "1 process, resumed: exited with $?: $(tail -c 400 "$tmp/err")"
  fi
else
  fail "1 process: exited with $?: $(tail -c 400 "$tmp/err")"
fi

# Two processes: each trains on half the subset; --timing adds the epoch's training seconds
# and the peak RSS to the log.
if job "2 processes" 2 "$app" "${subset[@]}" --data "$data" -e 1 -o r2 --timing; then
  check_log "2 processes" r2 1 train_time peak_rss_mib
  for r in 0 1; do [ -f "r2/snapshot_iter_15.rank$r-of-2" ] || fail "no r2/snapshot_iter_15.rank$r-of-2: $(ls r2)"; done
fi

# Mixed precision (--dtype, docs/mixed_precision.md): each dtype trains the CNN well above chance;
# mixed16 and float16 scale the loss dynamically, agreed over 2 processes.
expect_app_error "an unknown dtype" "--dtype: dtype must be float32, float64, float16, bfloat16, mixed16 or mixed_bf16, not 'half'" \
  --dtype half
expect_app_error "--dtype float64" "--dtype float64 is not supported by the apps (their data are float32)" --dtype float64
for dtype in mixed_bf16 bfloat16; do
  if "$app" "${subset[@]}" --data "$data" -e 1 --dtype $dtype --no-plot -o "d_$dtype" >"$tmp/out" 2>"$tmp/err"; then
    check_log "--dtype $dtype" "d_$dtype" 1
  else
    fail "--dtype $dtype: exited with $?: $(tail -c 400 "$tmp/err")"
  fi
done
for dtype in mixed16 float16; do
  job "--dtype $dtype, 2 processes" 2 "$app" "${subset[@]}" --data "$data" -e 1 --dtype $dtype --no-plot -o "d_$dtype" &&
    check_log "--dtype $dtype, 2 processes" "d_$dtype" 1
done

# Restarts with another process count: 2 processes checkpoint epoch 1 (6 iterations of 1200
# examples), 1 process goes on from them to epoch 2 (12 iterations), 2 processes from its
# checkpoints to epoch 3. Every rank's checkpoint holds the running statistics averaged over the
# ranks, so each count resumes the other's; the log goes on.
ck=(--train-size 1200 --test-size 300 --data "$data" --checkpoint-interval 3 --no-plot -o ck)
if job "checkpoints, 2 processes, epoch 1" 2 "$app" "${ck[@]}" -e 1 &&
  job "checkpoints, 2 -> 1 process, epoch 2" 1 "$app" "${ck[@]}" -e 2; then
  grep -qF "MultiNodeCheckpointer: resumed from 2 processes at iteration 6 (epoch 1)" "$tmp/text" ||
    fail "2 -> 1: did not resume from 2 processes' iteration 6: $(head -n 12 "$tmp/text")"
  check_app_log "checkpoints, 2 -> 1" ck 2 0.3
  if job "checkpoints, 1 -> 2 processes, epoch 3" 2 "$app" "${ck[@]}" -e 3; then
    grep -qF "MultiNodeCheckpointer: resumed from 1 processes at iteration 18 (epoch 2)" "$tmp/text" ||
      fail "1 -> 2: did not resume from 1 process's iteration 18: $(head -n 12 "$tmp/text")"
    check_app_log "checkpoints, 1 -> 2" ck 3 0.3
  fi
fi

finish
