#!/usr/bin/env bash
# A missing precondition is a skip, not a pass (tests/catch_session.h): test_skip's skipped case
# alone exits 77, its passing case alone 0, and both in one run fail with the skipped case named.
#   tests/skips.sh TEST_SKIP_BINARY
set -u
exe=${1:?usage: skips.sh TEST_SKIP_BINARY}
failures=0
expect() {  # WANT_STATUS WANT_TEXT ARGS...: the binary's exit status and a line of its output
  local want=$1 text=$2 out rc
  shift 2
  out=$("$exe" "$@" 2>&1)
  rc=$?
  if [[ $rc -ne $want ]] || ! grep -qF -- "$text" <<<"$out"; then
    echo "FAIL: test_skip $*: exit $rc (expected $want), output without '$text':"
    echo "$out" | tail -n 8
    failures=$((failures + 1))
  else
    echo "ok: test_skip ${*:-(every case)}: exit $rc, '$text'"
  fi
}
expect 77 "skipped: the precondition of this example never holds" "[skipped]"
expect 0 "All tests passed" "[runs]"
expect 1 "skips: a case whose precondition is missing: the precondition of this example never holds"
((failures == 0)) || exit 1
echo "all cases passed"
