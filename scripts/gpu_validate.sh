#!/usr/bin/env bash
# Runs every GPU check on the machine with the GPU, from the folder scripts/gpu_prepare.sh made:
# the GPU test binaries, the CPU unit tests, mnist_mlp --gpu for 20 epochs, and bench_epoch --gpu
# (graphs and eager) against the PyTorch peer (eager, whole-step CUDA graphs, torch.compile) in
# the same run, then the CNN app against its PyTorch peer. Everything goes to $OUT/validate.log
# (or .gpurun/out/), one line per step to $OUT/summary.txt; the apps' result folders to
# .gpurun/runs/.
#   bash .gpurun/validate.sh [--quick]      # --quick: 2 epochs of the app, 2 of each benchmark
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here/out}
mkdir -p "$out"
epochs_app=20 epochs_bench=5
[[ ${1:-} == --quick ]] && epochs_app=2 epochs_bench=2
# shellcheck disable=SC1091
source "$here/devrt/env.sh"
export LD_LIBRARY_PATH="$here/lib:${LD_LIBRARY_PATH:-}" MNIST_DIR="$here/data/mnist" PYTHONUNBUFFERED=1
"$here/devrt/check.sh" "$here/bin" "$here/lib" >"$out/validate.log" 2>&1
nvidia-smi >>"$out/validate.log" 2>&1
# The apps' result folders (logs, snapshots) stay beside, not in $OUT: the device tool brings
# back at most 8 files from it, and validate.log and summary.txt must be among them.
runs=$here/runs
mkdir -p "$runs"
cd "$runs" || exit 1

step() {  # step NAME TIMEOUT COMMAND...: logs the output and one summary line
  local name=$1 limit=$2
  shift 2
  echo "===== $name: $*" >>"$out/validate.log"
  local start=$SECONDS
  timeout "$limit" "$@" >>"$out/validate.log" 2>&1
  local rc=$?
  echo "$name: exit $rc in $((SECONDS - start)) s" | tee -a "$out/summary.txt"
}

step test_cuda_ops 600 "$here/bin/test_cuda_ops"
# A full sum of 10M floats split over the whole device: expected well under 100 us on an H100
# (~15-25 us: 40 MB at 3.35 TB/s, plus a second tiny pass); on one block it took 0.5-1 ms.
step cuda_sum_timing 120 "$here/bin/test_cuda_ops" "[timing]"
grep -E '^a sum of 10M floats' "$out/validate.log" | tail -n 1 >>"$out/summary.txt"
# The convolutions on cuDNN (core/cuda/conv.cu), expected exit 0 each: once as by default
# (cuDNN's heuristic, deterministic algorithms only: the CPU=GPU rows over groups, depthwise,
# dilation, stride 2, cover_all, an empty batch and deconvolution in float32 and float64; a shape
# first met inside a graph capture under autotune; gradients repeating bit for bit), then with
# every algorithm timed (CHAINER_AUTOTUNE=1: cudnnFind*AlgorithmEx on each new shape) and
# non-deterministic ones allowed (CHAINER_CUDNN_DETERMINISTIC=0).
step cudnn_convolutions 600 "$here/bin/test_cuda_ops" "[convolution],[functions]"
step cudnn_autotune 600 env CHAINER_AUTOTUNE=1 CHAINER_CUDNN_DETERMINISTIC=0 "$here/bin/test_cuda_ops" "[convolution],[functions]"
step test_cuda_training 600 "$here/bin/test_cuda_training"
for t in tensor autograd functions serialization links optimizers training caching_allocator cuda_runtime nccl_logic blas_handles cudnn_policy; do
  step "test_$t" 300 "$here/bin/test_$t"
done
# NCCL's real calls at one rank, expected exit 0: the non-blocking init completes, a sum polled
# while running leaves the next kernel launch clean, cuda::synchronize() waits for NCCL's stream,
# reduce_scatter/allgather (ncclReduceScatter/ncclAllGather) keep the values, under a 5 s limit;
# a blocking allreduce returns before the device runs it; the watchdog spares a healthy job.
step gpu_nccl 300 mpiexec -n 1 "$here/bin/test_gpu_nccl"
# The communicators on GPU gradients: one rank (the NCCL paths), two sharing the GPU (MPI paths).
for np in 1 2; do
  step "gpu_communicators_np$np" 300 mpiexec -n "$np" "$here/bin/test_gpu_communicators"
done
step mnist_mlp_gpu_pure_nccl 600 mpiexec -n 1 "$here/bin/mnist_mlp" --gpu --communicator pure_nccl -e 2 -o "$runs/mnist_nccl" --data "$MNIST_DIR"
step mnist_mlp_gpu_np2_flat 600 mpiexec -n 2 "$here/bin/mnist_mlp" --gpu --communicator flat -e 2 -o "$runs/mnist_np2" --data "$MNIST_DIR"
# The model-parallel apps on GPU tensors (send/recv and allgather staged through the host; two
# ranks may share the one GPU, since no NCCL is involved).
step mnist_model_parallel_gpu 600 mpiexec -n 2 "$here/bin/mnist_model_parallel" --gpu -e 1 -o "$runs/mp" --data "$MNIST_DIR"
step mnist_ensemble_gpu 600 mpiexec -n 2 "$here/bin/mnist_ensemble" --gpu -e 1 -o "$runs/ens" --data "$MNIST_DIR"
step mnist_mlp_gpu 900 "$here/bin/mnist_mlp" --gpu -e "$epochs_app" -o "$runs/mnist_result" --data "$MNIST_DIR"
grep -E '^ *[0-9]+ ' "$out/validate.log" | tail -n 1 | sed 's/^/mnist_mlp_gpu last epoch: /' >>"$out/summary.txt"
step bench_graphs 600 "$here/bin/bench_epoch" --gpu --epochs "$epochs_bench" --data "$MNIST_DIR"
step bench_eager 600 "$here/bin/bench_epoch" --gpu --eager --epochs "$epochs_bench" --data "$MNIST_DIR"
for mode in eager graphs compile; do
  step "torch_$mode" 900 python3 "$here/peers/torch_gpu.py" --mode "$mode" --epochs "$epochs_bench" --data "$MNIST_DIR"
done
# The CNN (apps/fashion_mnist_cnn: cuDNN convolutions, our pooling and batch normalization)
# against the same network in PyTorch (cuDNN, benchmark off), in the same run. On MNIST's files
# (the same IDX layout): Fashion-MNIST's 30 MB would not fit the carried folder; the shapes, and
# so the times, are the same.
step cnn_gpu 900 "$here/bin/fashion_mnist_cnn" --gpu -e "$epochs_bench" --timing -o "$runs/cnn_result" --data "$MNIST_DIR"
grep -E '^ *[0-9]+ ' "$out/validate.log" | tail -n 1 | sed 's/^/fashion_mnist_cnn_gpu last epoch: /' >>"$out/summary.txt"
python3 -c 'import json, sys; print("fashion_mnist_cnn_gpu train_time", [round(e["train_time"], 2) for e in json.load(open(sys.argv[1]))])' "$runs/cnn_result/log" >>"$out/summary.txt"
step torch_cnn_gpu 900 python3 "$here/peers/fashion_mnist_cnn.py" --device cuda --epochs "$epochs_bench" --data "$MNIST_DIR"
grep -E '^\{' "$out/validate.log" >>"$out/summary.txt"
