#!/usr/bin/env bash
# Prepares a GPU validation run (docs/gpu-validation.md): builds the CUDA code without
# -march=native into build-gpu/, then packs into .gpurun/ (ignored by git, carried to the GPU
# machine) the binaries, libraries, MPICH's runtime bundle, MNIST and the GPU peers, with
# scripts/gpu_validate.sh as .gpurun/validate.sh. On the GPU machine: bash .gpurun/validate.sh
#   bash scripts/gpu_prepare.sh
set -euo pipefail
cd "$(dirname "$0")/.."
shared=${SHARED_DIR:-../shared}
bash scripts/setup.sh >/dev/null  # the packages; build/ as usual
if [[ ! -f build-gpu/build.ninja ]]; then
  meson setup build-gpu --buildtype=release -Dnative=false -Dcuda=enabled >/tmp/chainermn-gpu-setup.log 2>&1 || {
    cat /tmp/chainermn-gpu-setup.log >&2
    exit 1
  }
fi
ninja -C build-gpu >/dev/null

run=.gpurun
rm -rf "$run"
mkdir -p "$run/bin" "$run/lib" "$run/data/mnist" "$run/peers"
for f in build-gpu/tests/test_* build-gpu/apps/mnist_* build-gpu/apps/fashion_mnist_cnn build-gpu/bench/bench_*; do
  [[ -f $f && -x $f ]] && cp "$f" "$run/bin/"
done
for f in build-gpu/lib*.so* build-gpu/distributed/lib*.so*; do
  [[ -d $f ]] || cp -P "$f" "$run/lib/"  # the libraries and their version links, not meson's object folders
done
cp "$shared"/datasets/mnist/*.gz "$run/data/mnist/"
cp "$shared"/peers/torch_gpu.py "$shared"/peers/torch_common.py "$shared"/peers/mnist_idx.py "$run/peers/"
cp bench/peers/fashion_mnist_cnn.py "$run/peers/"  # the CNN peer (--device cuda)
LD_LIBRARY_PATH="$PWD/$run/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$shared/device/bundle-runtime" "$run/devrt" "$run/bin" "$run/lib" >/dev/null
cp scripts/gpu_validate.sh "$run/validate.sh"
echo "gpu_prepare: $(du -sh "$run" | cut -f1) in $run (carry it; at most 64 MiB travel)"
