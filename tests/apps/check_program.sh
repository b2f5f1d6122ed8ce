#!/usr/bin/env bash
# chainermn_check, the troubleshooting program (docs/troubleshooting.md), run as its users run it:
#   - without mpiexec, and under mpiexec with 1, 2, 3 and 4 processes on this host: exit 0, the
#     ranks in order with this host's name, intra_rank = rank and intra_size = N on one host,
#     every communicator that works everywhere OK on all three operations, the others OK or
#     "not available"/"not applicable", the final count equal to the OK lines, rank 0 alone
#     printing;
#   - with CHAINERMN_DEBUG=1 passed by -genv;
#   - on 2 simulated hosts x 2 ranks (scripts/simcluster), once with -hosts and -ppn and once
#     with a hostfile (-f), -genv and -envlist: host names simhost0, simhost0, simhost1,
#     simhost1, the intra and inter ranks of that placement, single_node not applicable, the
#     rest OK;
#   - the failure it exists to catch: a process that the environment says is rank 1 of 2 (as
#     MPICH's hydra or Open MPI's launcher would set it) but that MPI runs alone as rank 0 of 1
#     must fail, exit 1, naming the variable and mpiexec.mpich;
#   - --help (exit 0) and an unknown option (exit 2, with the option named).
# Exits 77 (skipped) when everything else passed but simcluster cannot make namespaces here.
#   tests/apps/check_program.sh CHAINERMN_CHECK MPIEXEC SIMCLUSTER cuda|nocuda
# The simulated hosts' commands are single-quoted: they expand on simhost0, where $SIMCLUSTER_* are set.
# shellcheck disable=SC2016
set -u
usage="usage: check_program.sh CHAINERMN_CHECK MPIEXEC SIMCLUSTER cuda|nocuda"
check=$(readlink -f "${1:?$usage}")  # hydra's proxies look bare names up in PATH
mpiexec=${2:?$usage}
simcluster=${3:?$usage}
build_kind=${4:?$usage}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/chainer_check_program.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export MPIEXEC_TIMEOUT=120
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
this_host=$(hostname)

# The communicators that work everywhere (create_communicator's own list); any other kind must
# say why it cannot run, or pass.
everywhere=(naive flat hierarchical two_dimensional single_node)
operations=(multi_node_mean_grad allreduce bcast_data)

# expect_pass NAME NP NOT_APPLICABLE HOSTS...: the output in $tmp/out of a run of NP processes
# that exited with $rc passed as a whole: exit 0; rank r on HOSTS[r]; the topology those hosts
# imply; every communicator of $everywhere but NOT_APPLICABLE (a name or "-") OK on each
# operation; no FAILED line; the final count equal to the OK lines; the header printed once.
expect_pass() {
  local name=$1 np=$2 not_applicable=$3
  shift 3
  local hosts=("$@") out=$tmp/out r
  if [[ $rc -ne 0 ]]; then
    fail "$name: exited with $rc"
    tail -n 30 "$out"
    return
  fi
  local before=$failures
  local header
  header=$(grep -c "^chainermn_check: ChainerMN's troubleshooting steps" "$out")
  [[ $header -eq 1 ]] || fail "$name: the header was printed $header times, expected once (rank 0 only)"
  # Section 2, in rank order.
  local expected_ranks="" got_ranks
  for ((r = 0; r < np; r++)); do expected_ranks+="rank $r of $np on ${hosts[r]}"$'\n'; done
  got_ranks=$(grep -E '^rank [0-9]+ of [0-9]+ on ' "$out")
  [[ "$got_ranks"$'\n' == "$expected_ranks" ]] ||
    fail "$name: ranks and hosts are"$'\n'"$got_ranks"$'\n'"expected"$'\n'"$expected_ranks"
  # Section 4: intra = position among the ranks of the same host, inter = index of the host.
  local -A seen=() host_index=()
  local nhosts=0 expected_topology="" got_topology h count
  for h in "${hosts[@]}"; do
    if [[ -z ${host_index[$h]+x} ]]; then
      host_index[$h]=$nhosts
      nhosts=$((nhosts + 1))
    fi
  done
  for ((r = 0; r < np; r++)); do
    h=${hosts[r]}
    count=0
    for x in "${hosts[@]}"; do [[ $x == "$h" ]] && count=$((count + 1)); done
    expected_topology+="rank $r on $h: intra_rank ${seen[$h]:-0} intra_size $count inter_rank ${host_index[$h]} inter_size $nhosts"$'\n'
    seen[$h]=$((${seen[$h]:-0} + 1))
  done
  got_topology=$(grep -E '^rank [0-9]+ on .*: intra_rank ' "$out")
  [[ "$got_topology"$'\n' == "$expected_topology" ]] ||
    fail "$name: topology is"$'\n'"$got_topology"$'\n'"expected"$'\n'"$expected_topology"
  grep -q '^OK: intra and inter ranks match the host names$' "$out" || fail "$name: no OK for the topology check"
  grep -qE '^MPI wait policy: (active|passive) \(CHAINERMN_WAIT_POLICY=' "$out" || fail "$name: no MPI wait policy line"
  # Section 6.
  local kind op
  for kind in "${everywhere[@]}"; do
    if [[ $kind == "$not_applicable" ]]; then
      grep -q "^$kind: not applicable here: " "$out" || fail "$name: $kind is not reported 'not applicable here'"
      grep -q "^OK: $kind: " "$out" && fail "$name: $kind ran although it does not suit this placement"
      continue
    fi
    for op in "${operations[@]}"; do
      grep -q "^OK: $kind: $op$" "$out" || fail "$name: no 'OK: $kind: $op'"
    done
  done
  local other
  while read -r other; do
    [[ " ${everywhere[*]} " == *" $other "* ]] && continue
    if ! grep -qE "^$other: not (available: needs |applicable here: )" "$out"; then
      for op in "${operations[@]}"; do
        grep -q "^OK: $other: $op$" "$out" || fail "$name: $other is neither OK on $op nor said to be unavailable"
      done
    fi
  done < <(sed -n 's/^\([a-z_]*\): not a[a-z]* .*/\1/p; s/^OK: \([a-z_]*\): bcast_data$/\1/p' "$out" | sort -u)
  grep -q '^FAILED' "$out" && fail "$name: a check failed: $(grep -m3 -A1 '^FAILED' "$out")"
  local oks
  oks=$(grep -c '^OK: ' "$out")
  grep -q "^chainermn_check: all $oks checks passed$" "$out" ||
    fail "$name: the last line is '$(tail -n 1 "$out")', expected 'chainermn_check: all $oks checks passed'"
  [[ $failures -eq $before ]] && echo "ok: $name ($oks checks)"
}

# expect_cuda_section NAME: section 5 says what this build is.
expect_cuda_section() {
  local name=$1 out=$tmp/out line lib
  if [[ $build_kind == nocuda ]]; then
    grep -q '^this build has no CUDA support ' "$out" || fail "$name: section 5 does not say the build has no CUDA"
    return
  fi
  for line in '^devices: ' '^CUDA runtime: [0-9]+\.[0-9]+$' '^NCCL: ' '^cuDNN: ' '^MPI CUDA-aware: (yes|no|unknown) \('; do
    grep -qE "$line" "$out" || fail "$name: section 5 has no line matching '$line'"
  done
  # NCCL and cuDNN: a version where the dynamic loader knows the library, "not found" where not.
  for lib in "NCCL libnccl.so.2" "cuDNN libcudnn.so.9"; do
    if /sbin/ldconfig -p 2>/dev/null | grep -q "${lib#* } "; then
      grep -qE "^${lib% *}: [0-9]+\.[0-9]+\.[0-9]+ \(" "$out" ||
        fail "$name: ${lib#* } is installed but section 5 says '$(grep -m1 "^${lib% *}: " "$out")'"
    else
      grep -qE "^${lib% *}: not found " "$out" || fail "$name: ${lib#* } is not installed but section 5 says otherwise"
    fi
  done
}

# 1. Without mpiexec: a 1-process job.
(cd "$tmp" && timeout -k 5 120 "$check") >"$tmp/out" 2>&1
rc=$?
expect_pass "without mpiexec" 1 - "$this_host"
expect_cuda_section "without mpiexec"

# 2. Under mpiexec, 1 to 4 processes on this host.
for np in 1 2 3 4; do
  timeout -k 5 150 "$mpiexec" -n "$np" "$check" >"$tmp/out" 2>&1
  rc=$?
  hosts=()
  for ((r = 0; r < np; r++)); do hosts+=("$this_host"); done
  expect_pass "mpiexec -n $np" "$np" - "${hosts[@]}"
done
expect_cuda_section "mpiexec -n 4"

# 3. Debug mode, passed to every rank by mpiexec.
timeout -k 5 150 "$mpiexec" -genv CHAINERMN_DEBUG 1 -n 2 "$check" >"$tmp/out" 2>&1
rc=$?
expect_pass "mpiexec -genv CHAINERMN_DEBUG 1 -n 2" 2 - "$this_host" "$this_host"

# 4. The program started by a launcher that is not its MPI's: the environment says rank 1 of
# 2 (hydra's variables, then Open MPI's), MPI says rank 0 of 1.
mismatch() {  # NAME VARIABLE=VALUE...
  local name=$1
  shift
  (cd "$tmp" && env "$@" timeout -k 5 60 "$check") >"$tmp/out" 2>&1
  rc=$?
  local before=$failures
  [[ $rc -eq 1 ]] || fail "$name: exited with $rc, expected 1"
  grep -q "^FAILED: the launcher and MPI agree: rank 0: .*${1%%=*}=${1#*=} but MPI_COMM_WORLD has 1 process" "$tmp/out" ||
    fail "$name: no FAILED line naming ${1%%=*}: $(grep -m1 -A1 '^FAILED' "$tmp/out")"
  grep -q 'every process runs alone as rank 0 of 1' "$tmp/out" || fail "$name: does not say every process is rank 0 of 1"
  grep -q 'mpiexec.mpich' "$tmp/out" || fail "$name: does not say to launch with mpiexec.mpich"
  grep -qE '^chainermn_check: 1 of [0-9]+ checks failed' "$tmp/out" || fail "$name: last line '$(tail -n 1 "$tmp/out")'"
  grep -q '^== 4\.' "$tmp/out" && fail "$name: went on to the later steps"
  [[ $failures -eq $before ]] && echo "ok: $name: exit 1, '$(grep -m1 '^FAILED' "$tmp/out")'"
}
mismatch "hydra's PMI_SIZE=2 PMI_RANK=1, run alone" PMI_SIZE=2 PMI_RANK=1
mismatch "Open MPI's OMPI_COMM_WORLD_SIZE=2, run alone" OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=1 PMIX_RANK=1

# 5. The command line.
"$check" --help >"$tmp/out" 2>&1
rc=$?
if [[ $rc -ne 0 ]] || ! grep -q '^usage: mpiexec -n N chainermn_check' "$tmp/out"; then
  fail "--help: exit $rc, $(head -n 2 "$tmp/out")"
else
  echo "ok: --help"
fi
"$check" --no-such-flag >"$tmp/out" 2>"$tmp/err"
rc=$?
if [[ $rc -ne 2 ]] || ! grep -q "^chainermn_check: error: unknown option '--no-such-flag' (see --help)$" "$tmp/err" ||
  grep -q '^== ' "$tmp/out"; then
  fail "unknown option: exit $rc, stderr '$(cat "$tmp/err")', stdout '$(head -n 3 "$tmp/out")'"
else
  echo "ok: an unknown option: exit 2, $(cat "$tmp/err")"
fi

# 6. Two simulated hosts x 2 ranks: with -hosts and -ppn, and with a hostfile.
skipped=""
on_two_hosts() {  # NAME MPIEXEC_ARGS (with $SIMCLUSTER_* and $HOSTFILE expanded on simhost0)
  local name=$1
  CHECK=$check MPIEXEC=$mpiexec ARGS=$2 HOSTFILE=$tmp/hostfile timeout -k 5 200 "$simcluster" --hosts 2 -- bash -c '
    IFS=, read -ra address <<<"$SIMCLUSTER_HOSTS"
    printf "%s:2\n" "${address[@]}" >"$HOSTFILE"
    eval "exec \"\$MPIEXEC\" \$SIMCLUSTER_LAUNCH $ARGS \"\$CHECK\""' >"$tmp/out" 2>&1
  rc=$?
  if [[ $rc -eq 77 ]]; then
    skipped=$(grep -m1 'simcluster: skipped' "$tmp/out")
    return
  fi
  expect_pass "$name" 4 single_node simhost0 simhost0 simhost1 simhost1
}
on_two_hosts "2 simulated hosts, -hosts -ppn 2 -n 4" '-hosts "$SIMCLUSTER_HOSTS" -ppn 2 -n 4'
[[ -z $skipped ]] && on_two_hosts "2 simulated hosts, hostfile, -genv CHAINERMN_DEBUG 1 -envlist LD_LIBRARY_PATH" \
  '-f "$HOSTFILE" -genv CHAINERMN_DEBUG 1 -envlist LD_LIBRARY_PATH -n 4'

[[ $failures -eq 0 ]] || { echo "$failures failure(s)"; exit 1; }
if [[ -n $skipped ]]; then
  echo "skipped: the simulated hosts ($skipped); everything before passed"
  exit 77
fi
exit 0
