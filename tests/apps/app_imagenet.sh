#!/usr/bin/env bash
# The ImageNet example's programs as users run them, on a few Fashion-MNIST images that
# export_images writes as PNG files with their lists: compute_mean, then train_imagenet with nin
# at a small --insize for one epoch (and resumed to a second) alone and under mpiexec -n 2, and
# resnet50 for a few iterations on 224 x 224 crops. Each run must exit 0 and log the reported
# keys; bad lists, files and options (also those the machine cannot hold: loader threads, batches,
# crops, classes) must fail with a message naming them. resnet50 (batch
# normalization) at --insize 40 with --checkpoint-interval restarts 2 -> 1 -> 2 processes. Skipped
# (exit 77) without Fashion-MNIST.
#   tests/apps/app_imagenet.sh MPIEXEC EXPORT_IMAGES COMPUTE_MEAN TRAIN_IMAGENET
set -u
mpiexec=${1:?usage: app_imagenet.sh MPIEXEC EXPORT_IMAGES COMPUTE_MEAN TRAIN_IMAGENET}
source "$(dirname "$0")/../lib.sh"
export_images=$(absolute "${2:?}")
compute_mean=$(absolute "${3:?}")
app=$(absolute "${4:?}")

find_fashion_mnist
scratch app_imagenet
export MPIEXEC_TIMEOUT=120

# 64 training and 32 validation images of 48 x 48 (28 x 28 centred), three channels.
if ! "$export_images" --data "$fashion_mnist" --out img --size 48 --train-size 64 --test-size 32 >"$tmp/out" 2>"$tmp/err"; then
  fail "export_images: exited with $?: $(tail -c 300 "$tmp/err")"
  finish
fi
[ "$(wc -l <img/train.txt)" -eq 64 ] && [ "$(wc -l <img/val.txt)" -eq 32 ] && [ -f img/train/00063.png ] ||
  fail "export_images: expected 64 + 32 listed PNG files: $(head -n 2 img/train.txt)"
"$compute_mean" img/train.txt --root img --output img/mean.npy >"$tmp/out" 2>"$tmp/err" && [ -s img/mean.npy ] ||
  fail "compute_mean: exited with $? or wrote no img/mean.npy: $(tail -c 300 "$tmp/err")"
nin=(img/train.txt img/val.txt --root img --mean img/mean.npy --arch nin --insize 40 --n-class 10 -B 16 -b 16)

"$app" -h >"$tmp/out" 2>&1 && grep -q "^usage: train_imagenet TRAIN VAL" "$tmp/out" && grep -q -- "--loaderjob" "$tmp/out" ||
  fail "-h: no usage with --loaderjob: $(head -c 300 "$tmp/out")"
expect_app_error "no lists" "expected the two lists TRAIN and VAL, got 0"
expect_app_error "an unknown architecture" "known: alex, googlenet, googlenetbn, nin, resnet50" "${nin[@]}" --arch vgg
printf 'train/00000.png 3\ntrain/00001.png\n' >bad.txt
expect_app_error "a malformed list line" "'bad.txt' line 2" bad.txt img/val.txt --root img --mean img/mean.npy --insize 40
printf 'train/missing.png 3\n' >missing.txt
expect_app_error "a missing image" "missing.png" missing.txt img/val.txt --root img --mean img/mean.npy --insize 40 -B 1
expect_app_error "a missing mean" "nowhere.npy" "${nin[@]}" --mean nowhere.npy
# Options the machine cannot hold, refused before any image is read, naming the option and the
# limit. Through a wrapper of the same name with a time limit: a run that went ahead (ten thousand
# loader threads started and stopped at every evaluation) must fail, not hold the test.
mkdir -p "$tmp/bounded"
printf '#!/bin/sh\nexec timeout -k 5 60 "%s" "$@"\n' "$app" >"$tmp/bounded/train_imagenet"
chmod +x "$tmp/bounded/train_imagenet"
unbounded_app=$app app=$tmp/bounded/train_imagenet
expect_app_error "more loader threads than 8 per core" \
  "-j/--loaderjob 10000: 10000 image-loading threads are more than this process can use: at most " \
  "${nin[@]}" -E 1 -j 10000 -o rj
expect_app_error "a batch larger than the training images" \
  "-B/--batchsize 65: a batch of 65 examples is more than the 64 training examples" "${nin[@]}" -E 1 -B 65 -o rb
expect_app_error "crops too large for memory" \
  "--insize 1000000000: a training batch of 16 crops of 3 x 1000000000 x 1000000000" "${nin[@]}" --insize 1000000000
grep -qF "pixels a side can fit" "$tmp/err" || fail "--insize too large: no largest size that fits: $(cat "$tmp/err")"
expect_app_error "more classes than memory holds" "--n-class 100000000: a last layer of 100000000 classes" \
  "${nin[@]}" --n-class 100000000
app=$unbounded_app

# One process, one epoch of 4 iterations (timed: the log splits off the time spent waiting for
# batches); then resumed from its snapshot to a second epoch.
if "$app" "${nin[@]}" -E 1 -o r1 --communicator naive --timing >"$tmp/out" 2>"$tmp/err"; then
  check_app_log "nin, 1 process" r1 1 0 train_time data_time peak_rss_mib lr
  if "$app" "${nin[@]}" -E 2 -o r1 -r r1/snapshot_iter_4 --communicator naive >"$tmp/out" 2>"$tmp/err"; then
    check_app_log "nin, 1 process, resumed" r1 2 0
  else
    fail "nin, 1 process, resumed: exited with $?: $(tail -c 400 "$tmp/err")"
  fi
else
  fail "nin, 1 process: exited with $?: $(tail -c 400 "$tmp/err")"
fi
# Two processes (the example's hierarchical communicator): rank 0 scatters the paths, each decodes
# its half with two loader workers.
if job "nin, 2 processes" 2 "$app" "${nin[@]}" -E 1 -j 2 -o r2; then
  check_app_log "nin, 2 processes" r2 1 0
fi

# Mixed precision: nin under mixed_bf16 (one process), one epoch.
if "$app" "${nin[@]}" -E 1 -o rb --communicator naive --dtype mixed_bf16 >"$tmp/out" 2>"$tmp/err"; then
  check_app_log "nin --dtype mixed_bf16" rb 1 0
else
  fail "nin --dtype mixed_bf16: exited with $?: $(tail -c 400 "$tmp/err")"
fi

# resnet50 with checkpoints: 2 processes train epoch 1 (2 iterations of 16 per process), 1 process
# goes on from their checkpoints to epoch 2 (4 iterations), 2 processes from its to epoch 3. Each
# rank's batch normalization gathers running statistics from its own images; the checkpoints hold
# their mean over the ranks, so each count resumes the other's.
ck=(img/train.txt img/val.txt --root img --mean img/mean.npy --arch resnet50 --insize 40 --n-class 10 -B 16 -b 16
  --communicator naive --checkpoint-interval 2 --no-plot -o ck)
if job "resnet50 checkpoints, 2 processes, epoch 1" 2 "$app" "${ck[@]}" -E 1 &&
  job "resnet50 checkpoints, 2 -> 1 process, epoch 2" 1 "$app" "${ck[@]}" -E 2; then
  grep -qF "MultiNodeCheckpointer: resumed from 2 processes at iteration 2 (epoch 1)" "$tmp/text" ||
    fail "resnet50 2 -> 1: did not resume from 2 processes' iteration 2: $(head -n 12 "$tmp/text")"
  if job "resnet50 checkpoints, 1 -> 2 processes, epoch 3" 2 "$app" "${ck[@]}" -E 3; then
    grep -qF "MultiNodeCheckpointer: resumed from 1 processes at iteration 6 (epoch 2)" "$tmp/text" ||
      fail "resnet50 1 -> 2: did not resume from 1 process's iteration 6: $(head -n 12 "$tmp/text")"
    check_app_log "resnet50 checkpoints, 1 -> 2" ck 3 0
  fi
fi
rm -rf ck  # 188 MB a file

# resnet50 on 224 x 224 crops of 8 images enlarged to 232 x 232: a few iterations without error.
"$export_images" --data "$fashion_mnist" --out big --scale 8 --size 232 --train-size 8 --test-size 4 >"$tmp/out" 2>&1 &&
  "$compute_mean" big/train.txt --root big --output big/mean.npy >"$tmp/out" 2>&1 ||
  fail "export_images/compute_mean at 232: $(tail -c 300 "$tmp/out")"
if "$app" big/train.txt big/val.txt --root big --mean big/mean.npy --arch resnet50 --n-class 10 -B 4 -b 4 -E 1 -o r3 \
  --communicator naive >"$tmp/out" 2>"$tmp/err"; then
  check_app_log "resnet50 at 224" r3 1 0
else
  fail "resnet50 at 224: exited with $?: $(tail -c 400 "$tmp/err")"
fi

finish
