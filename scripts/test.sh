#!/usr/bin/env bash
# Sets up, builds, runs the whole test suite, and ends with the line "N passed, N failed"
# computed from meson's per-test results (skipped tests, if any, are counted on the line before),
# after a table of the slowest tests.
# When the main build has the CUDA backend, what the CUDA option changes (meson's suite
# 'portable': the unit tests, an MNIST epoch, mnist_mlp's errors and its NCCL refusal,
# chainermn_check, the installed library) runs a second time in a build configured with
# -Dcuda=disabled (build-nocuda/), which builds only what those tests need; ccache makes its
# objects the first build's (core/meson.build). Arguments go to both `meson test` runs.
set -uo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
bash scripts/setup.sh || { echo "0 passed, 1 failed"; exit 1; }
export CCACHE_DIR=${CCACHE_DIR:-$PWD/.ccache}  # as setup.sh's
built=$SECONDS

logs=(build/meson-logs/testlog.json)
rm -f build/meson-logs/testlog.json build-nocuda/meson-logs/testlog.json
meson test -C build --print-errorlogs "$@"
status=$?
if [[ -f build/libchainer_cuda.so ]]; then
  echo "== what the CUDA option changes, in a build without CUDA (-Dcuda=disabled, build-nocuda/)"
  if [[ ! -f build-nocuda/build.ninja ]]; then
    meson setup build-nocuda --buildtype=release -Dcuda=disabled -Dbenchmarks=false >/tmp/chainermn-nocuda-setup.log 2>&1 ||
      cat /tmp/chainermn-nocuda-setup.log >&2
  fi
  logs+=(build-nocuda/meson-logs/testlog.json)
  meson test -C build-nocuda --suite portable --print-errorlogs "$@" || status=1
fi
python3 - "$((built - started))" "$((SECONDS - built))" "${logs[@]}" <<'PY'
import json, sys
setup_s, tests_s, paths = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
passed = failed = skipped = 0
rows = []
for path in paths:
    build = path.split("/")[0]
    try:
        with open(path) as f:
            for line in f:
                if not line.strip():
                    continue
                test = json.loads(line)
                result = test["result"]
                rows.append((test["duration"], f"{build}: {test['name']}", result))
                if result in ("OK", "EXPECTEDFAIL"):
                    passed += 1
                elif result == "SKIP":
                    skipped += 1
                else:
                    failed += 1
    except FileNotFoundError:
        print(f"no results in {path}: the build or the test run failed")
        failed += 1
rows.sort(reverse=True)
print(f"\nThe slowest tests ({len(rows)} in all, {sum(r[0] for r in rows):.0f} s together):")
for duration, name, result in rows[:10]:
    print(f"  {duration:7.1f} s  {name}  {result}")
print(f"Set-up and main build: {setup_s} s; the tests, with the second build: {tests_s} s")
if skipped:
    print(f"{skipped} skipped")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed or passed == 0 else 0)
PY
summary=$?
exit $(( status != 0 || summary != 0 ))
