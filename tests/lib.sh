# What the shell tests share (sourced by app_errors.sh, app_mpi.sh, app_cnn.sh,
# app_model_parallel.sh): a scratch directory whose surroundings the test controls, failures
# counted, apps' logs checked, mpiexec jobs that must print from rank 0 only, and the closing line.

failures=0
tests_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)  # before any test changes directory

# find_fashion_mnist: sets $fashion_mnist to where get_fashion_mnist() finds the data set without
# a directory (Debian's package, else Chainer's dataset root), or exits 77 (skipped) saying how
# to get it.
find_fashion_mnist() {
  local root_dir=${CHAINER_DATASET_ROOT:-$HOME/.chainer/dataset}/pfnet/chainer/fashion-mnist
  fashion_mnist=$(dpkg -L dataset-fashion-mnist 2>/dev/null | sed -n 's|/train-images-idx3-ubyte.gz$||p' | head -n 1)
  if [ -z "$fashion_mnist" ] && [ -f "$root_dir/train-images-idx3-ubyte.gz" ]; then fashion_mnist=$root_dir; fi
  if [ -z "$fashion_mnist" ]; then
    echo "skipped: no Fashion-MNIST here (apt-get install dataset-fashion-mnist, or run fashion_mnist_cnn once with network to download it to $root_dir)"
    exit 77
  fi
}

# expect_app_error NAME PATTERN ARGS...: $app ARGS exits 1 with its error line ("APP: error: ")
# and PATTERN in stderr; stdout and stderr left in $tmp/out and $tmp/err.
expect_app_error() {
  local name=$1 pattern=$2
  shift 2
  "$app" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -ne 1 ] || ! grep -q "^$(basename "$app"): error: " "$tmp/err" || ! grep -qF -- "$pattern" "$tmp/err"; then
    fail "$name: exit $rc, expected 1 and '$pattern': $(tail -c 300 "$tmp/err")"
  else
    echo "ok: $name: $(head -n 1 "$tmp/err")"
  fi
}

# check_app_log NAME DIR EPOCHS MIN_ACCURACY [KEY...]: an app's log (tests/apps/check_app_log.py);
# a failure counts as one.
check_app_log() {
  python3 "$tests_dir/apps/check_app_log.py" "$@" || failures=$((failures + 1))
}
# fail MESSAGE...: one failed case (the script goes on to the next).
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# scratch NAME: a temporary directory $tmp, removed at exit, and the working directory
# $tmp/work inside it. The programs' default places relative to the working directory
# (./data/mnist, ../shared/datasets/mnist) then lie inside $tmp too, and hold nothing unless the
# test puts it there, whatever happens to lie beside the system's temporary folder.
scratch() {
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/chainer_$1.XXXXXX") || { echo "FAIL: mktemp"; exit 1; }
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/work" && cd "$tmp/work" || exit 1
}

# absolute PATH: PATH made absolute (the tests change directory, and hydra's proxies look bare
# names up in PATH).
absolute() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }

# job NAME N COMMAND...: runs COMMAND under mpiexec -n N ($mpiexec) with every line tagged with
# its rank; exit 0 and output from rank 0 only are required (unless ALL_RANKS_PRINT=1). Rank 0's
# text, without the tags, is left in $tmp/text; stdout and stderr in $tmp/out and $tmp/err.
job() {
  local name=$1 n=$2
  shift 2
  timeout -k 5 300 "$mpiexec" -prepend-rank -n "$n" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -ne 0 ]; then
    fail "$name: exited with $rc"
    tail -n 20 "$tmp/out" "$tmp/err"
    return 1
  fi
  if [ "${ALL_RANKS_PRINT:-0}" != 1 ] && grep -q '^\[[1-9][0-9]*\]' "$tmp/out" "$tmp/err"; then
    fail "$name: ranks other than 0 printed: $(grep -h '^\[[1-9][0-9]*\]' "$tmp/out" "$tmp/err" | head -n 3)"
    return 1
  fi
  # mpiexec also inserts its "[0] " tags mid-line where one line reached it in several pieces.
  sed 's/\[[0-9][0-9]*\] //g' "$tmp/out" >"$tmp/text"
  echo "ok: $name"
}

# refused NAME N PATTERN COMMAND...: COMMAND under mpiexec -n N must fail (not time out) within a
# minute, with PATTERN (a fixed string) in its stderr.
refused() {
  local name=$1 n=$2 pattern=$3
  shift 3
  timeout -k 5 60 "$mpiexec" -n "$n" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ "$rc" -eq 0 ] || [ "$rc" -ge 124 ]; then
    fail "$name: exited with $rc, expected an error"
  elif ! grep -qF -- "$pattern" "$tmp/err"; then
    fail "$name: stderr does not say '$pattern': $(tail -c 300 "$tmp/err")"
  else
    echo "ok: $name: $(grep -F -- "$pattern" "$tmp/err" | head -n 1)"
  fi
}

# finish: the closing line, and the exit status.
finish() {
  if [ "$failures" -ne 0 ]; then
    echo "$failures case(s) failed"
    exit 1
  fi
  echo "all cases passed"
  exit 0
}
