#!/usr/bin/env bash
# Sets up, builds, and trains the tutorial MLP on the real MNIST (20 epochs unless overridden):
#   bash scripts/run_mnist.sh [mnist_mlp flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec build/apps/mnist_mlp "$@"
