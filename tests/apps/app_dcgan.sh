#!/usr/bin/env bash
# train_dcgan (ChainerMN's DCGAN example) as users launch it, on a subset (200 training images,
# narrow networks: --ch 32, 6 iterations of 10 images): alone, with a snapshot and a preview
# every 2 iterations, then resumed from iteration 4 to 6, which must give the uninterrupted run's
# losses and preview exactly; and under mpiexec -n 2 (output, preview and model snapshots from
# rank 0 only, a trainer snapshot per rank), resumed too, exactly. The
# previews must be 10x10 grids of 32x32 gray images (320x320 8-bit PNG), the log must hold finite
# gen/loss and dis/loss at every display interval; bad options fail with a clear message. Then
# CIFAR-10 (--dataset cifar10) on a small archive in the real format (tests/apps/write_cifar.py):
# colour previews. Without Fashion-MNIST it is skipped.
#   tests/apps/app_dcgan.sh MPIEXEC TRAIN_DCGAN
set -u
mpiexec=${1:?usage: app_dcgan.sh MPIEXEC TRAIN_DCGAN}
app=${2:?}
source "$(dirname "$0")/../lib.sh"
app=$(absolute "$app")

find_fashion_mnist
scratch app_dcgan
export MPIEXEC_TIMEOUT=120
small=(--data "$fashion_mnist" --train-size 200 --ch 32 -b 10 --snapshot_interval 2 --display_interval 2 --no-plot)

# check_run NAME DIR ITERATIONS [CHANNELS]: DIR/log has one entry per 2 iterations up to
# ITERATIONS, with finite losses; DIR/preview has a 320x320 PNG for each (gray, or RGB for
# CHANNELS 3), and the snapshots of the last.
check_run() {
  python3 - "$@" <<'EOF' || failures=$((failures + 1))
import json, math, struct, sys, zlib
name, out, iterations = sys.argv[1], sys.argv[2], int(sys.argv[3])
channels = int(sys.argv[4]) if len(sys.argv) > 4 else 1
colour_type = {1: 0, 3: 2}[channels]
problems = []
try:
    log = json.load(open(f"{out}/log"))
except Exception as e:
    log = []
    problems.append(f"no readable log: {e}")
its = [e.get("iteration") for e in log]
if its != list(range(2, iterations + 1, 2)):
    problems.append(f"log iterations {its}, expected every 2nd up to {iterations}")
for e in log:
    for key in ("gen/loss", "dis/loss"):
        if not isinstance(e.get(key), float) or not math.isfinite(e[key]):
            problems.append(f"iteration {e.get('iteration')}: {key} = {e.get(key)}")
for it in range(2, iterations + 1, 2):
    path = f"{out}/preview/image{it:08d}.png"
    try:
        data = open(path, "rb").read()
    except OSError:
        problems.append(f"no {path}")
        continue
    # Signature, then IHDR: width, height, bit depth 8, colour type 0 (gray) or 2 (RGB).
    width, height, depth, colour = struct.unpack(">IIBB", data[16:26])
    if data[:8] != b"\x89PNG\r\n\x1a\n" or (width, height, depth, colour) != (320, 320, 8, colour_type):
        problems.append(f"{path}: {width}x{height}, depth {depth}, colour type {colour}")
    else:
        # Whole: its IDAT data inflate to 320 rows of a filter byte and 320 pixels. (After a few
        # iterations the images are still nearly uniform gray: sigmoid of small values.)
        idat = b"".join(data[i + 8:i + 8 + struct.unpack(">I", data[i:i + 4])[0]]
                        for i in range(8, len(data) - 12) if data[i + 4:i + 8] == b"IDAT")
        try:
            size = len(zlib.decompress(idat))
        except zlib.error as e:
            size = f"corrupt ({e})"
        if size != 320 * (1 + 320 * channels):
            problems.append(f"{path}: its pixel data inflate to {size} bytes, "
                            f"expected {320 * (1 + 320 * channels)}")
if problems:
    print(f"FAIL: {name}: " + "; ".join(problems))
    sys.exit(1)
print(f"ok: {name}: {len(log)} log entries, previews and snapshots")
EOF
  for f in "gen_iter_$3.npz" "dis_iter_$3.npz"; do [ -f "$2/$f" ] || fail "$1: no $2/$f: $(ls "$2")"; done
}

"$app" -h >"$tmp/out" 2>&1 || fail "-h exited with $?"
grep -q "^usage: train_dcgan" "$tmp/out" && grep -q -- "--n_hidden" "$tmp/out" &&
  grep -q -- "--snapshot_interval" "$tmp/out" ||
  fail "-h: the usage lacks the example's options: $(head -c 600 "$tmp/out")"
expect_app_error "an unknown --dataset" "--dataset must be fashion-mnist or cifar10, got 'svhn'" --dataset svhn
expect_app_error "--ch not a multiple of 8" "--ch must be a multiple of 8, got 12" --ch 12
expect_app_error "batch size 0" "-b/--batchsize" -b 0

# One process, 6 iterations; then 4, resumed to 6: the same losses and the same preview.
if "$app" "${small[@]}" --iteration 6 -o r1 >"$tmp/out" 2>"$tmp/err"; then
  grep -q "gen/loss" "$tmp/out" || fail "1 process: no report printed"
  check_run "1 process" r1 6
  [ -f r1/snapshot_iter_6 ] || fail "1 process: no r1/snapshot_iter_6: $(ls r1)"
else
  fail "1 process: exited with $?: $(tail -c 400 "$tmp/err")"
fi
if "$app" "${small[@]}" --iteration 4 -o r1r >"$tmp/out" 2>"$tmp/err" &&
  "$app" "${small[@]}" --iteration 6 -o r1r -r r1r/snapshot_iter_4 >"$tmp/out" 2>"$tmp/err"; then
  check_run "1 process, resumed" r1r 6
  python3 -c '
import json, sys
a, b = (json.load(open(f"{d}/log"))[-1] for d in sys.argv[1:])
sys.exit(0 if (a["gen/loss"], a["dis/loss"]) == (b["gen/loss"], b["dis/loss"]) else 1)' r1 r1r ||
    fail "1 process, resumed: the losses at iteration 6 differ from the uninterrupted run's"
  cmp -s r1/preview/image00000006.png r1r/preview/image00000006.png ||
    fail "1 process, resumed: the preview of iteration 6 differs from the uninterrupted run's"
else
  fail "1 process, 4 then resumed to 6: exited with $?: $(tail -c 400 "$tmp/err")"
fi

# Two processes: each trains on its half; rank 0 alone prints and writes the previews and model
# snapshots, every rank its trainer snapshot; resumed from iteration 4.
if job "2 processes" 2 "$app" "${small[@]}" --iteration 4 -o r2; then
  check_run "2 processes" r2 4
  for r in 0 1; do [ -f "r2/snapshot_iter_4.rank$r-of-2" ] || fail "no r2/snapshot_iter_4.rank$r-of-2: $(ls r2)"; done
  if job "2 processes, resumed" 2 "$app" "${small[@]}" --iteration 6 -o r2 -r r2/snapshot_iter_4; then
    check_run "2 processes, resumed" r2 6
  fi
fi

# Mixed precision: the GAN's two optimizers under mixed16 (each its own loss scale).
job "2 processes, --dtype mixed16" 2 "$app" "${small[@]}" --iteration 4 --dtype mixed16 -o rm &&
  check_run "2 processes, --dtype mixed16" rm 4

# Two processes resume exactly too: r2's 4 + 2 iterations against 6 in one go. (The ranks share
# one copy of the parameters on this host; the resumed one binds them into it before its first
# forward, so that the generator's backward sees the discriminator's step, as uninterrupted.)
if job "2 processes, 6 iterations" 2 "$app" "${small[@]}" --iteration 6 -o p2; then
  python3 -c '
import json, sys
a, b = (json.load(open(f"{d}/log"))[-1] for d in sys.argv[1:])
sys.exit(0 if (a["gen/loss"], a["dis/loss"]) == (b["gen/loss"], b["dis/loss"]) else 1)' p2 r2 ||
    fail "2 processes, resumed: the losses at iteration 6 differ from the uninterrupted run's"
  cmp -s p2/preview/image00000006.png r2/preview/image00000006.png ||
    fail "2 processes, resumed: the preview of iteration 6 differs from the uninterrupted run's"
fi

# CIFAR-10, the example's data, on a small archive: colour previews.
python3 "$tests_dir/apps/write_cifar.py" "$tmp/cifar" 8 8 || fail "write_cifar.py failed"
if "$app" --dataset cifar10 --data "$tmp/cifar/cifar-10-binary.tar.gz" --ch 32 -b 10 --snapshot_interval 2 \
  --display_interval 2 --no-plot --iteration 2 -o c1 >"$tmp/out" 2>"$tmp/err"; then
  check_run "cifar10" c1 2 3
else
  fail "cifar10: exited with $?: $(tail -c 400 "$tmp/err")"
fi

finish
