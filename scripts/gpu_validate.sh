#!/usr/bin/env bash
# The GPU validation, run on the lent GPU machine from the folder scripts/gpu_prepare.sh packs
# (there it is .gpurun/validate.sh). One call, under one deadline: the steps below run in order,
# each under its own budget, and a step whose budget no longer fits before the deadline is
# skipped. Correctness first (stage A), then speed and the apps (stage B), then extras that run
# only if time remains. docs/gpu-validation.md says what each step proves.
#   bash .gpurun/validate.sh                                  # deadline 480 s
#   bash .gpurun/validate.sh --continue .gpurun/state.txt     # only what an earlier call did not pass
#   bash .gpurun/validate.sh --rehearse                       # here, without a GPU: the plumbing
# Options: --deadline S (default 480), --scale F (multiply every budget, e.g. 2 on a rerun of
# steps that ran out of time), --only NAME,NAME, --continue STATE (a state.txt an earlier call
# wrote; its passed steps are not run again), --list (print the table and exit).
#
# Writes to $OUT (the device tool brings at most 8 files back): summary.txt (one line per step),
# state.txt (one line per step: name, status, exit code, seconds; what --continue reads) and
# validate.log (every step's output). The apps' result folders and the Catch2 reports stay in
# the unpacked folder. Exit status 0 when every step run passed.
set -uo pipefail
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
here=$(dirname "$self")

# ---- The steps: NAME STAGE BUDGET_S KIND, run by the function of the same name below.
# Kinds: host (no GPU needed: must pass everywhere), gpu (our CUDA code: without a GPU it must
# say so), peer (PyTorch on the GPU). Stages A and B are planned within the deadline; rows that
# do not fit go to the summary's "next lease" list. Stage X runs only if time remains.
table="
libcheck              A  10  host
test_cuda_ops         A  65  gpu
test_cuda_training    A  30  gpu
no_cudnn              A  10  gpu
gpu_nccl              A  20  gpu
gpu_communicators_np1 A  10  gpu
gpu_communicators_np2 A  10  gpu
timings               A   5  gpu
rerun_failures        A  30  host
cudnn_autotune        B  15  gpu
bench_graphs          B  10  gpu
bench_eager           B  10  gpu
torch_eager           B  40  peer
torch_graphs          B  30  peer
cnn_gpu               B  15  gpu
torch_cnn             B  30  peer
mixed16_gpu           B  12  gpu
torch_amp             B  35  peer
mlp_pure_nccl         B  10  gpu
mlp_np2_flat          B  10  gpu
model_parallel        B  10  gpu
ensemble              B  10  gpu
lstm_gpu              B  10  gpu
torch_lstm            B  30  peer
seq2seq_gpu           X  60  gpu
seq2seq_mp1_gpu       X  60  gpu
torch_compile         X  90  peer
dcgan_gpu             X  60  gpu
cifar_gpu             X  60  gpu
parallel_conv_gpu     X  60  gpu
mlp_accuracy          X  60  gpu
memcheck              X  90  gpu
torch_fused_eager     X  40  peer
torch_fused_graphs    X  35  peer
profile_eager         X  60  gpu
profile_graphs        X  45  gpu
"

# ---- What each step runs. $U: the unpacked programs and libraries; $R: the result folders.
B() { echo "$U/bin/$1"; }
# host COMMAND...: one of the machine's own programs (Python, nvidia-smi) with the machine's own
# libraries: the bundle's Debian ones, first on LD_LIBRARY_PATH for our programs, must not be.
host() { env PYTHONUNBUFFERED=1 PATH="$DEVRT_ORIG_PATH" LD_LIBRARY_PATH="$DEVRT_ORIG_LD_LIBRARY_PATH" "$@"; }
data=$here/data/mnist
# catch NAME NP PROGRAM ARGS...: a Catch2 binary (under mpiexec -n NP when NP > 0) writing one XML
# report per rank to $R/NAME.RANK.xml, then the failures, read from the reports, into the log.
catch() {
  local name=$1 np=$2 prog=$3 rc
  shift 3
  rm -f "$R/$name".*.xml
  if ((np > 0)); then
    REPORT="$R/$name" mpiexec -n "$np" bash -c 'exec "$@" -r xml -o "$REPORT.${PMI_RANK:-0}.xml"' run "$(B "$prog")" "$@"
  else
    "$(B "$prog")" "$@" -r xml -o "$R/$name.0.xml"
  fi
  rc=$?
  echo "$np $prog $*" >"$R/$name.command"
  env | grep -E '^CHAINER_(AUTOTUNE|CUDNN_DETERMINISTIC|CUDNN)=' >"$R/$name.env"
  ((rc == 77)) && return 77  # no GPU: the binary said why before Catch2 ran
  local reports=("$R/$name".*.xml)
  host python3 "$U/catch_failures.py" "$R/$name.failed" "${reports[@]}"
  local parsed=$?
  ((rc == 0 && parsed != 0)) && rc=1
  return "$rc"
}
libcheck() {
  "$U/devrt/check.sh" "$U/bin" "$U/lib" || return 1
  if command -v nvidia-smi >/dev/null; then host nvidia-smi; fi
  # MPI, CUDA, cuDNN and NCCL as our programs see them: versions first, before any step uses them.
  mpiexec -n 1 "$(B chainermn_check)"
}
test_cuda_ops() { catch test_cuda_ops 0 test_cuda_ops; }
test_cuda_training() { MNIST_DIR=$data catch test_cuda_training 0 test_cuda_training; }
# As on a machine without cuDNN: the recurrent stacks composed of our kernels equal the CPU's, and
# a convolution says why it cannot run.
no_cudnn() { CHAINER_CUDNN=0 catch no_cudnn 0 test_cuda_ops "[no_cudnn]"; }
gpu_nccl() { catch gpu_nccl 1 test_gpu_nccl; }
gpu_communicators_np1() { catch gpu_communicators_np1 1 test_gpu_communicators; }
gpu_communicators_np2() { catch gpu_communicators_np2 2 test_gpu_communicators; }
# The hidden timing cases: a full sum of 10M floats and batch normalization's channel sums of a
# CNN layer, each split over the whole device: expected well under 100 us each on an H100 (the
# sum ~15-25 us: 40 MB at 3.35 TB/s; the channel sums ~4 us of reading).
# Run without the XML report, whose reporter would capture the printed figures.
timings() { "$(B test_cuda_ops)" "[timing]"; }
# The failed cases of this call's Catch2 steps again, alone and verbose (-s: every assertion).
rerun_failures() {
  local f name prog args np any=0 vars
  for f in "$R"/*.failed; do
    [[ -s $f ]] || continue
    any=1
    name=$(basename "$f" .failed)
    read -r np prog args <"$R/$name.command"
    vars=$(cat "$R/$name.env" 2>/dev/null)
    echo "== $name: $(wc -l <"$f") failed cases, verbose${vars:+, with $vars}"
    # shellcheck disable=SC2086  # ARGS and VARS are the step's own words
    if ((np > 0)); then
      env $vars mpiexec -n "$np" "$(B "$prog")" $args -f "$f" -s 2>&1 | head -c 2000000
    else
      env $vars "$(B "$prog")" $args -f "$f" -s 2>&1 | head -c 2000000
    fi
  done
  ((any)) || echo "nothing to rerun: no Catch2 case failed in this call"
  return 0
}
# Every convolution case again with every algorithm timed and non-deterministic ones allowed.
cudnn_autotune() {
  CHAINER_AUTOTUNE=1 CHAINER_CUDNN_DETERMINISTIC=0 catch cudnn_autotune 0 test_cuda_ops "[convolution]"
}
bench_graphs() { "$(B bench_epoch)" --gpu --epochs 3 --data "$data"; }
bench_eager() { "$(B bench_epoch)" --gpu --eager --epochs 3 --data "$data"; }
# The peers run with the machine's own libraries: the bundle's Debian ones must not come first.
peer() {
  local py=(host python3)
  "${py[@]}" -c 'import torch' 2>/dev/null || { echo "no GPU: PyTorch cannot be imported here"; return 77; }
  "${py[@]}" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 77)' ||
    { echo "no GPU: torch.cuda.is_available() is False"; return 77; }
  "${py[@]}" "$@"
}
torch_eager() { peer "$U/peers/torch_gpu.py" --mode eager --epochs 3 --data "$data"; }
torch_graphs() { peer "$U/peers/torch_gpu.py" --mode graphs --epochs 3 --data "$data"; }
torch_compile() { peer "$U/peers/torch_gpu.py" --mode compile --epochs 3 --data "$data"; }
# The CNN (cuDNN convolutions, our pooling and batch normalization) on MNIST's files, which have
# Fashion-MNIST's layout: the same shapes, so the same times, as Fashion-MNIST.
cnn_gpu() { "$(B fashion_mnist_cnn)" --gpu -e 1 --timing --no-plot -o "$R/cnn" --data "$data"; }
torch_cnn() { peer "$U/peers/fashion_mnist_cnn.py" --device cuda --epochs 1 --data "$data"; }
# Mixed precision (--dtype mixed16: float16 tensor-core products, dynamic loss scaling) beside
# PyTorch's torch.autocast(float16) + GradScaler on the same models: the tutorial MLP and the CNN,
# one epoch each (cnn_gpu and torch_cnn are their float32 rows).
mixed16_gpu() {
  "$(B mnist_mlp)" --gpu --dtype mixed16 -e 1 --timing --no-plot -o "$R/mlp_mixed16" --data "$data" &&
    "$(B fashion_mnist_cnn)" --gpu --dtype mixed16 -e 1 --timing --no-plot -o "$R/cnn_mixed16" --data "$data"
}
torch_amp() {
  peer "$U/peers/fashion_mnist_cnn.py" --device cuda --model mlp --amp float16 --epochs 1 --data "$data" &&
    peer "$U/peers/fashion_mnist_cnn.py" --device cuda --amp float16 --epochs 1 --data "$data"
}
# The apps train with the multi-node optimizer, which is not captured into CUDA graphs (its
# all-reduce is between backward and the update): their steps are eager; bench_epoch measures graphs.
mlp_pure_nccl() { mpiexec -n 1 "$(B mnist_mlp)" --gpu --communicator pure_nccl -e 1 --no-plot -o "$R/mlp_nccl" --data "$data"; }
mlp_np2_flat() { mpiexec -n 2 "$(B mnist_mlp)" --gpu --communicator flat -e 1 --no-plot -o "$R/mlp_np2" --data "$data"; }
model_parallel() { mpiexec -n 2 "$(B mnist_model_parallel)" --gpu -e 1 -o "$R/mp" --data "$data"; }
ensemble() { mpiexec -n 2 "$(B mnist_ensemble)" --gpu -e 1 -o "$R/ens" --data "$data"; }
# The LSTM stack's training step (bench_lstm: NStepLSTM, 2 layers of 256, 64 sequences of 10-30
# steps; cuDNN's fused stack) beside PyTorch's nn.LSTM (cuDNN too) on the same sizes.
lstm_gpu() { "$(B bench_lstm)" --gpu --steps 20; }
torch_lstm() { peer "$U/peers/lstm_peer.py" --device cuda --steps 20; }
# The seq2seq examples on the GPU (cuDNN's stacks, the ragged batches' converter): CMUdict's
# letters to phonemes, 2 layers of 256 units, one epoch of 20000 pairs. The lexicon travels in
# the pack (the GPU machine has no festlex-cmu) and is put where the reader looks for it.
cmudict() {
  local want=/usr/share/festival/dicts/cmu/cmudict-0.4.out
  [[ -f $want ]] && return 0
  mkdir -p "$(dirname "$want")" && xz -dc "$here/data/cmudict-0.4.out.xz" >"$want"
}
seq2seq_gpu() {
  cmudict || return 1
  "$(B seq2seq)" --gpu --data cmudict --unit 256 --layer 2 --limit 20000 --test-size 1000 -e 1 --timing \
    --no-plot -o "$R/seq2seq"
}
seq2seq_mp1_gpu() {
  cmudict || return 1
  mpiexec -n 2 "$(B seq2seq_mp1)" --gpu --data cmudict --unit 256 --layer 2 --limit 20000 --test-size 1000 -e 1 \
    -o "$R/seq2seq_mp1"
}
# ChainerMN's DCGAN, CIFAR and parallel-convolution examples on the GPU, on MNIST's files (the
# layout of Fashion-MNIST, which they train on offline): the example's full widths (ch 512, the VGG).
dcgan_gpu() {
  "$(B train_dcgan)" --gpu --iteration 300 --display_interval 100 --snapshot_interval 300 --no-plot \
    -o "$R/dcgan" --data "$data"
}
cifar_gpu() {
  "$(B train_cifar)" --gpu -d fashion-mnist --data "$data" --train-size 10000 --test-size 2000 -e 1 --no-plot \
    -o "$R/cifar"
}
# Two processes share the one GPU: an MPI communicator (NCCL refuses two ranks on one device).
parallel_conv_gpu() {
  mpiexec -n 2 "$(B parallel_convolution)" --gpu --communicator flat -d fashion-mnist --data "$data" \
    --train-size 4000 --test-size 1000 -e 1 --no-plot -o "$R/pconv"
}
mlp_accuracy() { "$(B mnist_mlp)" --gpu -e 20 --no-plot -o "$R/mlp_accuracy" --data "$data"; }
# The peer with torch.optim.Adam(fused=True), as our updates are fused: the fair comparison;
# and PyTorch's peak device memory beside our bench_epoch's peak_mib (both hold MNIST on the GPU).
torch_peak() {
  peer -c 'import runpy, sys, torch
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
print("torch peak device memory: %.1f MiB allocated, %.1f MiB reserved"
      % (torch.cuda.max_memory_allocated() / 2**20, torch.cuda.max_memory_reserved() / 2**20))' "$@"
}
torch_fused_eager() { torch_peak "$U/peers/torch_gpu.py" --mode eager --fused --epochs 3 --data "$data"; }
torch_fused_graphs() { torch_peak "$U/peers/torch_gpu.py" --mode graphs --fused --epochs 3 --data "$data"; }
# Where a step's time goes: Nsight Compute's duration of each kernel of two eager steps after 50
# warm ones (26 kernels a step), and of whole-step graph launches; the sum against step_us.
ncu_times() {
  local ncu
  ncu=$(PATH="$DEVRT_ORIG_PATH:/usr/local/cuda/bin" command -v ncu) || { echo "no ncu on this machine"; return 77; }
  "$ncu" --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv --print-units base "$@" >"$R/ncu.csv" || return
  host python3 - "$R/ncu.csv" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(l for l in open(sys.argv[1]) if l.startswith('"'))
        if r.get("Metric Name") == "gpu__time_duration.sum"]
total = 0.0
for r in rows:
    us = float(r["Metric Value"].replace(",", "")) / 1000
    total += us
    print("%8.2f us  %s" % (us, r["Kernel Name"][:110]))
print("profiled: %d launches, %.1f us of device time" % (len(rows), total))
PY
}
profile_eager() {
  ncu_times --launch-skip 1300 --launch-count 52 "$(B bench_epoch)" --gpu --eager --epochs 1 --data "$data"
}
profile_graphs() {
  ncu_times --graph-profiling graph --launch-skip 100 --launch-count 4 "$(B bench_epoch)" --gpu --epochs 1 --data "$data"
}
# The training cases (graph replays, BatchNorm statistics replaced between replays, resumes)
# under compute-sanitizer's memcheck: no access to freed or unowned device memory.
memcheck() {
  local cs
  cs=$(PATH="$DEVRT_ORIG_PATH:/usr/local/cuda/bin" command -v compute-sanitizer) ||
    { echo "no compute-sanitizer on this machine"; return 77; }
  MNIST_DIR=$data "$cs" --tool memcheck --error-exitcode 9 --print-limit 20 "$(B test_cuda_training)" "~the tutorial model*"
}

# ---- A single step, in its own process (the runner's timeout ends its whole process group).
if [[ ${1:-} == --run-step ]]; then
  "$2"
  exit $?
fi

# ---- Options
deadline=480 scale=1 only="" continue_from="" rehearse=0 list=0
while (($#)); do
  case $1 in
    --deadline) deadline=${2:?}; shift 2 ;;
    --scale) scale=${2:?}; shift 2 ;;
    --only) only=",${2:?},"; shift 2 ;;
    --continue) continue_from=${2:?}; shift 2 ;;
    --rehearse) rehearse=1; shift ;;
    --list) list=1; shift ;;
    -h|--help) sed -n '2,18p' "$self" | cut -c3-; exit 0 ;;
    *) echo "validate.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
names=() stages=() budgets=() kinds=()
while read -r n s b k; do
  [[ -n $n ]] || continue
  names+=("$n") stages+=("$s") kinds+=("$k")
  budgets+=("$(awk -v b="$b" -v f="$scale" 'BEGIN { printf "%d", b * f + 0.5 }')")
done <<<"$table"
if ((list)); then
  for i in "${!names[@]}"; do printf '%-22s %s %4d s  %s\n' "${names[i]}" "${stages[i]}" "${budgets[i]}" "${kinds[i]}"; done
  exit 0
fi

start=$SECONDS
out=${OUT:-$here/out}
mkdir -p "$out"
log=$out/validate.log summary=$out/summary.txt state=$out/state.txt
: >"$log"
: >"$summary"
: >"$state"
say() { echo "$*" | tee -a "$summary"; }
mode=$([[ $rehearse == 1 ]] && echo "rehearsal (no GPU expected)" || echo "validation")
say "GPU $mode: $(date -u '+%Y-%m-%d %H:%M UTC'), pack $(cat "$here/pack-id"), deadline ${deadline} s, budgets x$scale"

# ---- Unpacking: once per pack into a temporary folder; a rerun on the same machine reuses it.
U=${GPURUN_UNPACK_DIR:-${TMPDIR:-/tmp}/chainermn-gpurun-$(cat "$here/pack-id")}
if [[ ! -f $U/.complete ]]; then
  tmp=$(mktemp -d "$U.XXXXXX") || { say "unpack: cannot create a folder beside $U"; exit 1; }
  if command -v xz >/dev/null; then
    xz -dc "$here/payload.tar.xz" | tar -C "$tmp" -xf -
  else  # Python's tarfile reads xz without the xz program
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1], "r:xz").extractall(sys.argv[2])' "$here/payload.tar.xz" "$tmp"
  fi || { say "unpack: cannot unpack $here/payload.tar.xz into $tmp"; exit 1; }
  : >"$tmp/.complete"
  mv -T "$tmp" "$U" 2>/dev/null || rm -rf "$tmp"  # another call was quicker
fi
say "unpacked: $U ($(du -sh "$U" | cut -f1)) in $((SECONDS - start)) s"
R=$U/runs
mkdir -p "$R"
# shellcheck disable=SC1091
source "$U/devrt/env.sh" || { say "devrt/env.sh failed"; exit 1; }
export LD_LIBRARY_PATH="$U/lib:$LD_LIBRARY_PATH" U R PYTHONUNBUFFERED=1
# A hang (NCCL's initialization, an MPI singleton, a collective) ends a program within a minute
# instead of eating the lease.
export CHAINERMN_TIMEOUT=60

# ---- Planning: stages A and B in table order while their budgets fit; the rest is next lease's.
declare -A earlier=()
if [[ -n $continue_from ]]; then
  [[ -f $continue_from ]] || { say "--continue: no file $continue_from"; exit 2; }
  while read -r n st _; do [[ $st == pass ]] && earlier[$n]=1; done <"$continue_from"
fi
planned=0 next_lease=()
declare -A plan=()
for i in "${!names[@]}"; do
  n=${names[i]}
  [[ -z $only || $only == *",$n,"* ]] || continue
  [[ -z ${earlier[$n]:-} ]] || continue
  if [[ ${stages[i]} == X ]]; then plan[$n]=extra; continue; fi
  if ((planned + budgets[i] <= deadline)); then
    plan[$n]=run
    planned=$((planned + budgets[i]))
  else
    next_lease+=("$n")
  fi
done
say "planned: $planned s of budgets in stages A and B; the deadline is ${deadline} s from the start"

# ---- The runner
no_gpu='skipped: no CUDA device|no GPU:|CUDA driver version is insufficient|no NVIDIA driver|cudaGetDeviceCount'
failures=0
for i in "${!names[@]}"; do
  n=${names[i]} kind=${kinds[i]} budget=${budgets[i]}
  if [[ -n ${earlier[$n]:-} ]]; then
    status=pass rc=0 took=0 note="passed in an earlier call"
  elif [[ -z ${plan[$n]:-} ]]; then
    continue
  else
    left=$((deadline - (SECONDS - start)))
    if ((budget > left)); then
      status=skipped rc=- took=0 note="the deadline is near (${left} s left, budget ${budget} s)"
    else
      echo "===== $n (stage ${stages[i]}, budget ${budget} s, $((SECONDS - start)) s in)" >>"$log"
      t0=$SECONDS
      timeout -k 5 "$budget" bash "$self" --run-step "$n" >"$R/$n.out" 2>&1
      rc=$?
      took=$((SECONDS - t0))
      cat "$R/$n.out" >>"$log"
      # Whatever a killed step left behind (MPI ranks in other process groups).
      pkill -KILL -f -- "$U/bin/" 2>/dev/null
      pkill -KILL -f -- "$U/peers/" 2>/dev/null
      said_no_gpu=$(grep -Em1 -- "$no_gpu" "$R/$n.out")
      note=""
      if ((rc == 124 || rc == 137)); then
        status=FAIL note="ran out of its budget (${budget} s)"
      elif [[ $kind != host ]] && { ((rc == 77)) || [[ -n $said_no_gpu ]]; }; then
        if ((rehearse)); then
          status=no-gpu note=$(echo "${said_no_gpu:-exit 77}" | cut -c1-120)
        else
          # Here a GPU is expected: 77 (skipped) means the CUDA plugin or the device was not usable.
          status=FAIL note="no GPU seen: $(echo "${said_no_gpu:-exit 77}" | cut -c1-200)"
        fi
      elif ((rc == 0)); then
        status=pass
        if ((rehearse)) && [[ $kind != host ]]; then status=FAIL note="passed without a GPU"; fi
      else
        status=FAIL note="exit $rc: $(grep -Ev '^\s*$' "$R/$n.out" | grep -Ei 'error|fail|abort' | tail -n 1 | cut -c1-200)"
      fi
      # What the figures and checks are, on the step's own line.
      case $n in
        timings) note+=$(grep -E '^(a sum of 10M floats|channel sums of)' "$R/$n.out" | sed 's/^/ /' | tr '\n' ';') ;;
        profile_*) note+=$(grep -E '^profiled:' "$R/$n.out" | tail -n 1 | sed 's/^/ /') ;;
        torch_fused_*) note+=$(grep -E '^torch peak' "$R/$n.out" | sed 's/^/ /')"; "$(grep -E '^\{' "$R/$n.out" | tail -n 1 | grep -oE '"mean_train_s_excl_first": [0-9.]+') ;;
        memcheck) note+=$(grep -E 'ERROR SUMMARY' "$R/$n.out" | tail -n 1 | sed 's/^=* */ /') ;;
        bench_*|torch_*|lstm_gpu|seq2seq_gpu) note+=$(grep -E '^\{' "$R/$n.out" | tail -n 1 | sed 's/^/ /') ;;
        mlp_*|cnn_gpu|model_parallel|ensemble) note+=$(grep -E '^ *[0-9]+ ' "$R/$n.out" | tail -n 1 | tr -s ' ' | sed 's/^/ last epoch:/') ;;
      esac
      [[ $n == mlp_* || $n == cnn_gpu ]] && [[ $status == pass ]] && note+=" (eager steps: the multi-node optimizer is not captured)"
    fi
  fi
  [[ $status == FAIL ]] && failures=$((failures + 1))
  echo "$n $status $rc $took" >>"$state"
  say "$(printf '%-22s %-7s %4s s of %3d  %s' "$n" "$status" "$took" "$budget" "$note")"
done
((${#next_lease[@]})) && say "next lease (did not fit the deadline): ${next_lease[*]}"

# ---- What comes back: the device tool returns at most 8 files of at most 16 MiB from $OUT.
if (($(stat -c %s "$log") > 15 * 1048576)); then
  tail -c $((15 * 1048576)) "$log" >"$log.tail" && mv "$log.tail" "$log"
fi
files=$(find "$out" -type f | wc -l)
say "to come back: $files files in $out: $(find "$out" -type f -printf '%f %s B, ' | sed 's/, $//')"
if ((files > 8)); then say "ERROR: more than 8 files in $out: the device tool would leave some behind"; failures=$((failures + 1)); fi
say "done in $((SECONDS - start)) s: $failures failed"
((failures == 0))
