#!/usr/bin/env bash
# The distributed layer across hosts, on hosts simulated by scripts/simcluster (network and UTS
# namespaces; MPICH's launcher enters them instead of using ssh). Placements: 2 hosts x 2 ranks
# (block), 3 hosts with 2, 1 and 3 ranks (block), and 3 hosts x 2 ranks round robin. Under each,
# the communicator and multi-node test binaries run whole (topology against the host names, every
# collective against closed forms, every reduction against one process; shared memory only when
# all ranks share a host), mnist_mlp on 2 hosts x 2 ranks must match 4 ranks on one host, and a
# rank on the second host that throws or is killed ends the whole job within 10 s.
# Exits 77 (skipped) with the reason where namespaces cannot be made.
#   tests/simhosts.sh SIMCLUSTER MPIEXEC MNIST_MLP MPI_FAILURE TEST_BINARY...
set -u
simcluster=${1:?usage: simhosts.sh SIMCLUSTER MPIEXEC MNIST_MLP MPI_FAILURE TEST_BINARY...}
mpiexec=${2:?}
mnist_mlp=$(readlink -f "${3:?}")
mpi_failure=$(readlink -f "${4:?}")
shift 4
tests=()
for t in "$@"; do tests+=("$(readlink -f "$t")"); done  # hydra's proxies look bare names up in PATH
tmp=$(mktemp -d "${TMPDIR:-/tmp}/chainer_simhosts.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failures=0

# on HOSTS SPEC NP COMMAND...: runs mpiexec -n NP COMMAND on HOSTS simulated hosts. SPEC lists
# host indices with rank counts ("0:2,1:1") for block placement, or plain indices for round robin.
on() {
  local hosts=$1 spec=$2 np=$3
  shift 3
  CHAINERMN_EXPECT_HOSTS=$hosts SPEC=$spec NP=$np MPIEXEC=$mpiexec "$simcluster" --hosts "$hosts" -- bash -c '
    IFS=, read -ra address <<<"$SIMCLUSTER_HOSTS"
    IFS=, read -ra parts <<<"$SPEC"
    list=() ppn=()
    for p in "${parts[@]}"; do
      list+=("${address[${p%%:*}]}${p#"${p%%:*}"}")
      [[ $p == *:* ]] || ppn=(-ppn 1)
    done
    hostspec=$(IFS=,; echo "${list[*]}")
    # shellcheck disable=SC2086
    exec "$MPIEXEC" $SIMCLUSTER_LAUNCH -hosts "$hostspec" "${ppn[@]}" -n "$NP" "$@"' simhosts "$@"
}

scenario() {  # NAME HOSTS SPEC NP
  local name=$1 hosts=$2 spec=$3 np=$4 exe rc
  for exe in "${tests[@]}"; do
    on "$hosts" "$spec" "$np" "$exe" >"$tmp/out" 2>&1
    rc=$?
    if [[ $rc -eq 77 ]]; then
      echo "skipped: $(grep -m1 'simcluster: skipped' "$tmp/out")"
      exit 77
    elif [[ $rc -ne 0 ]]; then
      echo "FAIL: $name: $(basename "$exe") exited with $rc:"
      tail -n 40 "$tmp/out"
      failures=$((failures + 1))
    else
      echo "ok: $name: $(basename "$exe"): $(grep -m1 'All tests passed' "$tmp/out")"
    fi
  done
}

scenario "2 hosts x 2 ranks" 2 0:2,1:2 4
scenario "3 hosts with 2, 1 and 3 ranks" 3 0:2,1:1,2:3 6
scenario "3 hosts x 2 ranks round robin" 3 0,1,2 6

# The tutorial across hosts: the same training as 4 processes on one host (the averages are
# summed in another order, so the figures agree to rounding, not bit for bit).
common=(--data "$MNIST_DIR" -u 50 -e 1 -b 100)
"$mpiexec" -n 4 "$mnist_mlp" "${common[@]}" -o "$tmp/one_host" >"$tmp/one.out" 2>&1 || {
  echo "FAIL: mnist_mlp on one host: $(tail -c 600 "$tmp/one.out")"
  failures=$((failures + 1))
}
on 2 0:2,1:2 4 "$mnist_mlp" "${common[@]}" -o "$tmp/two_hosts" >"$tmp/two.out" 2>&1 || {
  echo "FAIL: mnist_mlp on 2 simulated hosts: $(tail -c 600 "$tmp/two.out")"
  failures=$((failures + 1))
}
if [[ -f $tmp/one_host/log && -f $tmp/two_hosts/log ]]; then
  python3 - "$tmp/one_host/log" "$tmp/two_hosts/log" <<'PY' || failures=$((failures + 1))
import json, sys
one, two = (json.load(open(p))[-1] for p in sys.argv[1:3])
for key in ("main/loss", "main/accuracy", "validation/main/loss", "validation/main/accuracy"):
    a, b = one[key], two[key]
    if abs(a - b) > 1e-4 * max(1.0, abs(a)):
        sys.exit(f"FAIL: mnist_mlp: {key} is {a} on one host but {b} on 2 simulated hosts")
print(f"ok: mnist_mlp on 2 simulated hosts x 2 ranks matches 4 ranks on one host "
      f"(validation accuracy {one['validation/main/accuracy']:.4f} and {two['validation/main/accuracy']:.4f})")
PY
fi

# A rank on the second host fails while the others wait in a collective (round robin: rank 1 is
# on simhost1): the job ends, non-zero, within 10 s.
for mode in throw sigkill; do
  started=$SECONDS
  MPIEXEC_TIMEOUT=60 on 2 0,1 4 "$mpi_failure" "$mode" >"$tmp/fail.out" 2>&1
  rc=$? took=$((SECONDS - started))
  if [[ $rc -eq 0 || $took -gt 10 ]]; then
    echo "FAIL: rank 1 on simhost1 ($mode): exit $rc after ${took}s: $(tail -c 400 "$tmp/fail.out")"
    failures=$((failures + 1))
  else
    echo "ok: rank 1 on simhost1 ($mode): the job ended with $rc after ${took}s"
  fi
done

[[ $failures -eq 0 ]] || { echo "$failures failure(s)"; exit 1; }
