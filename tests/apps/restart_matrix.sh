#!/usr/bin/env bash
# The multi-node checkpointer's restarts with the real mnist_mlp under mpiexec, each ending in a
# correct resume or a clear message, never a hang: the same count, 1 -> 2 processes (rank 0 holds
# the old job's checkpoints, rank 1 none, and garbage collection starts on rank 0 only), 2 -> 1
# (the old rank 1's checkpoints are collected), files that differ between the ranks (a job killed
# between two ranks' deletions in a collection, a rank's newest file lost), and a job killed in
# its first save (what it leaves is removed, and the job starts afresh), also by a real kill -9.
# CHAINERMN_TIMEOUT ends a rank left alone in a collective, MPIEXEC_TIMEOUT and timeout the job.
# Needs the real MNIST in $MNIST_DIR.
#   tests/apps/restart_matrix.sh MPIEXEC MNIST_MLP
set -u
mpiexec=${1:?usage: restart_matrix.sh MPIEXEC MNIST_MLP}
app=${2:?}
source "$(dirname "$0")/../lib.sh"
app=$(absolute "$app")
[ -d "${MNIST_DIR:-}" ] || { echo "FAIL: MNIST_DIR '${MNIST_DIR:-}' is not a directory (the real MNIST is needed)"; exit 1; }
scratch restart_matrix
export CHAINERMN_TIMEOUT=20 MPIEXEC_TIMEOUT=60

# 2000 examples in batches of 100: an epoch is 20 iterations with 1 process, 10 with 2; a
# checkpoint every 2 iterations, and the defaults cp_interval 5, gc_interval 5: a collection when
# a rank holds more than 10 checkpoints, keeping the newest 5 that every rank holds.
m=(--data "$MNIST_DIR" -u 50 --train-size 2000 --test-size 500 --checkpoint-interval 2 --no-plot)

# holds DIR: the checkpoints in DIR, "RANK.ITERATION" sorted, on one line.
holds() { ls "$1" | sed -n 's/^mnist_mlp\.\([0-9]*\.[0-9]*\)$/\1/p' | sort -t. -k1,1n -k2,2n | tr '\n' ' ' | sed 's/ $//'; }
# expect_holds NAME DIR EXPECTED: DIR holds exactly the checkpoints EXPECTED (as holds prints them).
expect_holds() {
  local got
  got=$(holds "$2")
  [ "$got" = "$3" ] || fail "$1: the checkpoints are '$got', expected '$3'"
}
# said NAME TEXT: rank 0's last job printed TEXT.
said() { grep -qF -- "$2" "$tmp/text" || fail "$1: did not print '$2': $(grep -v '^ *[0-9]' "$tmp/text" | head -n 12)"; }
# sets RANKS FROM TO: "R.I" for every rank of 0..RANKS-1 and I = FROM, FROM+2, ..., TO.
sets() { local r i out=""; for r in $(seq 0 $(($1 - 1))); do for i in $(seq "$2" 2 "$3"); do out+="$r.$i "; done; done; echo "${out% }"; }

# The same count: a rerun of the same command resumes from the newest checkpoint.
if job "same count: 2 processes, 1 epoch" 2 "$app" "${m[@]}" -e 1 -o same &&
  job "same count: 2 processes, rerun to 2 epochs" 2 "$app" "${m[@]}" -e 2 -o same; then
  said "same count, rerun" "# resumed from the checkpoints of iteration 10 (epoch 1) in same"
  check_app_log "same count, rerun" same 2 0.5
  expect_holds "same count, rerun" same "$(sets 2 2 20)"
fi

# 1 -> 2: rank 0 holds the 10 checkpoints of 1 process, rank 1 none. At the save of 22 rank 0
# holds 11; the ranks collect together, keeping 22, the only iteration both hold.
if job "1 -> 2: 1 process, 1 epoch" 1 "$app" "${m[@]}" -e 1 -o up &&
  job "1 -> 2: 2 processes resume 1 process's checkpoints" 2 "$app" "${m[@]}" -e 2 -o up; then
  said "1 -> 2" "MultiNodeCheckpointer: resumed from 1 processes at iteration 20 (epoch 1)"
  check_app_log "1 -> 2" up 2 0.5
  expect_holds "1 -> 2" up "$(sets 2 22 30)"
  job "1 -> 2: rerun" 2 "$app" "${m[@]}" -e 2 -o up && said "1 -> 2, rerun" "# resumed from the checkpoints of iteration 30 (epoch 2) in up"
fi

# 2 -> 1: the new rank 0 collects old rank 1's checkpoints with their iterations, from its first
# save on; by the save of 40 none is left.
if job "2 -> 1: 1 process resumes 2 processes' checkpoints" 1 "$app" "${m[@]}" -e 3 -o up; then
  said "2 -> 1" "MultiNodeCheckpointer: resumed from 2 processes at iteration 30 (epoch 2)"
  check_app_log "2 -> 1" up 3 0.5
  expect_holds "2 -> 1" up "$(sets 1 32 50)"
  # And back to 2: rank 0's 10 checkpoints of 1 process go at the first save.
  job "2 -> 1 -> 2: rerun with 2 processes" 2 "$app" "${m[@]}" -e 4 -o up &&
    said "2 -> 1 -> 2" "MultiNodeCheckpointer: resumed from 1 processes at iteration 50 (epoch 3)" &&
    expect_holds "2 -> 1 -> 2" up "$(sets 2 52 60)"
fi

# Files that differ between the ranks. A job killed in a collection between two ranks' deletions
# leaves rank 1 holding 6 old checkpoints rank 0 has removed (copies stand for them): at the next
# save rank 1 holds 12, rank 0 6, and the ranks collect together.
for i in 2 4 6 8 10 12; do cp up/mnist_mlp.1.52 "up/mnist_mlp.1.$i"; done
if job "asymmetric: rank 1 holds 6 checkpoints more" 2 "$app" "${m[@]}" -e 5 -o up; then
  said "asymmetric" "# resumed from the checkpoints of iteration 60 (epoch 4) in up"
  expect_holds "asymmetric" up "$(sets 2 54 70)"
fi
# A rank's newest checkpoint is lost: the job resumes from the iteration before it.
rm -f up/mnist_mlp.1.70
job "asymmetric: rank 1's newest checkpoint lost" 2 "$app" "${m[@]}" -e 5 -o up &&
  said "rank 1's newest lost" "# resumed from the checkpoints of iteration 68 (epoch 4) in up" &&
  expect_holds "rank 1's newest lost" up "$(sets 2 54 70)"

# A job killed in its first save: rank 0 had renamed its checkpoint of iteration 10, rank 1 had
# only its temporary file. The rerun removes rank 0's, says so, and starts afresh; so does a
# rerun with another process count.
if job "killed in the first save: 2 processes, 1 epoch" 2 "$app" "${m[@]}" -e 1 --checkpoint-interval 10 -o first; then
  cp first/mnist_mlp.0.10 "$tmp/first0"
  for count in 2 1; do
    rm -f first/mnist_mlp.* && cp "$tmp/first0" first/mnist_mlp.0.10 && : >first/mnist_mlp.1.10.tmp.4242.0
    if job "killed in the first save: rerun with $count" "$count" "$app" "${m[@]}" -e 1 --checkpoint-interval 10 -o first; then
      said "killed in the first save, rerun with $count" "MultiNodeCheckpointer: no complete set of checkpoints of run 'mnist_mlp' in 'first', only what the first save of a job killed part of the way left: 'first/mnist_mlp.0.10' (iteration 10, rank 0 of a job of 2 processes); removed it, starting afresh"
      grep -qF "# resumed" "$tmp/text" && fail "killed in the first save, rerun with $count: it resumed"
      [ -e first/mnist_mlp.1.10.tmp.4242.0 ] && fail "killed in the first save, rerun with $count: the temporary file is left"
      expected="0.10 1.10"
      [ "$count" = 1 ] && expected="0.10 0.20"
      expect_holds "killed in the first save, rerun with $count" first "$expected"
    fi
  done
fi

# The same by a real kill -9 of rank 1 (its pid from the job's "# processes:" line) as soon as
# rank 0 has renamed its first checkpoint, with a model whose checkpoints take a while to write.
# Whatever the kill left (rank 0's file alone, or both files when rank 1 was as quick), the rerun
# must end normally: afresh, saying what it removed, or resumed.
big=(--data "$MNIST_DIR" -u 1500 --train-size 400 --test-size 100 --checkpoint-interval 1 --no-plot -e 1)
timeout -k 5 60 "$mpiexec" -n 2 "$app" "${big[@]}" -o killed >"$tmp/out" 2>"$tmp/err" &
launcher=$!
victim=""
for _ in $(seq 6000); do
  [ -z "$victim" ] && victim=$(sed -n 's/^# processes: .*rank 1 pid \([0-9]*\) on .*/\1/p' "$tmp/out")
  [ -n "$victim" ] && [ -e killed/mnist_mlp.0.1 ] && break
  kill -0 "$launcher" 2>/dev/null || break
  sleep 0.002
done
if [ -n "$victim" ] && [ -e killed/mnist_mlp.0.1 ]; then
  kill -9 "$victim" 2>/dev/null
  wait "$launcher"
  left=$(holds killed)
  if job "killed -9 in the first save (checkpoints left: ${left:-none}): rerun" 2 "$app" "${big[@]}" -o killed; then
    grep -qE "MultiNodeCheckpointer: no complete set|# resumed from the checkpoints" "$tmp/text" ||
      fail "killed -9 in the first save: the rerun neither removed '$left' nor resumed"
    ls killed | grep -q '\.tmp\.' && fail "killed -9 in the first save: a temporary file is left: $(ls killed)"
  fi
else
  wait "$launcher"
  fail "killed -9 in the first save: no pid of rank 1 or no first checkpoint of rank 0: $(head -c 300 "$tmp/out")"
fi

finish
