#!/usr/bin/env bash
# Sets up, builds, runs the whole test suite, and ends with the line "N passed, N failed"
# computed from meson's per-test results (skipped tests, if any, are counted on the line before).
# When the main build has the CUDA backend, the suite runs a second time in a build configured
# with -Dcuda=disabled (build-nocuda/), so both kinds of build are tested.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || { echo "0 passed, 1 failed"; exit 1; }

logs=(build/meson-logs/testlog.json)
rm -f build/meson-logs/testlog.json build-nocuda/meson-logs/testlog.json
meson test -C build --print-errorlogs "$@"
status=$?
if [[ -f build/libchainer_cuda.so ]]; then
  echo "== the same suite in a build without CUDA (-Dcuda=disabled, build-nocuda/)"
  if [[ ! -f build-nocuda/build.ninja ]]; then
    meson setup build-nocuda --buildtype=release -Dcuda=disabled -Dbenchmarks=false >/tmp/chainermn-nocuda-setup.log 2>&1 ||
      cat /tmp/chainermn-nocuda-setup.log >&2
  fi
  logs+=(build-nocuda/meson-logs/testlog.json)
  if ninja -C build-nocuda >/tmp/chainermn-nocuda-build.log 2>&1; then
    meson test -C build-nocuda --print-errorlogs "$@" || status=1
  else
    tail -n 40 /tmp/chainermn-nocuda-build.log >&2
    status=1
  fi
fi
python3 - "${logs[@]}" <<'PY'
import json, sys
passed = failed = skipped = 0
for path in sys.argv[1:]:
    try:
        with open(path) as f:
            for line in f:
                if not line.strip():
                    continue
                result = json.loads(line)["result"]
                if result in ("OK", "EXPECTEDFAIL"):
                    passed += 1
                elif result == "SKIP":
                    skipped += 1
                else:
                    failed += 1
    except FileNotFoundError:
        failed += 1
if skipped:
    print(f"{skipped} skipped")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed or passed == 0 else 0)
PY
summary=$?
exit $(( status != 0 || summary != 0 ))
