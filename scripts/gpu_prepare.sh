#!/usr/bin/env bash
# Packs the GPU validation (docs/gpu-validation.md) into one folder that the device tool carries
# to the lent GPU machine, and fails when what travels would pass the limit.
#   bash scripts/gpu_prepare.sh                  # builds what the run uses in build/ and packs .gpurun/
#   bash scripts/gpu_prepare.sh --from build     # packs an existing build instead (the rehearsal's)
# Options: --from DIR (a build to pack, as it is: its programs must be built), --out DIR (default
# .gpurun), --limit-mib N (default 48: the folder plus the working tree that travels with it),
# --check-size DIR (only measure a packed folder against the limit).
#
# What travels: payload.tar.xz (only what the run uses: the GPU test binaries, the apps and the
# benchmark it runs, our libraries and plugins, MPICH's runtime bundle made by
# ../shared/device/bundle-runtime, the PyTorch peers), unpacked once on arrival; MNIST, which the
# apps and peers train on; validate.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
shared=${SHARED_DIR:-../shared}
from="" out=.gpurun limit_mib=48 check_only=""
while (($#)); do
  case $1 in
    --from) from=${2:?--from needs a build folder}; shift 2 ;;
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    --limit-mib) limit_mib=${2:?--limit-mib needs a number}; shift 2 ;;
    --check-size) check_only=${2:?--check-size needs a packed folder}; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0" | cut -c3-; exit 0 ;;
    *) echo "gpu_prepare: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
die() { echo "gpu_prepare: error: $*" >&2; exit 1; }
# check_size DIR: what travels, this folder plus the working tree (tracked files and untracked
# ones git does not ignore), counted as the device tool counts them; fails above the limit,
# naming the biggest parts.
check_size() {
  local dir=$1 folder tree total
  folder=$(du -sb "$dir" | cut -f1)
  tree=$(git ls-files -z --cached --others --exclude-standard | du -cb --files0-from=- 2>/dev/null | tail -n 1 | cut -f1)
  case $(realpath "$dir") in "$(realpath .)"/*) git check-ignore -q "$dir" || tree=$((tree - folder)) ;; esac  # counted once
  total=$((folder + tree))
  if ((total > limit_mib * 1048576)); then
    {
      echo "gpu_prepare: error: $(mib "$total") would travel ($dir $(mib "$folder") + working tree $(mib "$tree")), over the limit of $limit_mib MiB. The biggest parts:"
      { find "$dir" -type f -printf '%s %p\n'; echo "$tree working-tree"; } | sort -rn | head -n 8 |
        while read -r s f; do echo "  $(mib "$s")  $f"; done
      if [[ -f $dir/payload.tar.xz ]]; then
        echo "Inside payload.tar.xz, the biggest before compression:"
        xz -dc "$dir/payload.tar.xz" | tar -tvf - | awk '{ print $3, $6 }' | sort -rn | head -n 5 |
          while read -r s f; do echo "  $(mib "$s")  $f"; done
      fi
    } >&2
    return 1
  fi
  echo "gpu_prepare: $(mib "$total") travels ($dir $(mib "$folder") + working tree $(mib "$tree")), limit $limit_mib MiB"
}
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
if [[ -n $check_only ]]; then
  check_size "$check_only"
  exit
fi

[[ -x $shared/device/bundle-runtime ]] || die "no $shared/device/bundle-runtime (set SHARED_DIR to the shared folder)"
[[ -f $shared/datasets/mnist/train-images-idx3-ubyte.gz ]] || die "no MNIST in $shared/datasets/mnist"
command -v xz >/dev/null || die "xz is needed (apt-get install xz-utils)"

# The binaries the run uses (validate.sh's step table); everything else stays here.
programs=(tests/test_cuda_ops tests/test_cuda_training tests/test_gpu_nccl tests/test_gpu_communicators
  apps/chainermn_check apps/mnist_mlp apps/fashion_mnist_cnn apps/mnist_model_parallel apps/mnist_ensemble
  bench/bench_epoch bench/bench_lstm apps/seq2seq apps/seq2seq_mp1 apps/train_dcgan apps/train_cifar
  apps/parallel_convolution)

build_needed=0
if [[ -z $from ]]; then
  # The ordinary build: portable (its CPU kernels are chosen at run time), so it runs on the GPU
  # machine's CPU whatever it is. setup.sh installs the packages and configures build/.
  bash scripts/setup.sh "${programs[@]}" >/dev/null
  from=build build_needed=1
fi
[[ -f $from/build.ninja ]] || die "$from is not a configured build folder"
native=$(meson introspect "$from" --buildoptions | python3 -c '
import json, sys
print(next((o["value"] for o in json.load(sys.stdin) if o["name"] == "native"), False))')
[[ $native == False ]] ||
  die "$from is compiled for this CPU alone (-Dnative=true), which the GPU machine's may not run: meson configure $from -Dnative=false"
# Our libraries and the plugins they load with dlopen (no program depends on a plugin).
mapfile -t libraries < <(meson introspect "$from" --targets | python3 -c '
import json, os, sys
root = os.path.abspath(sys.argv[1])
for t in json.load(sys.stdin):
    if t["type"] in ("shared library", "shared module"):
        print(*(os.path.relpath(f, root) for f in t["filename"]), sep="\n")' "$from")
if ((build_needed)); then
  PATH=/usr/local/cuda/bin:$PATH CCACHE_DIR=${CCACHE_DIR:-$PWD/.ccache} ninja -C "$from" "${programs[@]}" "${libraries[@]}" \
    >/dev/null || die "building the validation's programs in $from failed (ninja -C $from)"
fi
[[ -f $from/libchainer_cuda.so ]] || die "$from has no CUDA backend (libchainer_cuda.so): configure it with -Dcuda=enabled"
for p in "${programs[@]}" "${libraries[@]}"; do
  [[ -f $from/$p ]] || die "$from/$p is not built (ninja -C $from ${programs[*]} ${libraries[*]})"
done

# Everything but the data goes into one xz-compressed tar, unpacked once on arrival: measured on
# this pack, 22 MB against 44 MiB for the same files gzip-compressed one by one (the runtime
# bundle's own way), because the libraries share most of their content.
stage=$(mktemp -d /tmp/chainermn-gpurun-stage.XXXXXX)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/peers"
for p in "${programs[@]}"; do cp "$from/$p" "$stage/bin/"; done
for f in "${libraries[@]}"; do
  cp "$from/$f" "$stage/lib/"
  # The version links the loader looks for (libchainer.so.0 -> libchainer.so.0.1.0).
  for link in "$from/${f%.so*}".so*; do [[ -L $link ]] && cp -P "$link" "$stage/lib/"; done
done
cp "$shared"/peers/torch_gpu.py "$shared"/peers/torch_common.py "$shared"/peers/mnist_idx.py bench/peers/fashion_mnist_cnn.py bench/peers/lstm_peer.py \
  "$stage/peers/"
cp scripts/catch_failures.py "$stage/"
# MPICH and every library our files need that the GPU machine may lack; uncompressed inside the
# tar (the tar is compressed as a whole), so the bundle's own size limit does not apply here.
DEVRT_GZIP_MIN_KIB=0 DEVRT_MAX_MIB=1000 LD_LIBRARY_PATH="$stage/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  "$shared/device/bundle-runtime" "$stage/devrt" "$stage/bin" "$stage/lib" >/tmp/chainermn-gpu-bundle.log 2>&1 ||
  { cat /tmp/chainermn-gpu-bundle.log >&2; die "bundle-runtime failed"; }

rm -rf "$out"
mkdir -p "$out/data/mnist"
tar -C "$stage" -cf - . | xz -3 -T2 >"$out/payload.tar.xz"
# The pack's identity names its unpack folder on the GPU machine: a rerun there reuses it.
sha256sum "$out/payload.tar.xz" | cut -c1-16 >"$out/pack-id"
cp "$shared"/datasets/mnist/*.gz "$out/data/mnist/"  # compressed already
# CMUdict for the seq2seq steps (1.4 MB compressed), where setup.sh installed festlex-cmu.
cmu=/usr/share/festival/dicts/cmu/cmudict-0.4.out
[[ -f $cmu ]] || die "no $cmu (apt-get install festlex-cmu; scripts/setup.sh does)"
xz -6 -T2 -c "$cmu" >"$out/data/cmudict-0.4.out.xz"
cp scripts/gpu_validate.sh "$out/validate.sh"

check_size "$out"
echo "gpu_prepare: pack $(cat "$out/pack-id") from $from in $out: carry it (bash $out/validate.sh; docs/gpu-validation.md)"
