#!/usr/bin/env bash
# train_imagenet's whole training loop (decode + augment + step) against the same network, data
# pipeline and optimizer in PyTorch with torchvision (bench/peers/train_imagenet_torch.py: PIL
# decoding, a DataLoader with the same number of workers), one after the other in each round, 1
# process x 2 threads each, on Fashion-MNIST written as PNG files by export_images. Each engine
# trains WARMUP + EPOCHS epochs and the first WARMUP are dropped; per engine the training images
# per second of the kept epochs (evaluation excluded), the last validation accuracy and the
# peak RSS, then ours / PyTorch; below, per kept epoch and engine, the seconds the training loop
# waited for batches (data_wait) and the rest (step: forward, backward, update).
#   bash bench/compare_imagenet.sh [--arch nin] [--insize 40] [--size 48] [--scale 1] [--train-size 6000]
#                                  [--epochs 1] [--warmup 1] [--loaderjob 2] [--rounds 1]
set -euo pipefail
cd "$(dirname "$0")/.."
arch=nin insize=40 size=48 scale=1 train_size=6000 epochs=1 warmup=1 loaderjob=2 rounds=1
while (($#)); do
  case $1 in
    --arch) arch=$2 ;; --insize) insize=$2 ;; --size) size=$2 ;; --scale) scale=$2 ;;
    --train-size) train_size=$2 ;; --epochs) epochs=$2 ;; --warmup) warmup=$2 ;;
    --loaderjob) loaderjob=$2 ;; --rounds) rounds=$2 ;;
    *) echo "compare_imagenet.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
for p in export_images compute_mean train_imagenet; do
  [[ -x build/apps/$p ]] || { echo "compare_imagenet.sh: build/apps/$p is not built (ninja -C build)" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
build/apps/export_images --out "$work/img" --size "$size" --scale "$scale" --train-size "$train_size" \
  --test-size $((train_size / 6)) >/dev/null
build/apps/compute_mean "$work/img/train.txt" --root "$work/img" --output "$work/img/mean.npy" >/dev/null 2>&1
total=$((warmup + epochs))
args=("$work/img/train.txt" "$work/img/val.txt" --root "$work/img" --mean "$work/img/mean.npy" --arch "$arch"
  --insize "$insize" --n-class 10 --batchsize 32)
echo "# machine: $(lscpu | sed -n 's/^Model name: *//p') (family $(lscpu | sed -n 's/^CPU family: *//p'), model $(lscpu | sed -n 's/^Model: *//p')), $(nproc) cores; $(date -u '+%F %H:%M') UTC"
echo "# $arch at $insize from $size x $size PNG files, $train_size training images, batch 32, $loaderjob loader workers, $total epoch(s) per engine, the first $warmup dropped"
printf "\n%-6s %12s %12s | %7s %7s | %8s %8s | %7s\n" round ours torch acc_o acc_t rss_o rss_t "o/t"
for ((r = 1; r <= rounds; ++r)); do
  bench/peers/run-cnn-peer train_imagenet "${args[@]}" --epoch "$total" --loaderjob "$loaderjob" --threads 2 \
    >"$work/torch.$r" 2>"$work/torch.err" || { tail -n 20 "$work/torch.err" >&2; exit 1; }
  build/apps/train_imagenet "${args[@]}" -E "$total" -j "$loaderjob" --threads 2 --timing --communicator naive \
    -o "$work/ours.$r" >/dev/null 2>"$work/ours.err" || { tail -n 20 "$work/ours.err" >&2; exit 1; }
  python3 - "$work" "$r" "$warmup" "$train_size" <<'PY'
import json, sys
work, r, warmup, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
ours = json.load(open(f"{work}/ours.{r}/log"))
o_rate = sum(n / e["train_time"] for e in ours[warmup:]) / len(ours[warmup:])
lines = open(f"{work}/torch.{r}").read().splitlines()
epochs = [dict(zip(l.split()[0::2], l.split()[1::2])) for l in lines if l.startswith("epoch ")]
summary = json.loads(next(l for l in reversed(lines) if l.startswith("{")))
t_rate = sum(float(e["images_per_s"]) for e in epochs[warmup:]) / len(epochs[warmup:])
print(f"{r:<6} {o_rate:8.1f} i/s {t_rate:8.1f} i/s | {ours[-1]['validation/main/accuracy']:7.4f} "
      f"{float(epochs[-1]['val_acc']):7.4f} | {ours[-1]['peak_rss_mib']:8.0f} {summary['peak_rss_mib']:8.0f} | "
      f"{o_rate / t_rate:7.2f}")
print("  ours per epoch:  " + "; ".join(f"data_wait {e['data_time']:.3f} s, step {e['train_time'] - e['data_time']:.3f} s"
                                       for e in ours[warmup:]))
print("  torch per epoch: " + "; ".join(f"data_wait {e['data_wait_s']} s, step {e['step_s']} s" for e in epochs[warmup:]))
PY
done
