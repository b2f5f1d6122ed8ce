#!/usr/bin/env bash
# Sets up, builds, and trains the tutorial MLP on the real MNIST with 2 MPI processes (the
# ChainerMN tutorial's data-parallel run; 20 epochs unless overridden):
#   bash scripts/run_mnist.sh [mnist_mlp flags...]          # NP=4 for 4 processes
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh apps/mnist_mlp  # the libraries and the app; the tests and benchmarks are the suite's
mpiexec=$(command -v mpiexec.mpich || command -v mpiexec)
exec "$mpiexec" -n "${NP:-2}" build/apps/mnist_mlp "$@"
