#!/usr/bin/env bash
# Installs what the build needs (Debian 12, as root, or with sudo) and builds into build/.
#   bash scripts/setup.sh            # idempotent: installs only what is missing; builds everything
#   bash scripts/setup.sh TARGET...  # builds only those targets and what they need (apps/mnist_mlp)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(meson ninja-build g++ pkg-config ccache libeigen3-dev catch2 zlib1g-dev libcurl4-openssl-dev libssl-dev libpng-dev libjpeg62-turbo-dev libcairo2-dev dataset-fashion-mnist mpich libmpich-dev python3-numpy doxygen libsword-dev sword-text-kjv sword-text-sparv festlex-cmu python3-nltk)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  $sudo apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}" >/tmp/chainermn-apt.log 2>&1 || {
    echo "setup: apt-get install failed; see /tmp/chainermn-apt.log" >&2
    exit 1
  }
fi

# The CUDA toolkit, where this machine kind has one: meson builds the CUDA backend when it finds nvcc.
if ! command -v nvcc >/dev/null 2>&1 && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi

# meson compiles through ccache when it is installed; its cache lives in the checkout unless
# CCACHE_DIR says otherwise, so a fresh clone starts cold and its second build (scripts/test.sh)
# reuses the first's objects.
export CCACHE_DIR=${CCACHE_DIR:-$PWD/.ccache}

if [[ ! -f build/build.ninja ]]; then
  meson setup build --buildtype=release >/tmp/chainermn-meson-setup.log 2>&1 || {
    cat /tmp/chainermn-meson-setup.log >&2
    exit 1
  }
fi
ninja -C build "$@"
