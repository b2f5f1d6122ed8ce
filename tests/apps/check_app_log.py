#!/usr/bin/env python3
"""Checks an app's JSON log (the LogReport's DIR/log) for the app tests:
  check_app_log.py NAME DIR EPOCHS MIN_ACCURACY [KEY...]
DIR/log has one entry per epoch 1..EPOCHS, each with the report's keys (and KEYs), and the last
one's validation/main/accuracy is at least MIN_ACCURACY. Prints "ok: ..." or exits with "FAIL: ..."."""
import json
import sys

name, path, epochs, min_acc, extra = (sys.argv[1], sys.argv[2] + "/log", int(sys.argv[3]), float(sys.argv[4]),
                                      sys.argv[5:])
try:
    log = json.load(open(path))
except Exception as e:
    sys.exit(f"FAIL: {name}: cannot read {path}: {e}")
if [e.get("epoch") for e in log] != list(range(1, epochs + 1)):
    sys.exit(f"FAIL: {name}: log epochs {[e.get('epoch') for e in log]}, expected 1..{epochs}")
keys = ["epoch", "iteration", "elapsed_time", "main/loss", "main/accuracy", "validation/main/loss",
        "validation/main/accuracy"] + extra
for e in log:
    missing = [k for k in keys if k not in e]
    if missing:
        sys.exit(f"FAIL: {name}: log entry of epoch {e['epoch']} lacks {missing}: {sorted(e)}")
acc = log[-1]["validation/main/accuracy"]
if not acc >= min_acc:
    sys.exit(f"FAIL: {name}: validation/main/accuracy {acc} < {min_acc}")
print(f"ok: {name}: {epochs} epoch(s) logged, test accuracy {acc:.4f}")
