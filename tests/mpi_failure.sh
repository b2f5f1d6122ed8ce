#!/bin/bash
# One rank of a 1- to 4-process job fails while the others block in a collective: the job must
# end within a few seconds with a non-zero status and the failing rank's message on stderr.
# Usage: mpi_failure.sh MPIEXEC PROGRAM
#
# MPICH's hydra (mpiexec) kills every rank as soon as one exits abnormally (MPI_Abort, a signal)
# unless run with -disable-auto-cleanup; MPIEXEC_TIMEOUT is a backstop that makes hydra itself
# kill a job that runs too long, and `timeout` a second one around mpiexec.
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
  run "$n rank(s), rank $bad throws on a thread" nonzero "[rank $bad/$n] uncaught exception: uncaught on a worker thread" \
    "$MPIEXEC" -n $n "$PROG" terminate
  run "$n rank(s), rank $bad is killed (SIGKILL)" nonzero "" "$MPIEXEC" -n $n "$PROG" sigkill
done
# Without mpiexec: a 1-process job (MPICH singleton init).
run "singleton, no failure" zero "rank 0 ok 1" "$PROG" ok
run "singleton throws" nonzero "[rank 0/1] rank 1 failed on purpose: bad batch" "$PROG" throw
exit $((fails > 0))
