// The NCCL backend on a real GPU, one rank (NCCL refuses two ranks on one GPU): what the fake of
// tests/distributed/test_nccl_logic.cpp stands in for. The non-blocking initialization completes; a sum polled
// while it is still running leaves no "device not ready" for the next kernel launch; cuda::synchronize()
// waits for NCCL's stream; reduce_scatter and allgather (one ncclReduceScatter and one ncclAllGather)
// leave the buffer as they should; a healthy wait does not trip a short CHAINERMN_TIMEOUT; a
// blocking collective returns before the device has run it (the compute stream waits, not the
// host), and the watchdog leaves a healthy job alone under a short limit.
// Without a CUDA device it prints why and exits 77 (skipped).
#include <catch2/catch.hpp>

#include <chainer.h>
#include <chainermn.h>

#include <chrono>
#include <cstdio>

#include "catch_session.h"
#include "core/device/cuda.h"
#include "distributed/communicators/nccl_backend.h"

namespace {

using chainer::Device;
using chainer::Tensor;

Tensor iota(int64_t n, Device device) {
  Tensor t = Tensor::empty({n});
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = float(i % 1000);
  return t.to(device);
}

}  // namespace

TEST_CASE("gpu nccl: a pending sum polled from the host leaves the next kernel launch clean") {
  const Device gpu = Device::cuda(0);
  auto nccl = chainermn::nccl::backend(MPI_COMM_SELF, 0, "test");
  Tensor buf = iota(int64_t(1) << 24, gpu);  // 64 MiB: still running when first polled
  auto sum = nccl->start_allreduce(buf);
  for (int i = 0; i < 100; ++i) sum->test();
  Tensor other = iota(1000, gpu);
  Tensor doubled = chainer::ops::add(other, other);  // a kernel launch, checked with cudaGetLastError
  CHECK(doubled.to(Device::cpu()).data<float>()[7] == 14);
  sum->wait();
  CHECK(buf.to(Device::cpu()).data<float>()[1234] == float(1234 % 1000));  // one rank: the sum is itself
}

TEST_CASE("gpu nccl: cuda::synchronize() waits for NCCL's stream") {
  const Device gpu = Device::cuda(0);
  auto nccl = chainermn::nccl::backend(MPI_COMM_SELF, 0, "test");
  Tensor buf = iota(int64_t(1) << 24, gpu);
  auto sum = nccl->start_allreduce(buf);
  chainer::cuda::get_device(0).synchronize();
  CHECK(sum->test());
  sum->wait();
}

TEST_CASE("gpu nccl: reduce_scatter and allgather over one member, even and odd sizes") {
  const double before = chainermn::mpi_timeout();
  chainermn::set_mpi_timeout(5);  // a healthy collective is far below
  const Device gpu = Device::cuda(0);
  auto nccl = chainermn::nccl::backend(MPI_COMM_SELF, 0, "test");
  for (int64_t n : {1, 7, 1000}) {
    Tensor buf = iota(n, gpu);
    nccl->reduce_scatter(buf, {n});
    nccl->allgather(buf, {n});
    Tensor host = buf.to(Device::cpu());
    for (int64_t i = 0; i < n; ++i) CHECK(host.data<float>()[i] == float(i % 1000));
  }
  chainermn::set_mpi_timeout(before);
}

TEST_CASE("gpu nccl: a blocking collective is queued, the compute stream waits for it, not the host") {
  const Device gpu = Device::cuda(0);
  auto nccl = chainermn::nccl::backend(MPI_COMM_SELF, 0, "test");
  Tensor a = iota(int64_t(4096) * 4096, gpu).reshape({4096, 4096});
  Tensor buf = iota(int64_t(1) << 20, gpu);
  nccl->allreduce(buf);  // the communicator is made at the first collective: not timed
  chainer::cuda::get_device(0).synchronize();
  using Clock = std::chrono::steady_clock;
  Tensor c = a;
  for (int i = 0; i < 16; ++i) c = chainer::ops::matmul(a, a);  // 2.2 TFLOP queued: milliseconds at least
  const auto queued = Clock::now();
  nccl->allreduce(buf);  // after the products, in stream order
  const auto returned = Clock::now();
  Tensor after = chainer::ops::add(buf, buf);  // ordered after the sum on the compute stream
  chainer::cuda::get_device(0).synchronize();
  const auto done = Clock::now();
  CHECK(returned - queued < (done - queued) / 4);
  CHECK(after.to(Device::cpu()).data<float>()[999] == 2 * 999.0f);
}

TEST_CASE("gpu nccl: the watchdog leaves a healthy job alone under a short limit") {
  const double before = chainermn::mpi_timeout();
  chainermn::set_mpi_timeout(0.5);
  const Device gpu = Device::cuda(0);
  auto nccl = chainermn::nccl::backend(MPI_COMM_SELF, 0, "test");
  Tensor buf = iota(int64_t(1) << 22, gpu);
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(2)) {
    auto sum = nccl->start_allreduce(buf);
    sum->wait();
    nccl->bcast(buf, 0);
    chainer::cuda::get_device(0).synchronize();
  }
  CHECK(buf.to(Device::cpu()).data<float>()[1234] == float(1234 % 1000));  // still alive, values intact
  chainermn::set_mpi_timeout(before);
}

int main(int argc, char** argv) {
  chainermn::init_mpi(&argc, &argv);
  if (!chainer::cuda::is_available() || !chainermn::nccl::unavailable_reason().empty()) {
    std::printf("skipped: no CUDA device or no NCCL (%s; %s)\n", chainer::cuda::unavailable_reason().c_str(),
                chainermn::nccl::unavailable_reason().c_str());
    chainermn::finalize_mpi();
    return 77;
  }
  const int failed = run_catch_session(argc, argv);
  chainermn::finalize_mpi();
  return failed != 0 ? 1 : 0;
}
