#!/usr/bin/env bash
# Gradient averaging within one host and across hosts, in one run, for docs/performance.md:
# bench/bench_allreduce with N processes (default 4) on this host, then on hosts simulated by
# scripts/simcluster whose links are limited to RATE (2 hosts x N/2 processes, N hosts x 1), each
# row with the time a ring all-reduce needs on such links (--link) and the ratio to it. Sizes:
# the tutorial's MLP (7.2 MB) and a couple of others.
#   bash bench/allreduce_hosts.sh [--sizes 1M,mlp,16M] [--seconds 1] [--rate 1gbit] [--processes 4]
#                                 [--build build] [-- MORE_BENCH_ARGS...]
# The simulated hosts need root (network, UTS and mount namespaces); without it those parts are
# reported as skipped. The machine should be otherwise idle; with fewer cores than processes the
# processes share cores, and the figures measure that too.
# Across simulated hosts MPI talks TCP (simcluster --rate), where MPICH 4.0.2 over UCX 1.13
# sometimes never returns from MPI_Finalize once the table is printed; chainermn's watchdog
# (CHAINERMN_TIMEOUT, 60 s here) then ends that job, which is reported and not counted as failed.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=1M,mlp,16M seconds=1 rate=1gbit build=build processes=4
while (($#)); do
  case $1 in
    --sizes) sizes=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --processes) processes=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "allreduce_hosts.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
bench=$(readlink -f "$build/bench/bench_allreduce")  # hydra's proxies look bare names up in PATH
[[ -x $bench ]] || { echo "allreduce_hosts.sh: no $build/bench/bench_allreduce; build it first (ninja -C $build)" >&2; exit 2; }
mpiexec=$(command -v mpiexec.mpich || command -v mpiexec)
args=(--sizes "$sizes" --seconds "$seconds" --link "$rate" "$@")
errors=$(mktemp)
trap 'rm -f "$errors"' EXIT

echo "# machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $(date -u '+%F %H:%M') UTC;" \
  "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo
[[ $processes =~ ^[0-9]+$ && $processes -ge 2 ]] || { echo "allreduce_hosts.sh: --processes must be 2 or more" >&2; exit 2; }
echo "## 1 host x $processes processes"
"$mpiexec" -n "$processes" "$bench" "${args[@]}"
placements=()
((processes % 2 == 0 && processes > 2)) && placements+=("2 $((processes / 2))")
placements+=("$processes 1")
status=0
# Simulated hosts share this machine's cores, which real hosts do not. Where the processes
# outnumber the cores they wait passively (distributed/runtime/mpi_wait.h); chainermn cannot tell by
# itself, since simcluster --rate gives each host a boot id of its own.
if ((processes > $(nproc))); then
  export CHAINERMN_WAIT_POLICY=${CHAINERMN_WAIT_POLICY:-passive}
  echo "# more processes than cores: CHAINERMN_WAIT_POLICY=$CHAINERMN_WAIT_POLICY on the simulated hosts"
fi
for placement in "${placements[@]}"; do
  read -r hosts per_host <<<"$placement"
  echo
  echo "## $hosts simulated hosts x $per_host processes, links of $rate"
  rc=0
  CHAINERMN_TIMEOUT=${CHAINERMN_TIMEOUT:-60} scripts/simcluster --hosts "$hosts" --rate "$rate" -- bash -c \
    'exec "$0" $SIMCLUSTER_LAUNCH -hosts "$SIMCLUSTER_HOSTS" -ppn "$1" -n "$2" "${@:3}"' \
    "$mpiexec" "$per_host" "$processes" "$bench" "${args[@]}" 2>"$errors" || rc=$?
  cat "$errors" >&2
  if ((rc == 77)); then
    echo "(skipped: simulated hosts cannot be made here; see scripts/simcluster)"
  elif ((rc != 0)) && grep -q "chainermn: MPI_Finalize" "$errors"; then
    echo "(every row above is complete; the job then hung in MPI_Finalize and the watchdog ended it)"
  elif ((rc != 0)); then
    echo "(failed with status $rc)"
    status=$rc
  fi
done
exit "$status"
