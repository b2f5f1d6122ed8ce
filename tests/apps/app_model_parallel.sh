#!/usr/bin/env bash
# The model-parallel guide's programs as users launch them, under mpiexec: --help; the process
# counts each refuses (mnist_model_parallel: exactly 2; mnist_dual_parallel: even), with a clear
# message and a non-zero exit; a small model for each (mnist_model_parallel: 2 epochs on 2
# processes with a snapshot every epoch (-f 1: a killed run leaves something to resume) and a
# resume from the first; with the multi-node checkpointer, a rerun that resumes; one epoch of mnist_dual_parallel on 4 and mnist_ensemble on 2), which
# must exit 0, print from rank 0 only and reach test accuracy >= 0.9; and the guide's
# program docs/model_parallel/steps on 2 and 4 processes. Needs the real MNIST in $MNIST_DIR.
#   tests/apps/app_model_parallel.sh MPIEXEC MODEL_PARALLEL DUAL_PARALLEL ENSEMBLE STEPS
set -u
mpiexec=${1:?usage: app_model_parallel.sh MPIEXEC MODEL_PARALLEL DUAL_PARALLEL ENSEMBLE STEPS}
source "$(dirname "$0")/../lib.sh"
model_parallel=$(absolute "${2:?}")
dual_parallel=$(absolute "${3:?}")
ensemble=$(absolute "${4:?}")
steps=$(absolute "${5:?}")
[ -d "${MNIST_DIR:-}" ] || { echo "FAIL: MNIST_DIR '${MNIST_DIR:-}' is not a directory (the real MNIST is needed)"; exit 1; }
scratch app_model_parallel
export MPIEXEC_TIMEOUT=240

# accuracy DIR: the last validation/main/accuracy of DIR/log must be >= 0.9.
accuracy() {
  local acc
  acc=$(grep '"validation/main/accuracy"' "$1/log" 2>/dev/null | tail -n 1 | sed 's/.*: *\([0-9.e-]*\).*/\1/')
  if [ -z "$acc" ] || ! awk -v a="$acc" 'BEGIN { exit !(a >= 0.9) }'; then
    fail "$1: test accuracy '${acc}' is not >= 0.9"
  else
    echo "ok: $1: test accuracy $acc"
  fi
}

for app in "$model_parallel" "$dual_parallel" "$ensemble"; do
  name=$(basename "$app")
  if "$app" --help >"$tmp/out" 2>&1 && grep -q "^usage: .*$name" "$tmp/out" && grep -q -- "--batchsize" "$tmp/out" &&
    grep -q -- "-f, --frequency N" "$tmp/out"; then
    echo "ok: $name --help"
  else
    fail "$name --help: $(head -c 300 "$tmp/out")"
  fi
done

refused "mnist_model_parallel on 1 process" 1 "exactly 2 processes" "$model_parallel" -e 1 -u 10
refused "mnist_model_parallel on 3 processes" 3 "exactly 2 processes (mpiexec -n 2), got 3" "$model_parallel" -e 1 -u 10
refused "mnist_dual_parallel on 3 processes" 3 "an even number of processes" "$dual_parallel" -e 1 -u 10
refused "mnist_ensemble with a bad option" 2 "unknown option '--bogus'" "$ensemble" --bogus

job "mnist_model_parallel, 2 processes, a snapshot every epoch" 2 "$model_parallel" -e 2 -f 1 -u 100 -o mp &&
  accuracy mp
for it in 600 1200; do
  [ -f mp/snapshot_iter_$it.rank0-of-2 ] && [ -f mp/snapshot_iter_$it.rank1-of-2 ] ||
    fail "mnist_model_parallel -f 1: no snapshot per rank at iteration $it in mp/"
done
job "mnist_model_parallel, resumed from the first epoch's snapshot" 2 "$model_parallel" -e 2 -u 100 -o mp2 \
  -r mp/snapshot_iter_600 && accuracy mp2
grep -q '"iteration": 1200' mp2/log 2>/dev/null || fail "the resumed run did not go on to iteration 1200"
# The multi-node checkpointer on the model-parallel pipeline (each rank saves its own stage): a
# rerun of the same command resumes from the newest iteration both ranks saved.
ck=(-u 100 --train-size 6000 --test-size 1000 --checkpoint-interval 20 -o mpck)
if job "mnist_model_parallel, checkpoints every 20 iterations" 2 "$model_parallel" "${ck[@]}" -e 1; then
  job "mnist_model_parallel, rerun to 2 epochs" 2 "$model_parallel" "${ck[@]}" -e 2 &&
    { grep -qF "# resumed from the checkpoints of iteration 60 (epoch 1)" "$tmp/text" ||
        fail "the model-parallel rerun did not resume from iteration 60: $(head -c 400 "$tmp/text")"; }
  grep -q '"iteration": 120' mpck/log 2>/dev/null || fail "the model-parallel rerun did not go on to iteration 120"
fi
job "mnist_dual_parallel, 4 processes" 4 "$dual_parallel" -e 1 -u 100 -o dual && accuracy dual
job "mnist_ensemble, 2 processes" 2 "$ensemble" -e 1 -u 100 -o ensemble && accuracy ensemble
# Mixed precision across the stages (half activations sent between the ranks).
job "mnist_model_parallel --dtype mixed_bf16" 2 "$model_parallel" -e 1 -u 100 --dtype mixed_bf16 -o mp_bf16 &&
  accuracy mp_bf16
job "mnist_dual_parallel --dtype float16, 4 processes" 4 "$dual_parallel" -e 1 -u 100 --dtype float16 -o dual16 &&
  accuracy dual16
for n in 2 4; do
  job "docs/model_parallel/steps, $n processes" "$n" "$steps" && grep -q "loss of the first stages" "$tmp/out" ||
    fail "steps on $n processes printed no loss"
done

finish
