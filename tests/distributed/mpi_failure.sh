#!/bin/bash
# One rank of a 1- to 4-process job fails while the others block in a collective: the job must
# end within a few seconds with a non-zero status and the failing rank's message on stderr.
# Usage: mpi_failure.sh MPIEXEC PROGRAM
#
# MPICH's hydra (mpiexec) kills every rank as soon as one exits abnormally (MPI_Abort, a signal)
# unless run with -disable-auto-cleanup; MPIEXEC_TIMEOUT is a backstop that makes hydra itself
# kill a job that runs too long, and `timeout` a second one around mpiexec. A rank that stops
# without failing (SIGSTOP) is caught by chainermn's watchdog (CHAINERMN_TIMEOUT, mpi_runtime.h).
set -u
MPIEXEC=$1
PROG=$2
LIMIT=15    # seconds a failing job may take (generous: the test machine may be loaded)
export MPIEXEC_TIMEOUT=50
fails=0
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

run() {  # run NAME EXPECT_RC(nonzero|zero) EXPECT_STDERR_TEXT COMMAND...
  local name=$1 expect=$2 text=$3
  shift 3
  local t0 t1 rc secs
  t0=$(date +%s%N)
  timeout -k 5 60 "$@" >"$out" 2>"$err"
  rc=$?
  t1=$(date +%s%N)
  local ms=$(((t1 - t0) / 1000000))
  secs=$((ms / 1000)).$(printf %03d $((ms % 1000)))
  local ok=1
  if [ "$expect" = nonzero ] && { [ $rc -eq 0 ] || [ $rc -eq 124 ] || [ $rc -eq 137 ]; }; then ok=0; fi
  if [ "$expect" = zero ] && [ $rc -ne 0 ]; then ok=0; fi
  if [ -n "$text" ] && ! grep -qF -- "$text" "$err" "$out"; then ok=0; fi
  if [ "$expect" = nonzero ] && [ $ms -gt $((LIMIT * 1000)) ]; then ok=0; fi
  if [ $ok = 1 ]; then
    echo "ok   $name: status $rc after ${secs}s"
  else
    echo "FAIL $name: status $rc after ${secs}s (expected $expect status within ${LIMIT}s, text '$text')"
    echo "--- stdout"; cat "$out"; echo "--- stderr"; cat "$err"
    fails=$((fails + 1))
  fi
}

# Under mpiexec with 1 to 4 processes: rank 1 fails (rank 0 when it is alone).
for n in 1 2 3 4; do
  bad=$((n > 1 ? 1 : 0))
  run "$n rank(s), no failure" zero "rank $((n - 1)) ok $n" "$MPIEXEC" -n $n "$PROG" ok
  run "$n rank(s), rank $bad throws in run_main" nonzero "[rank $bad/$n] rank 1 failed on purpose: bad batch" \
    "$MPIEXEC" -n $n "$PROG" throw
  run "$n rank(s), rank $bad throws std::out_of_range" nonzero "[rank $bad/$n] std::out_of_range: stoll" \
    "$MPIEXEC" -n $n "$PROG" throw_std
  run "$n rank(s), rank $bad throws on a thread" nonzero "[rank $bad/$n] uncaught exception: uncaught on a worker thread" \
    "$MPIEXEC" -n $n "$PROG" terminate
  run "$n rank(s), rank $bad is killed (SIGKILL)" nonzero "" "$MPIEXEC" -n $n "$PROG" sigkill
done
# Rank 1 freezes (SIGSTOP) while the others wait in a collective, as a peer behind a cut link looks
# to them: nothing fails, and only the watchdog can end the job, naming the call that waits and,
# from the watchdogs' board of this host, the rank that is not running (its heartbeat stopped
# when it froze) and what it last did; with 3 ranks, the other healthy rank waits in the same call.
expect_line() {  # expect_line WHAT REGEX: some line of stderr matches REGEX
  grep -qE -- "$2" "$err" || { echo "FAIL the message does not $1"; cat "$err"; fails=$((fails + 1)); }
}
for n in 2 3; do
  run "$n ranks, rank 1 stops (SIGSTOP), CHAINERMN_TIMEOUT=2" nonzero "has not completed in 2 s" \
    env CHAINERMN_TIMEOUT=2 "$MPIEXEC" -n $n "$PROG" stop
  expect_line "name the MPI call and file:line" \
    "^\[rank [02]/$n\] chainermn: (MPI_|mpi::)[A-Za-z_]+ \([^)]+:[0-9]+\) has not completed in 2 s"
  expect_line "name the stopped rank 1, its pid and what it last did" \
    "^\[rank [02]/$n\] chainermn: .* On this host \([^)]+\): rank 1 \(pid [0-9]+\) has not run for [0-9.]+ s: it is stopped or frozen .*; it was last seen outside MPI, after mpi::allreduce \([^)]+:[0-9]+\)"
  [ $n = 3 ] && expect_line "say that the other healthy rank waits in the same call" \
    "^\[rank ([02])/3\] chainermn: .*rank [02] waits in the same call"
done
# The limit is on one call, not on the job: 5 s of back-to-back all-reduces under a 2 s limit end normally.
run "2 ranks all-reduce for 5 s, CHAINERMN_TIMEOUT=2" zero "rank 1 ok after" \
  env CHAINERMN_TIMEOUT=2 "$MPIEXEC" -n 2 "$PROG" loop 5
# chainermn::functions with 2 ranks: a peer that never receives or never sends leaves a rank waiting
# in a watched call, and the watchdog ends the job naming what was waited for; a recv that finds
# another tag or shape than it expects is an error.
LIMIT=8
run "functions: send, then backward on the delegate; rank 1 never receives, CHAINERMN_TIMEOUT=2" nonzero \
  "[rank 0/2] chainermn: MPI_Mprobe for the gradient that chainermn::functions::send's backward expects from rank 1 of 2 with tag 0" \
  env CHAINERMN_TIMEOUT=2 "$MPIEXEC" -n 2 "$PROG" fn_send_unreceived
grep -qE "has not completed in 2 s" "$err" || { echo "FAIL the message does not give the limit"; cat "$err"; fails=$((fails + 1)); }
run "functions: a send of 8 MiB that rank 1 never receives, CHAINERMN_TIMEOUT=2" nonzero \
  "[rank 0/2] chainermn: MPI_Waitall for rank 1 of 2 to receive the tensor that chainermn::functions::send sends with tag 0" \
  env CHAINERMN_TIMEOUT=2 "$MPIEXEC" -n 2 "$PROG" fn_send_large_unreceived
run "functions: recv from rank 0, which never sends, CHAINERMN_TIMEOUT=2" nonzero \
  "[rank 1/2] chainermn: MPI_Mprobe for the tensor that chainermn::functions::recv expects from rank 0 of 2 with tag 0" \
  env CHAINERMN_TIMEOUT=2 "$MPIEXEC" -n 2 "$PROG" fn_recv_unsent
# Rank 0 sleeps outside MPI: the board shows it running, busy on its own, not stopped.
expect_line "say that rank 0 is running outside MPI" \
  "^\[rank 1/2\] chainermn: .* On this host \([^)]+\): rank 0 \(pid [0-9]+\) has been running outside MPI for [0-9.]+ s, since mpi::allreduce \([^)]+\) returned"
LIMIT=15
run "functions: recv with tag 2 of what was sent with tag 1" nonzero \
  "[rank 1/2] chainermn::functions::recv: rank 1 expected a tensor with tag 2 from rank 0, but the next message from rank 0 has tag 1" \
  "$MPIEXEC" -n 2 "$PROG" fn_recv_tag
run "functions: recv expecting shape (3,) of a (2, 2) tensor" nonzero \
  "[rank 1/2] chainermn::functions::recv: rank 1 expected a tensor of shape (3,) from rank 0 with tag 0, but rank 0 sent float32 (2, 2)" \
  "$MPIEXEC" -n 2 "$PROG" fn_recv_shape
run "functions: a decoder refuses the states of an encoder of another depth; the encoder waits in backward" nonzero \
  "[rank 1/2] MultiNodeNStepRNN (chainer::links::NStepLSTM of 2 layers of 4 units, 1 sequence) receiving its initial states from rank 0: chainermn::functions::recv: rank 1 expected 2 tensors from rank 0 with tag 0, member 0 of shape (2, 1, 4), but rank 0 sent float32 (3, 1, 4) as member 0 of 2" \
  "$MPIEXEC" -n 2 "$PROG" fn_rnn_states
# Without mpiexec: a 1-process job (MPICH singleton init).
run "singleton, no failure" zero "rank 0 ok 1" "$PROG" ok
run "singleton throws" nonzero "[rank 0/1] rank 1 failed on purpose: bad batch" "$PROG" throw
run "singleton, CHAINERMN_TIMEOUT=soon" nonzero "CHAINERMN_TIMEOUT must be a number of seconds >= 0" \
  env CHAINERMN_TIMEOUT=soon "$PROG" ok
exit $((fails > 0))
