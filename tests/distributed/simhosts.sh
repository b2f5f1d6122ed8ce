#!/usr/bin/env bash
# The distributed layer across hosts, on hosts simulated by scripts/simcluster (network and UTS
# namespaces; MPICH's launcher enters them instead of using ssh). Placements: 2 hosts x 2 ranks
# (block: even hosts, as two_dimensional needs), and 3 hosts with 2, 1 and 1 ranks in round robin
# (uneven hosts, and a host's ranks not consecutive: ranks 0 and 3 share simhost0). Under each,
# the communicator and multi-node test binaries run whole (topology against the host names, every
# collective against closed forms, every reduction against one process; shared memory only when
# all ranks share a host), mnist_mlp on 2 hosts x 2 ranks must match 4 ranks on one host, a
# rank on the second host that throws or is killed ends the whole job within 10 s, and so does
# cutting the second host's link (chainermn's watchdog, CHAINERMN_TIMEOUT=3 here); a checkpointed
# mnist_mlp that loses the second host ends naming the lost rank, rerun resumes to the bit, and
# 2 ranks on one host resume its checkpoints with the other process count.
# Exits 77 (skipped) with the reason where namespaces cannot be made.
#   tests/distributed/simhosts.sh SIMCLUSTER MPIEXEC MNIST_MLP MPI_FAILURE TEST_BINARY...
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
# host indices with rank counts ("0:2,1:1") for block placement, or plain indices for round robin
# over that list ("0,1,2,0": ranks 0 and 3 on simhost0).
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
scenario "3 hosts with 2, 1 and 1 ranks, round robin" 3 0,1,2,0 4

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

# A lost host during a long job with the multi-node checkpointer (mnist_mlp --checkpoint-interval):
# 2 hosts x 2 ranks; once every rank has saved iteration 10, the job is frozen (SIGSTOP: it cannot
# finish first) and simhost1's two ranks are killed. The job must end within 10 s naming a lost
# rank; the same command, rerun, resumes from the newest checkpoint every rank holds and ends with
# the log of an uninterrupted run to the bit (same placement, same count); no temporary file is
# left under the out directory.
ckpt=(--data "$MNIST_DIR" -u 200 -e 2 -b 50 --train-size 8000 --checkpoint-interval 5)
on 2 0:2,1:2 4 "$mnist_mlp" "${ckpt[@]}" -o "$tmp/whole" >"$tmp/whole.out" 2>&1 || {
  echo "FAIL: checkpointed mnist_mlp, uninterrupted: $(tail -c 600 "$tmp/whole.out")"
  failures=$((failures + 1))
}
MPIEXEC=$mpiexec PROG=$mnist_mlp OUT=$tmp/lost timeout -k 5 120 "$simcluster" --hosts 2 -- bash -c '
  IFS=, read -ra address <<<"$SIMCLUSTER_HOSTS"
  IFS=, read -ra netns <<<"$SIMCLUSTER_NETNS"
  mkdir -p "$OUT"
  "$MPIEXEC" $SIMCLUSTER_LAUNCH -hosts "${address[0]}:2,${address[1]}:2" -n 4 "$PROG" "$@" -o "$OUT" \
    >"$OUT.out" 2>&1 &
  job=$!
  for ((i = 0; i < 600; ++i)); do
    [[ $(ls "$OUT" 2>/dev/null | grep -c "^mnist_mlp\.[0-3]\.10$") -eq 4 ]] && break
    sleep 0.05
  done
  ranks() { ip netns pids "$1" | xargs -r ps -o pid=,comm= -p | awk "\$2 == \"mnist_mlp\" {print \$1}"; }
  stopped=$( (ranks "${netns[0]}"; ranks "${netns[1]}") | tr "\n" " ")
  kill -STOP $stopped
  kill -KILL $(ranks "${netns[1]}")
  lost=$(date +%s%N)
  kill -CONT $stopped 2>/dev/null
  wait $job
  echo "rc=$? ms=$((($(date +%s%N) - lost) / 1000000))" >"$OUT.result"' lost "${ckpt[@]}"
read -r lost_rc lost_ms < <(sed 's/rc=\([0-9]*\) ms=\([0-9]*\)/\1 \2/' "$tmp/lost.result" 2>/dev/null)
# mpiexec names the lost process by its PID and host; the job's header maps PIDs to ranks.
lost_pid=$(grep -m1 -oE "PID [0-9]+ RUNNING AT" "$tmp/lost.out" | grep -oE "[0-9]+")
lost_rank=$(grep -m1 "^# processes:" "$tmp/lost.out" | grep -oE "rank [0-9]+ pid ${lost_pid:-none} on [^,]*")
if [[ ${lost_rc:-0} -eq 0 || ${lost_ms:-999999} -gt 10000 || $lost_rank != *simhost1 ]]; then
  echo "FAIL: simhost1 lost: mpiexec exited with ${lost_rc:-nothing} ${lost_ms:-?} ms after the kill," \
    "lost: '${lost_rank}': $(tail -c 600 "$tmp/lost.out")"
  failures=$((failures + 1))
else
  echo "ok: simhost1 lost after iteration 10: the job ended with $lost_rc ${lost_ms} ms after the kill," \
    "mpiexec naming PID $lost_pid, that is $lost_rank"
fi
on 2 0:2,1:2 4 "$mnist_mlp" "${ckpt[@]}" -o "$tmp/lost" >"$tmp/rerun.out" 2>&1 || {
  echo "FAIL: checkpointed mnist_mlp, rerun after the loss: $(tail -c 600 "$tmp/rerun.out")"
  failures=$((failures + 1))
}
python3 - "$tmp/whole/log" "$tmp/lost/log" "$tmp/rerun.out" "$tmp/lost" <<'PY' || failures=$((failures + 1))
import json, os, re, sys
whole, rerun, out, folder = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), open(sys.argv[3]).read(), sys.argv[4]
m = re.search(r"# resumed from the checkpoints of iteration (\d+)", out)
if not m or int(m.group(1)) < 10:
    sys.exit(f"FAIL: the rerun did not resume from iteration 10 or later: {out[-400:]}")
strip = lambda log: [{k: v for k, v in e.items() if k != "elapsed_time"} for e in log]
if strip(whole) != strip(rerun):
    sys.exit(f"FAIL: the resumed run's log differs from the uninterrupted one's: {strip(rerun)[-1]} against {strip(whole)[-1]}")
left = [f for f in os.listdir(folder) if f.startswith("tmp") or ".tmp." in f]
if left:
    sys.exit(f"FAIL: temporary files left in the out directory: {left}")
print(f"ok: rerun resumed from iteration {m.group(1)} and ends as the uninterrupted run to the bit "
      f"(validation accuracy {rerun[-1]['validation/main/accuracy']:.4f})")
PY

# The same checkpoints resumed by 2 ranks on one host (another process count): the 4 ranks ended
# at iteration 80, the end of epoch 2, so a third epoch of 8000 / (2 x 50) = 80 iterations follows.
"$mpiexec" -n 2 "$mnist_mlp" "${ckpt[@]}" -e 3 -o "$tmp/lost" >"$tmp/recount.out" 2>&1 || {
  echo "FAIL: checkpointed mnist_mlp resumed by 2 ranks on one host: $(tail -c 600 "$tmp/recount.out")"
  failures=$((failures + 1))
}
python3 - "$tmp/lost/log" "$tmp/recount.out" <<'PY' || failures=$((failures + 1))
import json, sys
log, out = json.load(open(sys.argv[1])), open(sys.argv[2]).read()
want = "resumed from 4 processes at iteration 80 (epoch 2); the global batch was 4*50 = 200, now 2*50 = 100"
if want not in out:
    sys.exit(f"FAIL: 2 ranks on one host did not resume from the 4 ranks' iteration 80: {out[-400:]}")
if [e["iteration"] for e in log] != [40, 80, 160]:
    sys.exit(f"FAIL: 2 ranks after 4: the log's epochs end at {[e['iteration'] for e in log]}, expected [40, 80, 160]")
print(f"ok: 2 ranks on one host resumed the 4 ranks' checkpoints of iteration 80 and trained epoch 3 "
      f"(validation accuracy {log[-1]['validation/main/accuracy']:.4f})")
PY

# A cut link (`ip link set ... down` on simhost1's port of the bridge) while 2 hosts x 2 ranks keep
# all-reducing over it (simcluster --tcp: otherwise UCX joins the simulated hosts through shared
# memory). Nothing fails, so neither MPI nor TCP notices: every rank waits in MPI forever
# unless chainermn's watchdog ends it (CHAINERMN_TIMEOUT, distributed/runtime/mpi_runtime.h). Then:
# mpiexec returns non-zero within the limit and a few seconds, the message names the limit, the
# ranks and proxies are gone from both hosts (those behind the cut end on their own, unheard), and
# simcluster leaves no namespace behind.
cut_limit=3
CHAINERMN_TIMEOUT=$cut_limit MPIEXEC_TIMEOUT=90 MPIEXEC=$mpiexec PROG=$mpi_failure OUT=$tmp \
  timeout -k 5 150 "$simcluster" --hosts 2 --tcp -- bash -c '
  IFS=, read -ra address <<<"$SIMCLUSTER_HOSTS"
  IFS=, read -ra netns <<<"$SIMCLUSTER_NETNS"
  echo "$SIMCLUSTER_SWITCH ${netns[*]}" >"$OUT/cut.netns"
  "$MPIEXEC" $SIMCLUSTER_LAUNCH -hosts "${address[0]}:2,${address[1]}:2" -n 4 "$PROG" loop \
    >"$OUT/cut.out" 2>"$OUT/cut.err" &
  job=$!
  for ((i = 0; i < 300; ++i)); do grep -q "rank 0 all-reducing" "$OUT/cut.out" && break; sleep 0.1; done
  sleep 1
  ip -n "$SIMCLUSTER_SWITCH" link set p1 down
  cut=$(date +%s%N)
  wait $job
  echo "rc=$? ms=$((($(date +%s%N) - cut) / 1000000))" >"$OUT/cut.result"
  # What is left of the job on each host, given a few seconds to go.
  for ((i = 0; i < 50; ++i)); do
    left=$(for ns in "${netns[@]}"; do ip netns pids "$ns"; done | xargs -r ps -o pid=,comm= -p |
      grep -E "mpi_failure|hydra_pmi_proxy|mpiexec")
    [[ -z $left ]] && break
    sleep 0.1
  done
  echo "$left" >"$OUT/cut.left"'
rc=$?
read -r cut_rc cut_ms < <(sed 's/rc=\([0-9]*\) ms=\([0-9]*\)/\1 \2/' "$tmp/cut.result" 2>/dev/null)
problems=()
[[ $rc -eq 0 ]] || problems+=("simcluster exited with $rc")
[[ ${cut_rc:-0} -ne 0 ]] || problems+=("mpiexec exited with ${cut_rc:-nothing}")
((${cut_ms:-999999} <= (cut_limit + 5) * 1000)) || problems+=("mpiexec took ${cut_ms:-forever} ms after the cut")
grep -qF "has not completed in $cut_limit s" "$tmp/cut.err" || problems+=("no message naming the time limit")
[[ -z $(cat "$tmp/cut.left" 2>/dev/null) ]] || problems+=("left behind: $(tr '\n' ' ' <"$tmp/cut.left")")
for ns in $(cat "$tmp/cut.netns" 2>/dev/null); do
  ! ip netns list | grep -qw "$ns" || problems+=("namespace $ns is left")
done
if [[ ${#problems[@]} -gt 0 ]]; then
  echo "FAIL: cut link to simhost1: $(IFS=';'; echo "${problems[*]}"): $(tail -c 600 "$tmp/cut.err")"
  failures=$((failures + 1))
else
  echo "ok: cut link to simhost1: the job ended with $cut_rc ${cut_ms} ms after the cut" \
    "(CHAINERMN_TIMEOUT=$cut_limit): $(grep -m1 -o 'chainermn: [^ ]* ([^)]*) has not completed in [0-9]* s' "$tmp/cut.err")"
fi

[[ $failures -eq 0 ]] || { echo "$failures failure(s)"; exit 1; }
