#!/usr/bin/env bash
# Sets up, builds, runs the whole test suite, and ends with the line "N passed, N failed"
# computed from meson's per-test results (skipped tests, if any, are counted on the line before).
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || { echo "0 passed, 1 failed"; exit 1; }

rm -f build/meson-logs/testlog.json
meson test -C build --print-errorlogs "$@"
status=$?
python3 - build/meson-logs/testlog.json <<'PY'
import json, sys
passed = failed = skipped = 0
try:
    with open(sys.argv[1]) as f:
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
    failed = 1
if skipped:
    print(f"{skipped} skipped")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed or passed == 0 else 0)
PY
summary=$?
exit $(( status != 0 || summary != 0 ))
