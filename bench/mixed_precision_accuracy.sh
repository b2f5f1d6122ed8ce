#!/usr/bin/env bash
# Mixed precision's accuracy: the tutorial MLP (apps/mnist_mlp) and the Fashion-MNIST CNN
# (apps/fashion_mnist_cnn) trained with each --dtype from the same seed for the same epochs, one
# after the other on one process; prints each run's final test accuracy, its difference from
# float32's, and the mean training seconds per epoch (--timing). Mixed precision is expected to
# land within 0.3 points of float32 (the seed-to-seed spread of these models is about 0.1-0.2).
#   bash bench/mixed_precision_accuracy.sh [--mlp-epochs 20] [--cnn-epochs 3] [--threads 2] [--seed 0]
#        [--dtypes "float32 mixed16 mixed_bf16"] [--only mlp|cnn]
set -euo pipefail
cd "$(dirname "$0")/.."
mlp_epochs=20 cnn_epochs=3 threads=2 seed=0 dtypes="float32 mixed16 mixed_bf16" only=""
while (($#)); do
  case $1 in
    --mlp-epochs) mlp_epochs=$2; shift 2 ;;
    --cnn-epochs) cnn_epochs=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --dtypes) dtypes=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    *) echo "usage: mixed_precision_accuracy.sh [--mlp-epochs N] [--cnn-epochs N] [--threads N] [--seed N]" \
         "[--dtypes \"LIST\"] [--only mlp|cnn]" >&2
       exit 2 ;;
  esac
done
for app in mnist_mlp fashion_mnist_cnn; do
  [[ -x build/apps/$app ]] || { echo "mixed_precision_accuracy.sh: build/apps/$app is not built" >&2; exit 1; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p') (family $(lscpu | sed -n 's/^CPU family: *//p')), $(nproc) cores;" \
  "$(date -u '+%F %H:%M') UTC; CHAINER_CPU_ISA=${CHAINER_CPU_ISA:-(the best)}; seed $seed, $threads threads"
printf '%-18s %-11s %6s %9s %8s %10s\n' app dtype epochs accuracy "vs f32" "s/epoch"
# One run: APP DTYPE EPOCHS; prints its row (against float32's accuracy, in $out/APP.float32.acc).
run() {
  local app=$1 dtype=$2 epochs=$3 dir="$out/$1.$2"
  "build/apps/$app" -e "$epochs" --seed "$seed" --threads "$threads" --dtype "$dtype" --timing --no-plot -o "$dir" \
    > "$dir.out" 2>&1 || { echo "$app --dtype $dtype failed:"; tail -5 "$dir.out"; return 1; }
  python3 - "$dir/log" "$app" "$dtype" "$epochs" "$out/$app.float32.acc" "$dir.acc" <<'EOF'
import json, sys
import os
log, app, dtype, epochs, base_file, acc_file = sys.argv[1:7]
base = open(base_file).read() if os.path.exists(base_file) else ""
entries = json.load(open(log))
last = entries[-1]
acc = last["validation/main/accuracy"]
times = [e["train_time"] for e in entries if "train_time" in e]
diff = "" if not base else f"{100 * (acc - float(base)):+.2f} pt"
print(f"{app:<18} {dtype:<11} {epochs:>6} {acc:>9.4f} {diff:>8} {sum(times) / max(len(times), 1):>10.2f}")
open(acc_file, "w").write(str(acc))
EOF
}
for app in mnist_mlp fashion_mnist_cnn; do
  [[ $only == mlp && $app != mnist_mlp ]] && continue
  [[ $only == cnn && $app != fashion_mnist_cnn ]] && continue
  epochs=$([[ $app == mnist_mlp ]] && echo "$mlp_epochs" || echo "$cnn_epochs")
  for dtype in $dtypes; do run "$app" "$dtype" "$epochs"; done
done
