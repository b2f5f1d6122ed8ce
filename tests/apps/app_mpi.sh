#!/usr/bin/env bash
# The tutorial programs as users launch them, under mpiexec: mnist_mlp with 2 and 3 processes
# (naive/bucketed and flat/communicator), a resume of a 2-process run (with 2 processes, and
# from its checkpoints with 1), and the tutorial's
# programs (docs/tutorial/tutorial.cpp: step 1, step 1 with gradient accumulation, and step 2
# with its rank-0 snapshot and a resume of every rank from it). Each job must exit 0 and print from rank 0 only (mpiexec
# -prepend-rank tags every line with its rank; step 1 excepted, where every worker reports), and
# mnist_mlp must write its log (test accuracy >= 0.9 after one epoch of a 100-unit model) and
# one snapshot per rank. Needs the real MNIST in $MNIST_DIR.
#   tests/apps/app_mpi.sh MPIEXEC MNIST_MLP TUTORIAL
set -u
mpiexec=${1:?usage: app_mpi.sh MPIEXEC MNIST_MLP TUTORIAL}
app=${2:?}
tutorial=${3:?}
source "$(dirname "$0")/../lib.sh"
app=$(absolute "$app")
tutorial=$(absolute "$tutorial")
[ -d "${MNIST_DIR:-}" ] || { echo "FAIL: MNIST_DIR '${MNIST_DIR:-}' is not a directory (the real MNIST is needed)"; exit 1; }
scratch app_mpi
export MPIEXEC_TIMEOUT=240

# check_log NAME DIR EPOCHS: DIR/log has EPOCHS entries, the last with validation accuracy >= 0.9.
check_log() { check_app_log "$1" "$2" "$3" 0.9; }

# header_once NAME TEXT: TEXT appears on exactly one line of rank 0's stdout (the last job's).
header_once() {
  local count
  count=$(grep -c -F -- "$2" "$tmp/text")
  [ "$count" -eq 1 ] || fail "$1: '$2' printed $count times, expected once"
}

common=(--data "$MNIST_DIR" -u 100)
if job "mnist_mlp, 2 processes" 2 "$app" "${common[@]}" -e 1 -o r2; then
  header_once "mnist_mlp, 2 processes" "# Num process (COMM_WORLD): "
  header_once "mnist_mlp, 2 processes" "validation/main/accuracy"
  check_log "mnist_mlp, 2 processes" r2 1
  for r in 0 1; do [ -f "r2/snapshot_iter_300.rank$r-of-2" ] || fail "no snapshot r2/snapshot_iter_300.rank$r-of-2"; done
  # Resume both ranks from their snapshots and train a second epoch.
  if job "mnist_mlp, 2 processes, resumed" 2 "$app" "${common[@]}" -e 2 -o r2 -r r2/snapshot_iter_300; then
    check_log "mnist_mlp, 2 processes, resumed" r2 2
    [ -f r2/snapshot_iter_600.rank1-of-2 ] || fail "the resumed run wrote no snapshot_iter_600.rank1-of-2"
    # Resumes that cannot work say why at once: another process count than the snapshots',
    # and rank files of different iterations (which would train out of step until a collective
    # was never met).
    refused "mnist_mlp, 3 processes resumed from 2 processes' snapshots" 3 \
      "was written by a run of 2 processes: resume with that many (mpiexec -n N), this run has 3" \
      "$app" "${common[@]}" -e 2 -o r3resume -r r2/snapshot_iter_300
    mkdir -p mixed && cp r2/snapshot_iter_300.rank0-of-2 mixed/ &&
      cp r2/snapshot_iter_600.rank1-of-2 mixed/snapshot_iter_300.rank1-of-2
    refused "mnist_mlp, 2 processes resumed from rank files of different iterations" 2 \
      "rank 0 iteration 300 (epoch 1), rank 1 iteration 600 (epoch 2)" \
      "$app" "${common[@]}" -e 3 -o mixed -r mixed/snapshot_iter_300
    # Debug mode: rank files of one iteration but of two runs (other seeds) hold other weights.
    if job "mnist_mlp, 2 processes, seed 1" 2 "$app" "${common[@]}" --seed 1 -e 1 -o seed1; then
      mkdir -p other && cp r2/snapshot_iter_300.rank0-of-2 other/ &&
        cp seed1/snapshot_iter_300.rank1-of-2 other/snapshot_iter_300.rank1-of-2
      CHAINERMN_DEBUG=1 refused "mnist_mlp, debug mode, ranks resumed from different runs' files" 2 \
        "resume: 'other/snapshot_iter_300' (optimizer 'main')" \
        "$app" "${common[@]}" -e 2 -o other -r other/snapshot_iter_300
    fi
  fi
fi
# The multi-node checkpointer (--checkpoint-interval): a rerun of the same command resumes from
# the newest checkpoint both ranks hold and the log goes on; so does a rerun with 1 process.
ck=(--data "$MNIST_DIR" -u 100 --train-size 6000 --test-size 1000 --checkpoint-interval 10)
if job "mnist_mlp, 2 processes, checkpoints every 10 iterations" 2 "$app" "${ck[@]}" -e 1 -o ck; then
  for r in 0 1; do for i in 10 20 30; do [ -f "ck/mnist_mlp.$r.$i" ] || fail "no checkpoint ck/mnist_mlp.$r.$i"; done; done
  if job "mnist_mlp, 2 processes, rerun to 2 epochs" 2 "$app" "${ck[@]}" -e 2 -o ck; then
    grep -qF "# resumed from the checkpoints of iteration 30 (epoch 1)" "$tmp/text" ||
      fail "the rerun did not resume from iteration 30: $(head -n 12 "$tmp/text")"
    check_app_log "mnist_mlp, 2 processes, rerun to 2 epochs" ck 2 0.5
    [ -f ck/mnist_mlp.1.60 ] || fail "the rerun wrote no checkpoint ck/mnist_mlp.1.60"
  fi
  # 1 process resumes the 2 processes' checkpoints of iteration 50, two thirds into epoch 2: it
  # runs the 2000 examples they had left (20 iterations of its batch of 100), then a whole
  # epoch 3 over all 6000 (60 iterations); the log goes on from the 2 processes' epoch 1.
  mkdir -p ck1 && cp ck/mnist_mlp.0.50 ck/mnist_mlp.1.50 ck1/
  if job "mnist_mlp, 1 process resumed from 2 processes' checkpoints" 1 "$app" "${ck[@]}" -e 3 -o ck1; then
    grep -qF "MultiNodeCheckpointer: resumed from 2 processes at iteration 50 (epoch 1); the global batch was 2*100 = 200, now 1*100 = 100" "$tmp/text" ||
      fail "1 process did not say how it resumed: $(head -n 14 "$tmp/text")"
    check_app_log "mnist_mlp, 1 process resumed from 2 processes' checkpoints" ck1 3 0.5
    its=$(python3 -c 'import json, sys; print(*[e["iteration"] for e in json.load(open(sys.argv[1]))])' ck1/log)
    [ "$its" = "30 70 130" ] || fail "1 process: the log's epochs end at iterations '$its', expected '30 70 130'"
  fi
fi
if job "mnist_mlp, 3 processes, flat communicator reduction" 3 "$app" "${common[@]}" -e 1 -o r3 \
  --communicator flat --reduction communicator; then
  grep -q "Using flat communicator, communicator reduction" "$tmp/text" || fail "3 processes: the header does not say flat/communicator"
  check_log "mnist_mlp, 3 processes" r3 1
fi
# Mixed precision: mixed16 on 2 processes (dynamic loss scaling, agreed over the ranks) and
# bfloat16 (half parameters stepped through float32 masters) learn as float32 does.
job "mnist_mlp --dtype mixed16, 2 processes" 2 "$app" "${common[@]}" -e 1 --dtype mixed16 --no-plot -o mixed16 &&
  check_log "mnist_mlp --dtype mixed16, 2 processes" mixed16 1
job "mnist_mlp --dtype bfloat16, 1 process" 1 "$app" "${common[@]}" -e 1 --dtype bfloat16 --no-plot -o bf16 &&
  check_log "mnist_mlp --dtype bfloat16, 1 process" bf16 1
# A watchdog limit shorter than rank 0's reading of MNIST ends the job; the message names that
# cause (a peer busy on its own), not only an unreachable peer.
refused "mnist_mlp, 2 processes, CHAINERMN_TIMEOUT=0.05 while rank 0 reads the data" 2 \
  "Either the peer is still busy on its own (reading or scattering a dataset" \
  env CHAINERMN_TIMEOUT=0.05 "$app" "${common[@]}" -e 1 -o short_timeout
# The tutorial's programs. In step 1, as in ChainerMN's tutorial, every worker still reports (a
# fraction of an epoch); step 2 moves the reports to rank 0, which alone writes a snapshot after
# the epoch, and every rank resumes from that one file.
ALL_RANKS_PRINT=1 job "tutorial step 1, 2 processes" 2 "$tutorial" step1 "$MNIST_DIR" 0.05
job "tutorial accumulate (micro-batches), 2 processes" 2 "$tutorial" accumulate "$MNIST_DIR" 0.05
if job "tutorial step 2, 2 processes" 2 "$tutorial" step2 "$MNIST_DIR" 1; then
  [ -f result_step2/snapshot_iter_300 ] && ! ls result_step2 | grep -q rank ||
    fail "tutorial step 2: expected one snapshot, result_step2/snapshot_iter_300, from rank 0: $(ls result_step2)"
  if job "tutorial step 2, both ranks resumed from rank 0's snapshot" 2 "$tutorial" step2 "$MNIST_DIR" 1.1 \
    result_step2/snapshot_iter_300; then
    grep -q "^1 *[0-9]" "$tmp/text" && fail "tutorial step 2 resumed: it trained epoch 1 again"
    check_log "tutorial step 2, resumed" result_step2 1
  fi
fi

finish
