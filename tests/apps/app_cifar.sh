#!/usr/bin/env bash
# train_cifar and parallel_convolution on small CIFAR-10 and CIFAR-100 archives in the real format
# (tests/apps/write_cifar.py: Python's tarfile and gzip), found in $CHAINER_DATASET_ROOT or given
# with --data: usage and bad options; train_cifar alone (the learning rate logged), resumed from
# its snapshot to a second epoch, and under mpiexec -n 2 on CIFAR-100 (a snapshot per rank,
# checkpoints resumed from);
# parallel_convolution under mpiexec -n 2 logging the losses of one process (its gradients are the
# single network's), and resumed from its per-rank snapshots. Every run must exit 0 and log the
# reported keys.
#   tests/apps/app_cifar.sh MPIEXEC TRAIN_CIFAR PARALLEL_CONVOLUTION
set -u
mpiexec=${1:?usage: app_cifar.sh MPIEXEC TRAIN_CIFAR PARALLEL_CONVOLUTION}
train_cifar=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
parallel_convolution=$(cd "$(dirname "${3:?}")" && pwd)/$(basename "$3")
source "$(dirname "$0")/../lib.sh"
scratch app_cifar
export MPIEXEC_TIMEOUT=120
export CHAINER_DATASET_ROOT=$tmp/root
cifar=$CHAINER_DATASET_ROOT/pfnet/chainer/cifar
python3 "$tests_dir/apps/write_cifar.py" "$cifar" 12 32 || fail "write_cifar.py failed"
small=(--train-size 32 --test-size 16 -b 16 --no-plot)

for app in "$train_cifar" "$parallel_convolution"; do
  name=$(basename "$app")
  "$app" -h >"$tmp/out" 2>&1 || fail "$name -h exited with $?"
  grep -q "^usage: $name" "$tmp/out" &&
    grep -q -- "--dataset NAME  cifar10 (default), cifar100, or fashion-mnist" "$tmp/out" &&
    grep -q -- "--learnrate LR" "$tmp/out" || fail "$name -h: the usage lacks its options: $(head -c 600 "$tmp/out")"
  expect_app_error "$name: an unknown data set" \
    "-d/--dataset must be cifar10, cifar100 or fashion-mnist, got 'cifar1000'" -d cifar1000
  expect_app_error "$name: a learning rate of 0" "-l/--learnrate must be greater than 0, got 0" -l 0
  expect_app_error "$name: a learning rate that is not a number" "-l/--learnrate expects a number, got '0.1x'" -l 0.1x
  expect_app_error "$name: a missing archive" "CIFAR-10 archive '/nonexistent/c.tar.gz' does not exist" \
    --data /nonexistent/c.tar.gz
done
app=$train_cifar
printf 'not an archive' >bad.tar.gz
expect_app_error "an archive that is not gzip" "CIFAR-10 archive '$PWD/bad.tar.gz' is not gzip data" \
  --data "$PWD/bad.tar.gz"
app=$parallel_convolution
expect_app_error "parallel_convolution: --checkpoint-interval" "parallel_convolution has no multi-node checkpointer" \
  --checkpoint-interval 3

# train_cifar alone on CIFAR-10 from the dataset root, then resumed to a second epoch.
if "$train_cifar" "${small[@]}" -e 1 -o r1 >"$tmp/out" 2>"$tmp/err"; then
  grep -q "validation/main/accuracy" "$tmp/out" || fail "train_cifar: no report printed"
  check_app_log "train_cifar, 1 process" r1 1 0 lr
  python3 -c "import json,sys; sys.exit(json.load(open('r1/log'))[0]['lr'] != 0.05)" ||
    fail "train_cifar: the log's lr is not the default 0.05: $(cat r1/log)"
  if [ -f r1/snapshot_iter_2 ] &&
    "$train_cifar" "${small[@]}" -e 2 -o r1 -r r1/snapshot_iter_2 >"$tmp/out" 2>"$tmp/err"; then
    check_app_log "train_cifar, resumed" r1 2 0 lr
  else
    fail "train_cifar, resumed: no r1/snapshot_iter_2 ($(ls r1)) or exited with $?: $(tail -c 400 "$tmp/err")"
  fi
else
  fail "train_cifar: exited with $?: $(tail -c 400 "$tmp/err")"
fi

# CIFAR-100 given with --data, under 2 processes: a snapshot per rank, and the multi-node
# checkpointer every iteration, from which the same command run to a second epoch resumes.
ck=("${small[@]}" -d cifar100 --data "$cifar" --checkpoint-interval 1 -o r2)
if job "train_cifar, CIFAR-100, 2 processes" 2 "$train_cifar" "${ck[@]}" -e 1; then
  grep -q "Num process (COMM_WORLD): 2" "$tmp/text" || fail "train_cifar, 2 processes: $(head -n 3 "$tmp/text")"
  check_app_log "train_cifar, CIFAR-100, 2 processes" r2 1 0
  for r in 0 1; do [ -f "r2/snapshot_iter_1.rank$r-of-2" ] || fail "no r2/snapshot_iter_1.rank$r-of-2: $(ls r2)"; done
  if job "train_cifar, CIFAR-100, 2 processes, from the checkpoints" 2 "$train_cifar" "${ck[@]}" -e 2; then
    grep -qF "resumed from the checkpoints of iteration 1 (epoch 1" "$tmp/text" ||
      fail "train_cifar: did not resume from the checkpoints of iteration 1: $(head -n 14 "$tmp/text")"
    check_app_log "train_cifar, from the checkpoints" r2 2 0
  fi
fi

# Mixed precision: train_cifar's VGG under mixed_bf16 and parallel_convolution's under float16
# (2 processes each) run their epoch.
job "train_cifar --dtype mixed_bf16, 2 processes" 2 "$train_cifar" "${small[@]}" --data "$cifar" -e 1 --dtype mixed_bf16 \
  -o rdt && check_app_log "train_cifar --dtype mixed_bf16" rdt 1 0
job "parallel_convolution --dtype float16, 2 processes" 2 "$parallel_convolution" "${small[@]}" --data "$cifar" -e 1 \
  --dtype float16 -o pdt && check_app_log "parallel_convolution --dtype float16" pdt 1 0

# parallel_convolution: 2 processes log the losses of 1 (the same model drawn, its gradients the
# single network's: without ParallelGradients the second and third steps' losses differ).
if job "parallel_convolution, 1 process" 1 "$parallel_convolution" "${small[@]}" -e 1 -f 100 -o p1 &&
  job "parallel_convolution, 2 processes" 2 "$parallel_convolution" "${small[@]}" -e 1 -o p2; then
  python3 - <<'PY' || failures=$((failures + 1))
import json, sys
a, b = json.load(open("p1/log"))[0], json.load(open("p2/log"))[0]
for key in ("main/loss", "main/accuracy", "validation/main/accuracy"):
    if abs(a[key] - b[key]) > 1e-4 * (1 + abs(a[key])):
        sys.exit(f"FAIL: parallel_convolution: {key} {b[key]} at 2 processes, {a[key]} at 1")
print(f"ok: parallel_convolution: 2 processes log the loss of 1 ({b['main/loss']:.6f}, {a['main/loss']:.6f})")
PY
  # Each rank's snapshot holds its slices; the 2 processes resume from theirs to a second epoch.
  if job "parallel_convolution, 2 processes, resumed" 2 "$parallel_convolution" "${small[@]}" -e 2 -f 100 -o p2 \
    -r p2/snapshot_iter_2; then
    check_app_log "parallel_convolution, resumed" p2 2 0
  fi
fi
finish
