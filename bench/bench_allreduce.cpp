// Gradient all-reduce time and bandwidth against message size for the three reductions:
// naive (one MPI_Allreduce per parameter), flat (one packed buffer), bucketed (the multi-node
// optimizer's reducer: ~1 MB first bucket, then ~25 MB buckets; through a shared-memory segment
// when every rank runs on this host) and bucketed-mpi (the same reducer with MPI_Iallreduce per
// bucket, as across hosts).
// The model holds TOTAL bytes of float32 gradients split over 8 parameters, like a small MLP.
//   mpiexec -n 2 build/bench/bench_allreduce [--seconds S]
// Rank 0 prints, per size and method: milliseconds per averaging, algorithm bandwidth
// (bytes / time) and bus bandwidth (2 (n-1) / n x bytes / time, as nccl-tests define it).
#include <chainermn.h>

#include <chrono>
#include <cstdio>
#include <cstring>

namespace {
struct Grads : chainer::Link {
  explicit Grads(int64_t total_floats) {
    const int64_t each = std::max<int64_t>(1, total_floats / 8);
    for (int i = 0; i < 8; ++i) {
      chainer::Variable& p = add_param("p" + std::to_string(i), chainer::Tensor::zeros({each}));
      p.set_grad(chainer::Tensor::zeros({each}));
    }
  }
  // Fresh gradients, as backward makes them (the reducer leaves views of its buffers behind;
  // refilling those in place would flatter it). The host allocator recycles the blocks.
  void fill(double v) {
    for (auto& p : params()) p.set_grad(chainer::Tensor::full(p.shape(), v));
  }
};
}  // namespace

int main(int argc, char** argv) {
  return chainermn::run_main(argc, argv, [](int argc, char** argv) -> int {
    double min_seconds = 0.5;
    for (int i = 1; i < argc; ++i) {
      if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) min_seconds = std::atof(argv[++i]);
      else throw chainer::Error("usage: bench_allreduce [--seconds S]");
    }
    auto naive = chainermn::create_communicator("naive");
    auto flat = chainermn::create_communicator("flat");
    chainermn::GradientReducer reducer(naive);
    chainermn::GradientReducerOptions over_mpi;
    over_mpi.shared_memory = false;
    chainermn::GradientReducer mpi_reducer(naive, over_mpi);
    const int n = naive->size();
    const bool root = naive->rank() == 0;
    if (root) std::printf("%d processes; sizes are the total gradient bytes of 8 float32 parameters\n%10s %-12s %10s %12s %12s\n",
                          n, "bytes", "method", "ms", "algbw GB/s", "busbw GB/s");
    for (int64_t bytes : {int64_t(64) << 10, int64_t(1) << 20, int64_t(4) << 20, int64_t(16) << 20, int64_t(64) << 20}) {
      Grads model(bytes / 4);
      reducer.attach(model);
      mpi_reducer.attach(model);
      for (const char* method : {"naive", "flat", "bucketed", "bucketed-mpi"}) {
        auto step = [&] {
          model.fill(1.0);
          if (!std::strcmp(method, "naive")) naive->multi_node_mean_grad(model);
          else if (!std::strcmp(method, "flat")) flat->multi_node_mean_grad(model);
          else if (!std::strcmp(method, "bucketed")) reducer.finalize();  // no hook fired: reduces every bucket now
          else mpi_reducer.finalize();
        };
        step();
        // Every rank runs the same number of steps: rank 0 decides when to stop.
        int reps = 0;
        const auto start = std::chrono::steady_clock::now();
        for (bool more = true; more;) {
          step();
          ++reps;
          const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          more = naive->bcast_obj(elapsed < min_seconds, 0);
        }
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / reps;
        const double algbw = double(bytes) / seconds / 1e9;
        if (root)
          std::printf("%10lld %-12s %10.3f %12.2f %12.2f\n", (long long)bytes, method, seconds * 1e3, algbw,
                      algbw * 2.0 * (n - 1) / n);
      }
      reducer.detach();
      mpi_reducer.detach();
    }
    return 0;
  });
}
