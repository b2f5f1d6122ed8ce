#!/usr/bin/env bash
# The GPU validation rehearsed without a GPU: scripts/gpu_prepare.sh packs this build, and the
# packed validate.sh runs here, where every GPU step must say "no GPU" and the plumbing must
# work: the size limit of what travels, unpacking, the library check, the step runner, the
# deadline and the next-lease list, --continue from a state file, exit 77 as a failure where a
# GPU is expected, the files that would come back, and the verbose rerun of failed Catch2 cases
# (a real Catch2 binary reads the names the report parser writes).
#   tests/gpu_rehearsal.sh SOURCE_ROOT BUILD_ROOT
set -u
source "$(dirname "$0")/lib.sh"
src=$(absolute "${1:?usage: gpu_rehearsal.sh SOURCE_ROOT BUILD_ROOT}")
build=$(absolute "${2:?usage: gpu_rehearsal.sh SOURCE_ROOT BUILD_ROOT}")
shared=${SHARED_DIR:-$src/../shared}
if [[ ! -f $build/libchainer_cuda.so ]]; then echo "skipped: this build has no CUDA backend"; exit 77; fi
if [[ ! -x $shared/device/bundle-runtime ]]; then echo "skipped: no $shared/device/bundle-runtime"; exit 77; fi
scratch gpu_rehearsal
export SHARED_DIR=$shared GPURUN_UNPACK_DIR=$tmp/unpacked

# -- Packing: under the limit, and a limit it passes names the biggest parts.
if ! (cd "$src" && bash scripts/gpu_prepare.sh --from "$build" --out "$tmp/pack") >"$tmp/prepare" 2>&1; then
  fail "gpu_prepare.sh: $(tail -n 12 "$tmp/prepare")"
  finish
fi
grep -E 'travels .*limit 48 MiB' "$tmp/prepare" && echo "ok: the pack is under 48 MiB"
if (cd "$src" && bash scripts/gpu_prepare.sh --check-size "$tmp/pack" --limit-mib 10) >"$tmp/out" 2>"$tmp/err"; then
  fail "a 10 MiB limit passed: $(cat "$tmp/out")"
elif ! grep -q 'over the limit of 10 MiB' "$tmp/err" || ! grep -q 'payload.tar.xz' "$tmp/err" || ! grep -q 'libmpich' "$tmp/err"; then
  fail "the size error does not name the biggest parts: $(cat "$tmp/err")"
else
  echo "ok: over a limit, it names the biggest parts ($(sed -n 2p "$tmp/err" | xargs))"
fi

validate=$tmp/pack/validate.sh
rows=$(bash "$validate" --list | wc -l)
budgets=$(bash "$validate" --list | awk '$2 != "X" { s += $3 } END { print s }')
if ((budgets > 480)); then fail "stages A and B budget $budgets s, more than the 8 minutes of the default deadline"; fi

# -- The whole rehearsal: every GPU step says "no GPU", the host steps pass.
t0=$SECONDS
OUT=$tmp/out1 bash "$validate" --rehearse >"$tmp/log1" 2>&1
rc=$? took=$((SECONDS - t0))
[[ $rc == 0 ]] || fail "validate.sh --rehearse exited $rc: $(tail -n 20 "$tmp/log1")"
((took < 60)) || fail "the rehearsal took $took s, more than a minute"
[[ $(wc -l <"$tmp/out1/state.txt") == "$rows" ]] || fail "state.txt has $(wc -l <"$tmp/out1/state.txt") lines, the table $rows rows"
while read -r name stage budget kind; do
  status=$(awk -v n="$name" '$1 == n { print $2 }' "$tmp/out1/state.txt")
  want=$([[ $kind == host ]] && echo pass || echo no-gpu)
  [[ $status == "$want" ]] || fail "$name ($kind): $status, expected $want: $(grep "^$name " "$tmp/out1/summary.txt")"
done < <(bash "$validate" --list | awk '{ print $1, $2, $3, $5 }')
grep -q '^to come back: 3 files' "$tmp/out1/summary.txt" || fail "not 3 files to come back: $(grep 'come back' "$tmp/out1/summary.txt")"
grep -q 'OK: .* ELF files checked, nothing unresolved' "$tmp/out1/validate.log" || fail "the library check did not pass"
grep -q 'NCCL: ' "$tmp/out1/validate.log" && grep -q 'cuDNN: ' "$tmp/out1/validate.log" ||
  fail "the library check printed no NCCL and cuDNN versions"
echo "ok: the rehearsal ran $rows steps in $took s ($(grep -c ' no-gpu ' "$tmp/out1/summary.txt") said no GPU)"

# -- The deadline: what does not fit goes to the next lease; an extra too long for what is left is skipped.
OUT=$tmp/out2 bash "$validate" --rehearse --deadline 35 --only libcheck,test_cuda_training,gpu_nccl,torch_compile >"$tmp/log2" 2>&1
grep -q '^next lease (did not fit the deadline): test_cuda_training$' "$tmp/out2/summary.txt" ||
  fail "no next-lease list naming test_cuda_training: $(cat "$tmp/out2/summary.txt")"
grep -Eq '^torch_compile +skipped .*the deadline is near' "$tmp/out2/summary.txt" ||
  fail "torch_compile (90 s) was not skipped with 35 s of deadline: $(grep torch_compile "$tmp/out2/summary.txt")"
grep -Eq '^gpu_nccl +no-gpu' "$tmp/out2/summary.txt" || fail "gpu_nccl did not run inside the deadline"
echo "ok: a 35 s deadline plans libcheck and gpu_nccl, leaves test_cuda_training to the next lease, skips torch_compile"

# -- --continue: steps an earlier call passed are not run again.
printf 'libcheck pass 0 1\ngpu_nccl FAIL 1 3\n' >"$tmp/state"
OUT=$tmp/out3 bash "$validate" --rehearse --continue "$tmp/state" --only libcheck,gpu_nccl >"$tmp/log3" 2>&1
grep -Eq '^libcheck +pass .*passed in an earlier call' "$tmp/out3/summary.txt" || fail "libcheck ran again"
grep -q '===== libcheck' "$tmp/out3/validate.log" && fail "libcheck's output is in the log of the continued call"
grep -Eq '^gpu_nccl +no-gpu' "$tmp/out3/summary.txt" || fail "gpu_nccl, failed earlier, did not run again"
echo "ok: --continue runs only what an earlier call did not pass"

# -- Where a GPU is expected, "skipped" (exit 77) is a failure.
if OUT=$tmp/out4 bash "$validate" --only test_cuda_ops >"$tmp/log4" 2>&1; then
  fail "validate.sh without --rehearse passed with no GPU"
else
  grep -Eq '^test_cuda_ops +FAIL .*no GPU seen' "$tmp/out4/summary.txt" || fail "no 'no GPU seen' failure: $(cat "$tmp/out4/summary.txt")"
  echo "ok: without --rehearse, exit 77 fails the step"
fi

# -- The report parser against a real Catch2 binary: failed cases' names, commas included, rerun alone.
cases=("tensor: creation, shape and element access" "tensor: views share storage")
"$build/tests/test_tensor" "${cases[0]//,/\\,},${cases[1]}" -r xml -o "$tmp/report.xml" >/dev/null
sed -i '0,/<OverallResult success="true"/s//<OverallResult success="false"/' "$tmp/report.xml"  # the first case "failed"
python3 "$src/scripts/catch_failures.py" "$tmp/failed" "$tmp/report.xml" >"$tmp/parsed"
[[ $? == 1 ]] || fail "catch_failures.py did not report a failure"
grep -qF "FAILED: ${cases[0]}" "$tmp/parsed" || fail "the parser did not name the failed case: $(cat "$tmp/parsed")"
"$build/tests/test_tensor" -f "$tmp/failed" --list-test-names-only >"$tmp/rerun"
[[ $(grep -c . "$tmp/rerun") == 1 ]] && grep -qxF "${cases[0]}" "$tmp/rerun" ||
  fail "test_tensor -f did not select exactly the failed case: $(cat "$tmp/rerun")"
cut_at=$(grep -bo '<OverallResult success' "$tmp/report.xml" | sed -n 2p | cut -d: -f1)
head -c "$cut_at" "$tmp/report.xml" >"$tmp/truncated.xml"  # the binary "died" inside the second case
python3 "$src/scripts/catch_failures.py" "$tmp/failed2" "$tmp/truncated.xml" | grep -q 'the report stops inside this case' ||
  fail "a truncated report does not name the case it stopped in"
echo "ok: the failed cases of a Catch2 report rerun alone"

finish
