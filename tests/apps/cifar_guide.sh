#!/usr/bin/env bash
# Runs every command of docs/cifar.md before its Results (the ```sh blocks) as printed, in a
# scratch directory with build/ linked to the build tree and small CIFAR-10 and CIFAR-100
# archives in the real format (tests/apps/write_cifar.py) in $CHAINER_DATASET_ROOT, each with a
# small subset's flags appended (the apps read their flags in order, so these override the
# guide's): each must exit 0 and log an epoch. The Fashion-MNIST commands are skipped without
# Debian's dataset-fashion-mnist.
#   tests/apps/cifar_guide.sh SOURCE_ROOT BUILD_ROOT MPIEXEC
set -u
root=${1:?usage: cifar_guide.sh SOURCE_ROOT BUILD_ROOT MPIEXEC}
build=${2:?}
mpiexec_path=${3:?}
source "$(dirname "$0")/../lib.sh"
root=$(cd "$root" && pwd)
build=$(cd "$build" && pwd)
scratch cifar_guide
ln -s "$build" build
# mpiexec as the guide writes it: the build's MPICH launcher, first on PATH (a script, not a
# link: hydra finds its proxy beside the path it was started by).
mkdir -p bin && printf '#!/bin/sh\nexec "%s" "$@"\n' "$mpiexec_path" >bin/mpiexec && chmod +x bin/mpiexec &&
  export PATH=$PWD/bin:$PATH
export MPIEXEC_TIMEOUT=120
export CHAINER_DATASET_ROOT=$tmp/root
python3 "$tests_dir/apps/write_cifar.py" "$CHAINER_DATASET_ROOT/pfnet/chainer/cifar" 12 32 ||
  fail "write_cifar.py failed"
have_fashion=0
dpkg -L dataset-fashion-mnist 2>/dev/null | grep -q '/train-images-idx3-ubyte.gz$' && have_fashion=1
small=(--train-size 32 --test-size 16 -b 16 -e 1 -f 100 --no-plot)
mapfile -t commands < <(python3 - "$root/docs/cifar.md" <<'PY'
import re, sys
text = open(sys.argv[1]).read().split("## Results", 1)[0]  # not the measured runs
for block in re.findall(r"```sh\n(.*?)```", text, re.S):
    for line in block.splitlines():
        if line.strip() and not line.startswith("#"):
            print(line)
PY
)
[ "${#commands[@]}" -ge 5 ] || fail "docs/cifar.md: only ${#commands[@]} commands found"
i=0
for command in "${commands[@]}"; do
  i=$((i + 1))
  if [[ $command == *"fashion-mnist"* ]] && [ "$have_fashion" = 0 ]; then
    echo "note: not run (no dataset-fashion-mnist): $command"
    continue
  fi
  out=run$i
  if timeout -k 5 120 bash -c "$command \"\$@\" -o $out" _ "${small[@]}" >"$tmp/out" 2>&1 && [ -f "$out/log" ]; then
    echo "ok: $command"
  else
    fail "$command: exited with $? or wrote no $out/log: $(tail -c 400 "$tmp/out")"
  fi
done
finish
