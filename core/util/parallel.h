/// @file
/// Threads for CPU math. One team of threads serves our kernels and the GEMM; its size defaults to
/// the cores this process may use divided by the MPI ranks on its node (MPICH's MPI_LOCALNRANKS),
/// so `mpiexec -n 2` on 2 cores runs 1 thread per rank instead of oversubscribing. The team is
/// our own, not OpenMP's: work is claimed task by task and a job never waits for a member the
/// kernel has not scheduled, so beside other busy processes it degrades to fewer threads instead
/// of waiting a time slice per job; idle workers spin briefly, then sleep (core/util/parallel.cpp).
/// Every compute thread runs with flush-to-zero and denormals-are-zero: Adam's moments decay
/// into the subnormal range during training and make later epochs 30-50% slower otherwise.
#pragma once
#include <cstdint>
#include <functional>

namespace chainer {

/// The most threads a process may use (`--threads`, `CHAINER_NUM_THREADS`).
inline constexpr int kMaxThreads = 1024;

/// The threads of the CPU math team.
int num_threads();
void set_num_threads(int n);  ///< sets the team's size; `n <= 0` restores the default
/// `CHAINER_NUM_THREADS` (an integer from 1 to kMaxThreads, else chainer::Error), else
/// `OMP_NUM_THREADS`, else the hardware cores / ranks on this node, at least 1.
int default_num_threads();

/// Sets FTZ/DAZ on the calling thread (done for the team by set_num_threads and at start-up).
void enable_flush_denormal();

/// Runs fn(begin, end) over [0, n) split in contiguous chunks (up to four per thread, taken by
/// whichever thread is free); serial when n is below GRAIN elements. The chunk edges depend only
/// on n and the thread count, so results are identical run to run.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);
/// Runs fn(i) for every i in [0, count) on up to MAX_THREADS threads of the team (the caller is
/// one of them), each task on whichever thread claims it first; returns when all are done. The
/// first exception thrown by a task is rethrown here (tasks not yet started are skipped). Calls
/// from inside a task, or while another thread's job holds the team, run their tasks in order on
/// the calling thread.
void parallel_tasks(int64_t count, int max_threads, const std::function<void(int64_t)>& fn);

}  // namespace chainer
