// The communicators on GPU gradients, under mpiexec: every kind that can run with this
// placement gives the closed-form means (the naive averages) with the model on the device of
// intra_rank, through multi_node_mean_grad and through the multi-node optimizer's bucketed
// reduction, also with float16 on the wire. NCCL refuses two ranks on one GPU, so where ranks
// share a device the NCCL paths (pure_nccl; the intra-host stage of hierarchical,
// two_dimensional, single_node, non_cuda_aware) are left out and the MPI paths (naive, flat,
// staged through host memory) are the multi-rank test. Without a CUDA device every rank prints
// why and exits 77 (skipped).
#include <catch2/catch.hpp>

#include <chainer.h>
#include <chainermn.h>

#include <cstdio>

#include "catch_session.h"
#include "core/device/cuda.h"
#include "distributed/communicators/nccl_backend.h"

namespace {

using chainer::Tensor;

struct TwoParams : chainer::Link {
  explicit TwoParams(chainer::DType b = chainer::DType::Float64) {
    add_param("a", Tensor::zeros({7, 13}));
    add_param("b", Tensor::zeros({1001}, b));
  }
};

// Rank R's gradient element i: (R + 1) * (i % 17 + 1) / 8, exact in float16 for small R; the
// mean over N ranks is (N + 1) / 2 * (i % 17 + 1) / 8.
Tensor grad_of(const Tensor& like, int rank) {
  Tensor g = Tensor::empty(like.shape(), like.dtype());
  for (int64_t i = 0; i < g.numel(); ++i) {
    const double v = double(rank + 1) * double(i % 17 + 1) / 8.0;
    if (g.dtype() == chainer::DType::Float32) g.data<float>()[i] = float(v);
    else g.data<double>()[i] = v;
  }
  return g;
}

void check_means(chainer::Link& model, int size) {
  for (auto& [name, p] : model.namedparams()) {
    Tensor g = p.grad().to(chainer::Device::cpu()).astype(chainer::DType::Float64);
    for (int64_t i = 0; i < g.numel(); ++i) {
      CAPTURE(name, i);
      REQUIRE(g.data<double>()[i] == Approx(double(size + 1) / 2.0 * double(i % 17 + 1) / 8.0).epsilon(1e-6));
    }
  }
}

int device_of(const chainermn::Communicator& comm) { return comm.intra_rank() % chainer::cuda::device_count(); }
bool ranks_share_a_device(const chainermn::Communicator& comm) {
  return comm.intra_size() > chainer::cuda::device_count();
}
bool uses_nccl(const std::string& kind) { return kind != "naive" && kind != "flat"; }

}  // namespace

TEST_CASE("every communicator averages GPU gradients to the closed form") {
  auto world = chainermn::create_communicator("naive");
  for (const chainermn::CommunicatorKind& kind : chainermn::communicator_kinds()) {
    if (!kind.available || !kind.averages || (uses_nccl(kind.name) && ranks_share_a_device(*world))) continue;
    for (auto wire : {std::optional<chainer::DType>(), std::optional<chainer::DType>(chainer::DType::Float16)}) {
      CAPTURE(kind.name, wire ? chainer::dtype_name(*wire) : "own dtype");
      chainermn::CommunicatorOptions options;
      options.allreduce_grad_dtype = wire;
      std::shared_ptr<chainermn::Communicator> comm;
      try {
        comm = chainermn::create_communicator(kind.name, MPI_COMM_WORLD, options);
      } catch (const chainer::Error& e) {
        continue;  // the placement does not suit it (single_node across hosts): every rank alike
      }
      TwoParams model;
      model.to_device(chainer::cuda::get_device(device_of(*comm)).device());
      for (auto& [name, p] : model.namedparams()) p.set_grad(grad_of(p.data(), comm->rank()).to(p.data().device()));
      comm->multi_node_mean_grad(model);
      for (auto& [name, p] : model.namedparams()) REQUIRE(p.grad().device() == p.data().device());
      check_means(model, comm->size());
    }
  }
}

TEST_CASE("the bucketed reduction averages GPU gradients while backward runs") {
  for (const std::string name : {"flat", "pure_nccl"}) {
    auto world = chainermn::create_communicator("naive");
    if (uses_nccl(name) && (ranks_share_a_device(*world) || !chainermn::nccl::unavailable_reason().empty())) continue;
    CAPTURE(name);
    auto comm = chainermn::create_communicator(name);
    auto model = std::make_shared<TwoParams>(chainer::DType::Float32);
    model->to_device(chainer::cuda::get_device(device_of(*comm)).device());
    chainermn::GradientReducerOptions options;
    options.first_bucket_bytes = 64;  // several buckets
    options.bucket_bytes = 4096;
    chainermn::GradientReducer reducer(comm, options);
    reducer.attach(*model);
    REQUIRE_FALSE(reducer.uses_shared_memory());
    // loss = sum(a * A) + sum(b * B): the gradients are A and B, rank dependent.
    auto params = model->namedparams();
    chainer::Variable loss;
    for (auto& [n, p] : params) {
      Tensor c = grad_of(p.data(), comm->rank()).to(p.data().device());
      chainer::Variable term = chainer::functions::sum(p * chainer::Variable(c));
      loss = loss.defined() ? loss + term : term;
    }
    loss.backward();
    reducer.finalize();
    REQUIRE(reducer.stats().buckets_from_hooks > 0);
    check_means(*model, comm->size());
  }
}

int main(int argc, char** argv) {
  chainermn::init_mpi(&argc, &argv);
  if (!chainer::cuda::is_available()) {
    std::printf("skipped: no CUDA device (%s)\n", chainer::cuda::unavailable_reason().c_str());
    chainermn::finalize_mpi();
    return 77;
  }
  const int failed = run_catch_session(argc, argv);
  int total = 0;
  MPI_Allreduce(&failed, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  chainermn::finalize_mpi();
  return total != 0 ? 1 : 0;
}
