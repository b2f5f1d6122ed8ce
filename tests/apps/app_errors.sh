#!/usr/bin/env bash
# The mnist_mlp app on bad input: each case must print a clear message on stderr and exit with
# status 1 exactly (an error, not a crash or a signal); -h prints the usage and exits 0.
# Cases that get as far as loading data use $MNIST_DIR (and fail without it); runs that
# train use -u 10 to stay cheap.
#   tests/apps/app_errors.sh path/to/mnist_mlp
set -u
app=${1:?usage: app_errors.sh MNIST_MLP}
source "$(dirname "$0")/../lib.sh"
app=$(absolute "$app")
scratch app_errors

# expect_error NAME PATTERN... -- ARGS...: exit status 1 and every PATTERN (fixed strings) in stderr.
# The command runs after "${prefix[@]}" (nothing unless a case sets it).
prefix=()
expect_error() {
  local name=$1
  shift
  local patterns=()
  while [ "$1" != "--" ]; do
    patterns+=("$1")
    shift
  done
  shift
  "${prefix[@]}" "$app" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -ne 1 ]; then
    fail "$name: mnist_mlp $* exited with $rc, expected 1 (stderr: $(tail -c 400 "$tmp/err"))"
    return
  fi
  if ! grep -q "^mnist_mlp: error: " "$tmp/err"; then
    fail "$name: stderr has no 'mnist_mlp: error:' line: $(tail -c 400 "$tmp/err")"
    return
  fi
  local p
  for p in "${patterns[@]}"; do
    if ! grep -qF -- "$p" "$tmp/err"; then
      fail "$name: stderr does not mention '$p': $(tail -c 400 "$tmp/err")"
      return
    fi
  done
  echo "ok: $name: $(grep '^mnist_mlp: error: ' "$tmp/err" | head -n 1)"
}

# -h: usage on stdout, status 0.
"$app" -h >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -ne 0 ]; then fail "-h exited with $rc"; fi
if ! grep -q "^usage: mnist_mlp" "$tmp/out"; then fail "-h did not print the usage"; fi
if ! grep -q -- "--batchsize" "$tmp/out"; then fail "-h does not describe --batchsize"; fi
[ "$rc" -eq 0 ] && echo "ok: -h"
"$app" --help >/dev/null 2>&1 || fail "--help exited with $?"

# Command line errors (nothing is loaded).
expect_error "batch size 0" "-b/--batchsize" "at least 1" "got 0" -- -b 0
expect_error "negative epochs" "-e/--epoch" "got -1" -- -e -1
expect_error "non-numeric units" "-u/--unit" "'abc'" -- -u abc
expect_error "trailing garbage in a number" "-b/--batchsize" "'10x'" -- -b 10x
expect_error "unknown flag" "--bogus" "unknown option" -- --bogus
expect_error "unknown flag with a value" "--bogus" "unknown option" -- --bogus=3
expect_error "missing value" "-b" "needs a value" -- -b
expect_error "empty value" "--out" "needs a value" -- --out=
expect_error "frequency 0" "-f/--frequency" -- -f 0
expect_error "unknown reduction" "--reduction" "'foo'" -- --reduction foo
expect_error "unknown communicator" "unknown communicator name 'bogus'" "naive, flat" -- --communicator bogus
expect_error "NCCL communicator" "'pure_nccl'" "needs NCCL" -- --communicator pure_nccl
expect_error "too many threads" "--threads" "at most" -- --threads 99999999999
# More threads than 8 for each core this process may run on: they would only take turns.
cores=$(nproc)
expect_error "threads beyond 8 per core" "--threads $((8 * cores + 1)): $((8 * cores + 1)) compute threads are more" \
  "at most $((8 * cores > 1024 ? 1024 : 8 * cores))" -- --threads $((8 * cores + 1))
# Started by another MPI's launcher (its environment says rank 1 of 2; MPI says 1 process): refused.
PMI_SIZE=2 PMI_RANK=1 expect_error "hydra's environment, alone" "PMI_SIZE=2 but MPI_COMM_WORLD has 1 process" \
  "mpiexec.mpich" -- -e 1 -u 10
OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=1 expect_error "Open MPI's environment" "OMPI_COMM_WORLD_SIZE=2" \
  "mpiexec.mpich" -- -e 1 -u 10
expect_error "an epoch count past int64" "-e/--epoch" "at most" -- -e 99999999999999999999
# The same rule for CHAINER_NUM_THREADS as for --threads, before any data is read.
for bad in 0 x 2.5; do
  CHAINER_NUM_THREADS=$bad expect_error "CHAINER_NUM_THREADS=$bad" "CHAINER_NUM_THREADS" "$bad" -- -e 1 -u 10 --data /nonexistent
done
expect_error "missing data directory" "/nonexistent" "MNIST" -- --data /nonexistent -e 1 -u 10
# Neither --data nor $MNIST_DIR: the message lists the default places it looked (none exists
# from the scratch directory, whose ../shared is inside it); then the same run finds the data
# put at one of them.
if [ -n "${MNIST_DIR+set}" ]; then saved_mnist_dir=$MNIST_DIR; fi
unset MNIST_DIR
expect_error "no data anywhere" "looked in" "data/mnist" "../shared/datasets/mnist" "--data DIR" -- -e 1 -u 10
if [ -d "${saved_mnist_dir:-}" ]; then
  mkdir -p "$tmp/shared/datasets" && ln -s "$saved_mnist_dir" "$tmp/shared/datasets/mnist"
  if "$app" -e 1 -u 10 -o "$tmp/found" >"$tmp/out" 2>"$tmp/err" && [ -f "$tmp/found/log" ]; then
    echo "ok: found the data in ../shared/datasets/mnist without --data or \$MNIST_DIR"
  else
    fail "with the data in ../shared/datasets/mnist: $(tail -c 400 "$tmp/err")"
  fi
  rm "$tmp/shared/datasets/mnist"
fi
if [ -n "${saved_mnist_dir+set}" ]; then export MNIST_DIR=$saved_mnist_dir; fi

if [ -z "${MNIST_DIR:-}" ] || [ ! -d "${MNIST_DIR:-}" ]; then
  fail "MNIST_DIR '${MNIST_DIR:-}' is not a directory: the cases that need data need the real MNIST files"
else
  data=(--data "$MNIST_DIR" -u 10 -e 1)
  # A model too large for memory (784 x 1e8 float32 weights, 292 GiB): a message, not std::bad_alloc.
  # --gpu where no GPU can be used (no device or driver, or a build without CUDA): a clear error
  # before any data is read, within seconds. On a machine with a GPU the run trains instead.
  started=$(date +%s)
  "$app" --gpu "${data[@]}" -o "$tmp/g1" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  took=$(($(date +%s) - started))
  if grep -q "no CUDA device is available" "$tmp/err"; then
    if [ "$rc" -ne 1 ] || [ "$took" -gt 10 ] || ! grep -q "^mnist_mlp: error: cuda:0: " "$tmp/err"; then
      fail "--gpu without a GPU: exit $rc after ${took}s: $(tail -c 400 "$tmp/err")"
    else
      echo "ok: --gpu without a GPU: $(head -n 1 "$tmp/err") (${took}s)"
    fi
  elif [ "$rc" -eq 0 ] && grep -q "^# device: cuda:0" "$tmp/out"; then
    echo "ok: --gpu trained on cuda:0"
  else
    fail "--gpu: exit $rc: $(tail -c 400 "$tmp/err")"
  fi
  expect_error "--gpu with a bad id" "-g/--gpu expects an integer" "'zero'" -- --gpu=zero "${data[@]}"
  # Batches and networks the machine cannot hold are refused before any data is read (nothing on
  # stdout), naming the option, what it needs, the memory there is and the most that fits. Under
  # an address-space limit of 4 GiB and a time limit, so that a run that went ahead could neither
  # swap the machine nor grind on: the limit (ulimit -v) is what the message must then name.
  prefix=(timeout -k 5 60 bash -c 'ulimit -v 4194304 && exec "$0" "$@"')
  expect_error "a batch too large for memory" "-b/--batchsize 1000000000: a batch of 1000000000 examples" \
    "needs at least 3.1 TiB, more than the " "under this process's address-space limit (ulimit -v) of 4.0 GiB" \
    "; no more than " " examples can fit" -- "${data[@]}" -b 1000000000
  [ -s "$tmp/out" ] && fail "the batch too large for memory was refused only after: $(head -c 300 "$tmp/out")"
  expect_error "a network too large for memory" "-u/--unit 1000000000: a network of 1000000000 units per hidden layer" \
    "needs at least 13.9 EiB" "(ulimit -v)" " units can fit" -- --data "$MNIST_DIR" -u 1000000000 -e 1
  expect_error "a network of 20000 units under 4 GiB" "-u/--unit 20000: " "needs at least 6.2 GiB" \
    "(ulimit -v) of 4.0 GiB" -- --data "$MNIST_DIR" -u 20000 -e 1
  prefix=()
  # Without a limit of its own, the host's memory (MemAvailable, or a cgroup's limit) counts.
  expect_error "a network too large for the host" "-u/--unit 100000000: " "needs at least 142.1 PiB, more than the " \
    " units can fit" -- --data "$MNIST_DIR" -u 100000000 -e 1
  grep -qE "of memory available \(MemAvailable\)|under the cgroup's memory limit" "$tmp/err" ||
    fail "the host's memory is not named: $(cat "$tmp/err")"
  # A batch larger than the training set: every batch would hold examples twice.
  expect_error "a batch larger than the data" "-b/--batchsize 100000: a batch of 100000 examples is more than the 60000 training examples" \
    "at most 60000" -- "${data[@]}" -b 100000
  expect_error "a batch larger than the subset" "-b/--batchsize 101: " "more than the 100 training examples" \
    -- "${data[@]}" -b 101 --train-size 100
  # Output directories that cannot be written.
  expect_error "output directory in /proc" "/proc/forbidden" "output directory" -- "${data[@]}" -o /proc/forbidden
  echo "a regular file" >"$tmp/plain"
  expect_error "output directory under a regular file" "$tmp/plain/result" "output directory" -- "${data[@]}" \
    -o "$tmp/plain/result"
  # Snapshots that cannot be resumed.
  expect_error "missing snapshot" "/nonexistent/snapshot" "does not exist" -- "${data[@]}" -o "$tmp/r1" \
    -r /nonexistent/snapshot
  printf 'PK\003\004 this is not a snapshot \377\000\001' >"$tmp/corrupt_snapshot"
  expect_error "snapshot path is a directory" "is a directory" "snapshot_iter_" -- "${data[@]}" -o "$tmp/r5" -r "$tmp"
  expect_error "corrupt snapshot" "$tmp/corrupt_snapshot" -- "${data[@]}" -o "$tmp/r2" -r "$tmp/corrupt_snapshot"
  : >"$tmp/empty_snapshot"
  expect_error "empty snapshot" "$tmp/empty_snapshot" -- "${data[@]}" -o "$tmp/r3" -r "$tmp/empty_snapshot"
  # Per-rank snapshots of a 2-process run beside what a save cut short left (a temporary file) and
  # names that only look alike: the message counts the 2-process run alone.
  mkdir -p "$tmp/ranked"
  for f in s.rank0-of-2 s.rank1-of-2 s.rank1-of-2.tmp.6944.0 s.rank0-of-3x s.rank5-of-4 s.rank1-of-02; do
    : >"$tmp/ranked/$f"
  done
  expect_error "per-rank snapshots of another process count" "'$tmp/ranked/s' was written by a run of 2 processes:" \
    "this run has 1" -- "${data[@]}" -o "$tmp/r6" -r "$tmp/ranked/s"

  # A real (small) run, then resumes from its snapshot: with other unit counts (an error), and
  # with the same model to a second epoch.
  "$app" "${data[@]}" -o "$tmp/run" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ "$rc" -ne 0 ]; then
    fail "a one-epoch run exited with $rc: $(tail -c 400 "$tmp/err")"
  else
    for f in log cg.dot snapshot_iter_600; do
      [ -f "$tmp/run/$f" ] || fail "the run did not write $f"
    done
    grep -q "validation/main/accuracy" "$tmp/out" || fail "the run printed no report"
    echo "ok: one epoch with -u 10"
    # The plots, by default where the library has cairo: 480-pixel-high PNGs.
    if ldd "$app" | grep -q libcairo; then
      for f in loss.png accuracy.png; do
        python3 -c 'import struct, sys; d = open(sys.argv[1], "rb").read(24)
sys.exit(d[:8] != b"\x89PNG\r\n\x1a\n" or struct.unpack(">II", d[16:24])[1] != 480)' "$tmp/run/$f" ||
          fail "the run did not plot $f (480 pixels high)"
      done
      echo "ok: loss.png and accuracy.png"
    fi
    expect_error "snapshot of other unit counts" "$tmp/run/snapshot_iter_600" "shape" -- --data "$MNIST_DIR" -u 20 -e 2 \
      -o "$tmp/r4" -r "$tmp/run/snapshot_iter_600"
    # A snapshot whose saved log holds a word where a number belongs: the message names what was
    # being done and the file, not only the C++ library's word for it ("stod").
    python3 - "$tmp/run/snapshot_iter_600" "$tmp/bad_log_snapshot" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as src, zipfile.ZipFile(sys.argv[2], "w") as dst:
    for info in src.infolist():
        data = src.read(info.filename)
        if info.filename.endswith("LogReport/_log.npy"):
            data = data.replace(b'"epoch": 1,', b'"epoch": x,')
        dst.writestr(info, data)
PY
    "$app" "${data[@]}" -e 2 -o "$tmp/r7" -r "$tmp/bad_log_snapshot" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ "$rc" -ne 1 ] || ! grep -q "^mnist_mlp: error: " "$tmp/err" || ! grep -qE "bad_log_snapshot|LogReport" "$tmp/err"; then
      fail "a snapshot with a corrupt log: exit $rc, expected 1 and a message naming the file or the log: $(tail -c 400 "$tmp/err")"
    else
      echo "ok: a snapshot with a corrupt log: $(head -n 1 "$tmp/err")"
    fi
    "$app" --data "$MNIST_DIR" -u 10 -e 2 -o "$tmp/run" -r "$tmp/run/snapshot_iter_600" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ "$rc" -ne 0 ]; then
      fail "resuming to a second epoch exited with $rc: $(tail -c 400 "$tmp/err")"
    elif [ "$(grep -c '"epoch": ' "$tmp/run/log")" -ne 2 ] || [ ! -f "$tmp/run/snapshot_iter_1200" ]; then
      fail "the resumed run did not log epoch 2 and snapshot at iteration 1200"
    else
      echo "ok: resumed to a second epoch"
      # The resumed run logs exactly what an uninterrupted two-epoch run logs, times aside.
      "$app" --data "$MNIST_DIR" -u 10 -e 2 -o "$tmp/straight" --no-plot >"$tmp/out" 2>"$tmp/err"
      rc=$?
      if [ "$rc" -ne 0 ]; then
        fail "a two-epoch run exited with $rc: $(tail -c 400 "$tmp/err")"
      elif [ -e "$tmp/straight/loss.png" ]; then
        fail "--no-plot drew loss.png"
      elif ! diff <(grep -v elapsed_time "$tmp/straight/log") <(grep -v elapsed_time "$tmp/run/log") >"$tmp/diff"; then
        fail "the resumed run's log differs from the uninterrupted run's: $(head -c 1000 "$tmp/diff")"
      else
        echo "ok: the resumed log equals the uninterrupted one"
      fi
    fi
  fi
fi

finish
