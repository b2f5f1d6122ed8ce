// Communicators under mpiexec -n 1..4 (tests/mpi_main.cpp runs them): ChainerMN's behavioural
// checks with closed-form expectations. Every rank runs every test case in the same order and
// takes the same branches, so the collectives inside them meet.
#include <catch2/catch.hpp>

#include "catch_session.h"
#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/util/random.h"
#include "chainermn.h"
#include "distributed/runtime/chunked_transfer.h"
#include "nn/links/linear.h"

using chainer::DType;
using chainer::Shape;
using chainer::Tensor;
using chainer::Variable;
using chainermn::Communicator;
namespace L = chainer::links;

namespace {

std::shared_ptr<Communicator> make(const std::string& name = "naive") { return chainermn::create_communicator(name); }

// Every communicator that averages CPU tensors and suits this job's placement: single_node needs
// one host, two_dimensional the same number of processes on every host.
std::vector<std::string> kinds() {
  auto comm = make();
  const std::map<std::string, int> per_host = chainermn::processes_per_host(comm->host_names());
  bool even = true;
  for (const auto& [h, n] : per_host) even = even && n == per_host.begin()->second;
  std::vector<std::string> out{"naive", "flat", "hierarchical"};
  if (even) out.push_back("two_dimensional");
  if (comm->inter_size() == 1) out.push_back("single_node");
  return out;
}

// ChainerMN's ExampleModel: three linear layers, parameters /a/W (3, 2), /a/b (3), /b/W (4, 3),
// /b/b (4), /c/W (5, 4), /c/b (5).
struct ExampleModel : chainer::Chain {
  std::shared_ptr<L::Linear> a, b, c;
  explicit ExampleModel(int64_t a_out = 3) {
    a = add_link("a", std::make_shared<L::Linear>(2, a_out));
    b = add_link("b", std::make_shared<L::Linear>(a_out, 4));
    c = add_link("c", std::make_shared<L::Linear>(4, 5));
  }
};

bool all_equal(const Tensor& t, double v) {
  for (double x : t.to_vector<double>())
    if (x != Approx(v)) return false;
  return true;
}

// Row-major values 0, 1, 2, ... plus OFFSET, of SHAPE and DTYPE.
Tensor iota(const Shape& shape, DType dtype, double offset) {
  Tensor t = Tensor::arange(chainer::shape_numel(shape), DType::Float64);
  std::vector<double> v = t.to_vector<double>();
  for (double& x : v) x += offset;
  return Tensor::from_vector(v, shape).astype(dtype);
}

bool same_values(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && a.to_vector<double>() == b.to_vector<double>();
}

// Lowers the chunk size for one scope, so the multi-chunk paths run on small data (every rank
// does the same).
struct SmallChunks {
  size_t saved = chainermn::detail::max_chunk_bytes();
  explicit SmallChunks(size_t bytes) { chainermn::detail::set_max_chunk_bytes(bytes); }
  ~SmallChunks() { chainermn::detail::set_max_chunk_bytes(saved); }
};

}  // namespace

// ---- Set-up and topology ----

TEST_CASE("communicator: init_mpi is idempotent") {
  CHECK(chainermn::mpi_is_running());
  CHECK_NOTHROW(chainermn::init_mpi());
  CHECK_NOTHROW(chainermn::init_mpi());
  int provided = -1;
  MPI_Query_thread(&provided);
  CHECK(provided >= MPI_THREAD_FUNNELED);
}

TEST_CASE("communicator: the wait policy is the job's: CHAINERMN_WAIT_POLICY, else passive on oversubscribed hosts") {
  using chainermn::WaitPolicy;
  const char* saved = std::getenv("CHAINERMN_WAIT_POLICY");
  const std::string restore = saved ? saved : "";
  // Decides again with CHAINERMN_WAIT_POLICY=TEXT on this rank, then checks that every rank got
  // the same policy and that collectives work under it.
  auto decide = [](const std::string& text) {
    setenv("CHAINERMN_WAIT_POLICY", text.c_str(), 1);
    chainermn::detail::decide_wait_policy();
    const int mine = int(chainermn::wait_policy());
    int low = mine, high = mine;
    MPI_Allreduce(&mine, &low, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&mine, &high, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    REQUIRE(low == high);  // else the collectives below would not match: a hang, not a failure
    auto comm = chainermn::create_communicator("naive");
    const Tensor sum = comm->allreduce(Tensor::full({3}, 1.0));
    CHECK(sum.to_vector<float>() == std::vector<float>(3, float(comm->size())));
    return chainermn::wait_policy();
  };
  const int rank = chainermn::world_rank();
  CHECK(decide("active") == WaitPolicy::Active);
  CHECK(decide("passive") == WaitPolicy::Passive);
  // One rank asking for passive makes every rank passive (MPI does not match a blocking
  // collective with a nonblocking one).
  CHECK(decide(rank == 0 ? "passive" : "active") == WaitPolicy::Passive);
  // auto: passive where a machine (a boot id) runs more ranks than the cores they may use
  // (unbound ranks here, so any rank's affinity mask is theirs together).
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string boot_id;
  REQUIRE(in >> boot_id);
  auto comm = chainermn::create_communicator("naive");
  const std::vector<std::string> boot_ids = comm->allgather_obj(boot_id);
  cpu_set_t cpus;
  REQUIRE(sched_getaffinity(0, sizeof cpus, &cpus) == 0);
  int oversubscribed = std::count(boot_ids.begin(), boot_ids.end(), boot_id) > CPU_COUNT(&cpus), any = 0;
  MPI_Allreduce(&oversubscribed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  CHECK(decide("auto") == (any ? WaitPolicy::Passive : WaitPolicy::Active));
  // Ranks asked differently still meet in the same calls: auto on rank 0 only decides by rank 0's
  // machine.
  int rank0_oversubscribed = oversubscribed;
  MPI_Bcast(&rank0_oversubscribed, 1, MPI_INT, 0, MPI_COMM_WORLD);
  CHECK(decide(rank == 0 ? "auto" : "active") == (rank0_oversubscribed ? WaitPolicy::Passive : WaitPolicy::Active));
  CHECK(decide("") == (any ? WaitPolicy::Passive : WaitPolicy::Active));
  setenv("CHAINERMN_WAIT_POLICY", "spin", 1);
  CHECK_THROWS_WITH(chainermn::detail::decide_wait_policy(),
                    Catch::Contains("CHAINERMN_WAIT_POLICY must be active, passive or auto, not 'spin'"));
  CHECK(std::string(chainermn::wait_policy_name(WaitPolicy::Passive)) == "passive");
  decide(restore);
  if (!saved) unsetenv("CHAINERMN_WAIT_POLICY");
}

TEST_CASE("communicator: rank and size follow MPI_COMM_WORLD; the comm is duplicated") {
  for (const std::string& kind : kinds()) {
    auto comm = make(kind);
    int rank = -1, size = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(comm->name() == kind);
    CHECK(comm->rank() == rank);
    CHECK(comm->size() == size);
    CHECK(chainermn::world_rank() == rank);
    CHECK(chainermn::world_size() == size);
    int cmp = -1;
    MPI_Comm_compare(comm->mpi_comm(), MPI_COMM_WORLD, &cmp);
    CHECK(cmp == MPI_CONGRUENT);  // same group, another context
    CHECK_FALSE(comm->debug());
  }
}

TEST_CASE("communicator: intra and inter ranks group the processes by host name") {
  auto comm = make();
  const auto& hosts = comm->host_names();
  REQUIRE(int(hosts.size()) == comm->size());
  CHECK(hosts[size_t(comm->rank())] == chainermn::host_name());
  using Info = std::vector<int>;  // intra_rank, intra_size, inter_rank, inter_size
  auto all = comm->allgather_obj(Info{comm->intra_rank(), comm->intra_size(), comm->inter_rank(), comm->inter_size()});
  std::map<std::string, std::set<int>> intra_by_host;
  std::map<std::string, int> inter_by_host;
  std::set<int> inter_ranks;
  for (int r = 0; r < comm->size(); ++r) {
    const Info& i = all[size_t(r)];
    const std::string& h = hosts[size_t(r)];
    intra_by_host[h].insert(i[0]);
    CHECK(i[1] == std::count(hosts.begin(), hosts.end(), h));
    CHECK(i[3] == all[0][3]);
    auto [it, fresh] = inter_by_host.emplace(h, i[2]);
    CHECK(it->second == i[2]);  // one inter rank per host
    if (fresh) CHECK(i[2] == int(inter_ranks.size()));  // hosts numbered by their smallest rank
    inter_ranks.insert(i[2]);
  }
  CHECK(int(inter_by_host.size()) == all[0][3]);
  for (const auto& [h, ranks] : intra_by_host) {
    const int n = int(ranks.size());
    CHECK(*ranks.begin() == 0);
    CHECK(*ranks.rbegin() == n - 1);  // 0..intra_size-1, no repeats
  }
}

TEST_CASE("communicator: the job spans the hosts it was started on", "[hosts]") {
  // Set by tests/distributed/simhosts.sh: a run on simulated hosts must really see them as separate hosts.
  const char* expected = std::getenv("CHAINERMN_EXPECT_HOSTS");
  SKIP_UNLESS(expected, "CHAINERMN_EXPECT_HOSTS unset: set by tests/distributed/simhosts.sh, which runs this case");
  auto comm = make();
  CHECK(comm->inter_size() == std::atoi(expected));
  CHECK(std::set<std::string>(comm->host_names().begin(), comm->host_names().end()).size() == size_t(std::atoi(expected)));
}

TEST_CASE("communicator: compute_topology follows ChainerMN's rule on any host list") {
  const std::vector<std::string> hosts{"b", "a", "b", "c", "a", "b"};
  const int intra_rank[] = {0, 0, 1, 0, 1, 2};
  const int intra_size[] = {3, 2, 3, 1, 2, 3};
  const int inter_rank[] = {0, 1, 0, 2, 1, 0};  // b first (rank 0), then a (rank 1), then c
  for (int r = 0; r < 6; ++r) {
    auto t = chainermn::compute_topology(hosts, r);
    CHECK(t.intra_rank == intra_rank[r]);
    CHECK(t.intra_size == intra_size[r]);
    CHECK(t.inter_rank == inter_rank[r]);
    CHECK(t.inter_size == 3);
  }
  CHECK_THROWS_AS(chainermn::compute_topology(hosts, 6), chainer::Error);
}

TEST_CASE("communicator: create_communicator explains NCCL-only and unknown names") {
  for (const char* gpu : {"pure_nccl", "non_cuda_aware"}) {
    CHECK_THROWS_WITH(make(gpu), Catch::Contains(std::string("'") + gpu + "'") && Catch::Contains("NCCL") &&
                                     Catch::Contains("naive, flat, hierarchical, two_dimensional and single_node"));
  }
  CHECK_THROWS_WITH(make("fancy"), Catch::Contains("unknown communicator name 'fancy'") &&
                                       Catch::Contains("naive, flat, hierarchical, two_dimensional, single_node, "
                                                       "pure_nccl, non_cuda_aware, dummy"));
  CHECK_THROWS_AS(make(""), chainer::Error);
  CHECK_THROWS_WITH(chainermn::create_communicator("naive", MPI_COMM_NULL), Catch::Contains("MPI_COMM_NULL"));
}

TEST_CASE("communicator: single_node and two_dimensional refuse placements they cannot serve, on every rank") {
  auto comm = make();
  const std::map<std::string, int> per_host = chainermn::processes_per_host(comm->host_names());
  if (comm->inter_size() > 1)
    CHECK_THROWS_WITH(make("single_node"), Catch::Contains("single_node: the job spans " +
                                                           std::to_string(comm->inter_size()) + " hosts"));
  else
    CHECK(make("single_node")->name() == "single_node");
  int low = 1 << 30, high = 0;
  for (const auto& [h, n] : per_host) low = std::min(low, n), high = std::max(high, n);
  if (low != high)
    CHECK_THROWS_WITH(make("two_dimensional"),
                      Catch::Contains("two_dimensional: every host needs the same number of processes") &&
                          Catch::Contains(" has " + std::to_string(low)) && Catch::Contains(" has " + std::to_string(high)));
  else
    CHECK(make("two_dimensional")->name() == "two_dimensional");
}

TEST_CASE("communicator: CHAINERMN_DEBUG=1 turns debug mode on") {
  setenv("CHAINERMN_DEBUG", "1", 1);
  auto on = make("flat");
  unsetenv("CHAINERMN_DEBUG");
  auto off = make("flat");
  CHECK(on->debug());
  CHECK_FALSE(off->debug());
  off->set_debug(true);
  CHECK(off->debug());
}

TEST_CASE("communicator: split groups by color, orders by key, keeps the kind") {
  for (const std::string& kind : kinds()) {
    if (kind == "two_dimensional") continue;  // half of evenly filled hosts need not be even
    auto comm = make(kind);
    const int rank = comm->rank(), size = comm->size();
    auto sub = comm->split(rank % 2, -rank);  // reversed order inside each color
    REQUIRE(sub != nullptr);
    CHECK(sub->name() == kind);
    const int members = rank % 2 == 0 ? (size + 1) / 2 : size / 2;
    CHECK(sub->size() == members);
    CHECK(sub->rank() == members - 1 - rank / 2);
    // Sum of the world ranks of the color: closed form over r = color, color + 2, ...
    int expected = 0;
    for (int r = rank % 2; r < size; r += 2) expected += r;
    CHECK(sub->allreduce(Tensor::scalar(rank, DType::Int64)).item<int64_t>() == expected);
    // Only rank 0 in a group of its own; the others opt out.
    auto solo = comm->split(rank == 0 ? 0 : MPI_UNDEFINED, 0);
    CHECK((solo != nullptr) == (rank == 0));
    if (solo) CHECK(solo->size() == 1);
  }
}

TEST_CASE("communicator: finalize frees it; later calls throw") {
  auto comm = make();
  comm->finalize();
  CHECK(comm->finalized());
  CHECK_THROWS_WITH(comm->bcast(Tensor::zeros({2})), Catch::Contains("after finalize"));
  comm->finalize();  // idempotent
}

TEST_CASE("communicator: CHAINERMN_MPI_CHECK turns an MPI error into chainer::Error with the call") {
  auto comm = make();
  int x = 0;
  try {
    CHAINERMN_MPI_CHECK(MPI_Send(&x, 1, MPI_INT, comm->size() + 5, 0, comm->mpi_comm()));
    FAIL("no error");
  } catch (const chainermn::MpiError& e) {
    CHECK_THAT(e.what(), Catch::Contains("MPI_Send(&x, 1, MPI_INT, comm->size() + 5, 0, comm->mpi_comm())") &&
                             Catch::Contains("test_communicator.cpp:") && Catch::Contains("rank"));
    CHECK(e.code() != MPI_SUCCESS);
  }
}

// ---- Tensors ----

TEST_CASE("communicator: send/recv around a ring, every dtype and rank up to 4", "[peers]") {
  auto comm = make();
  const int rank = comm->rank(), size = comm->size();
  SKIP_UNLESS(size >= 2, "needs a peer: 2 or more processes");  // a ring of one would be a blocking send to self
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  // X to the next rank, the previous rank's back. Even ranks send first, odd ones receive
  // first: no cycle of blocked sends.
  auto pass_along = [&](const Tensor& x, int tag) {
    Tensor y;
    if (rank % 2 == 0) {
      comm->send(x, next, tag);
      y = comm->recv(prev, tag);
    } else {
      y = comm->recv(prev, tag);
      comm->send(x, next, tag);
    }
    return y;
  };
  const std::vector<Shape> shapes{{50}, {50, 20}, {50, 20, 5}, {50, 20, 5, 3}};
  for (DType dtype : {DType::Float32, DType::Float64, DType::Int32, DType::Int64})
    for (const Shape& shape : shapes)
      CHECK(same_values(pass_along(iota(shape, dtype, 1000.0 * rank), 7), iota(shape, dtype, 1000.0 * prev)));
  // A non-contiguous view (a transpose) arrives as its contiguous copy.
  const Tensor base = iota({50, 20}, DType::Float32, 100.0 * rank);
  const Tensor view = base.transpose();
  REQUIRE_FALSE(view.is_contiguous());
  Tensor y = pass_along(view, 0);
  CHECK(y.shape() == Shape{20, 50});
  CHECK(y.is_contiguous());
  CHECK(same_values(y, iota({50, 20}, DType::Float32, 100.0 * prev).transpose().contiguous()));
  // A slice: columns 5..14 of every row, starting 5 elements into the storage.
  const Tensor slice = base.narrow(1, 5, 10);
  REQUIRE_FALSE(slice.is_contiguous());
  y = pass_along(slice, 0);
  CHECK(y.shape() == Shape{50, 10});
  CHECK(same_values(y, iota({50, 20}, DType::Float32, 100.0 * prev).narrow(1, 5, 10).contiguous()));
}

TEST_CASE("communicator: recv from any source, scalars, empty and undefined tensors", "[peers]") {
  auto comm = make();
  const int rank = comm->rank(), size = comm->size();
  SKIP_UNLESS(size >= 2, "needs a peer: 2 or more processes");
  if (rank != 0) {
    comm->send(Tensor::scalar(rank, DType::Int32), 0, 3);
    comm->send(Tensor::zeros({0, 4}), 0, 4);
    comm->send(Tensor(), 0, 5);
  } else {
    std::set<int> from;
    for (int i = 1; i < size; ++i) {
      Tensor s = comm->recv(MPI_ANY_SOURCE, 3);
      CHECK(s.ndim() == 0);
      from.insert(s.item<int32_t>());
    }
    CHECK(int(from.size()) == size - 1);
    for (int i = 1; i < size; ++i) {
      Tensor e = comm->recv(i, 4);
      CHECK(e.shape() == Shape{0, 4});
      CHECK_FALSE(comm->recv(i, 5).defined());
    }
  }
}

TEST_CASE("communicator: a byte string where a tensor is expected is reported", "[peers]") {
  auto comm = make();
  SKIP_UNLESS(comm->size() >= 2, "needs a peer: 2 or more processes");
  if (comm->rank() == 1) comm->send_bytes("hello", 0, 9);
  if (comm->rank() == 0) {
    CHECK_THROWS_WITH(comm->recv(1, 9), Catch::Contains("is not a tensor"));
    char rest[5];  // the string's data is still waiting: drain it
    MPI_Recv(rest, 5, MPI_BYTE, 1, 9, comm->mpi_comm(), MPI_STATUS_IGNORE);
    CHECK(std::string(rest, 5) == "hello");
  }
}

TEST_CASE("communicator: bcast from any root") {
  auto comm = make();
  const int rank = comm->rank(), size = comm->size();
  for (int root : {0, size - 1}) {
    for (DType dtype : {DType::Float32, DType::Float64, DType::Int32, DType::Int64, DType::UInt8}) {
      // Off the root the input has another shape, or none: it is ignored.
      const Tensor x = rank == root ? Tensor::full({3, 4}, root + 1, dtype) : (rank % 2 ? Tensor::zeros({7}) : Tensor());
      const Tensor y = comm->bcast(x, root);
      CHECK(y.shape() == Shape{3, 4});
      CHECK(y.dtype() == dtype);
      CHECK(all_equal(y, root + 1));
    }
    const Tensor s = comm->bcast(rank == root ? iota({50, 20}, DType::Float32, 0).transpose() : Tensor(), root);
    CHECK(same_values(s, iota({50, 20}, DType::Float32, 0).transpose().contiguous()));
    CHECK_FALSE(comm->bcast(Tensor(), root).defined());
  }
}

TEST_CASE("communicator: gather and allgather tensors of different shapes") {
  auto comm = make();
  const int rank = comm->rank(), size = comm->size();
  const Tensor x = Tensor::full({rank + 1, 2}, rank, DType::Float64);
  for (int root : {0, size - 1}) {
    auto ys = comm->gather(x, root);
    if (rank == root) {
      REQUIRE(int(ys.size()) == size);
      for (int r = 0; r < size; ++r) {
        CHECK(ys[size_t(r)].shape() == Shape{r + 1, 2});
        CHECK(all_equal(ys[size_t(r)], r));
      }
    } else {
      CHECK(ys.empty());
    }
  }
  auto zs = comm->allgather(x);
  REQUIRE(int(zs.size()) == size);
  for (int r = 0; r < size; ++r) {
    CHECK(zs[size_t(r)].shape() == Shape{r + 1, 2});
    CHECK(all_equal(zs[size_t(r)], r));
  }
  CHECK_FALSE(zs[size_t(rank)].shares_storage(x));
}

TEST_CASE("communicator: allreduce sums elementwise in every numeric dtype") {
  auto comm = make();
  const int rank = comm->rank(), size = comm->size();
  // float16 and bfloat16 by the MPI_Op of distributed/runtime/chunked_transfer.h (these sums are exact).
  for (DType dtype : {DType::Float32, DType::Float64, DType::Int32, DType::Int64, DType::Float16, DType::BFloat16}) {
    const Tensor x = Tensor::full({3, 4}, rank + 1, dtype);
    const Tensor y = comm->allreduce(x);
    CHECK(y.dtype() == dtype);
    CHECK(y.shape() == Shape{3, 4});
    CHECK(all_equal(y, size * (size + 1) / 2));  // 1 + 2 + ... + size
    CHECK(all_equal(x, rank + 1));                // the input is untouched
  }
  // x = iota + rank: sum = size * iota + size (size - 1) / 2, on a transposed view too.
  const Tensor x = iota({4, 6}, DType::Float64, rank).transpose();
  const std::vector<double> got = comm->allreduce(x).to_vector<double>();
  const std::vector<double> base = iota({4, 6}, DType::Float64, 0).transpose().contiguous().to_vector<double>();
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(size * base[i] + size * (size - 1) / 2.0));
  CHECK_THROWS_WITH(comm->allreduce(Tensor::ones({2}, DType::UInt8)), Catch::Contains("uint8"));
}

TEST_CASE("communicator: allreduce with shapes differing across ranks fails on every rank", "[peers]") {
  auto comm = make();
  const int rank = comm->rank(), size = comm->size();
  SKIP_UNLESS(size >= 2, "needs a peer: 2 or more processes");
  const Tensor x = Tensor::ones({rank == 1 ? 5 : 4});
  CHECK_THROWS_WITH(comm->allreduce(x), Catch::Contains("same dtype and shape") &&
                                            Catch::Contains("rank 0 has float32 (4,)") &&
                                            Catch::Contains("rank 1 has float32 (5,)"));
  // Still in step afterwards.
  CHECK(comm->allreduce(Tensor::ones({1})).item<float>() == float(size));
}

TEST_CASE("communicator: scatter sends xs[i] to rank i") {
  auto comm = make();
  const int rank = comm->rank(), size = comm->size();
  for (int root : {0, size - 1}) {
    std::vector<Tensor> xs;
    if (rank == root)
      for (int i = 0; i < size; ++i) xs.push_back(Tensor::full({i + 1}, 10 * i + root, DType::Int64));
    const Tensor y = comm->scatter(xs, root);
    CHECK(y.shape() == Shape{rank + 1});
    CHECK(all_equal(y, 10 * rank + root));
  }
  std::vector<Tensor> too_few(rank == 0 ? size_t(size + 1) : 0, Tensor::zeros({1}));
  CHECK_THROWS_WITH(comm->scatter(too_few, 0), Catch::Contains("one per rank"));
}

TEST_CASE("communicator: alltoall with a different shape per destination") {
  auto comm = make();
  const int rank = comm->rank(), size = comm->size();
  std::vector<Tensor> xs;
  for (int d = 0; d < size; ++d) xs.push_back(Tensor::full({rank + 1, d + 1}, 100 * rank + d, DType::Float32));
  const std::vector<Tensor> ys = comm->alltoall(xs);
  REQUIRE(int(ys.size()) == size);
  for (int s = 0; s < size; ++s) {
    CHECK(ys[size_t(s)].shape() == Shape{s + 1, rank + 1});
    CHECK(all_equal(ys[size_t(s)], 100 * s + rank));
  }
  CHECK_THROWS_WITH(comm->alltoall({}), Catch::Contains("one per rank"));
}

TEST_CASE("communicator: transfers in many chunks reassemble exactly") {
  auto comm = make();
  const int rank = comm->rank(), size = comm->size();
  SmallChunks small(64);  // 16 float32 per chunk
  const Tensor x = iota({37, 3}, DType::Float32, rank);
  CHECK(same_values(comm->bcast(x, 0), iota({37, 3}, DType::Float32, 0)));
  const std::vector<double> sum = comm->allreduce(x).to_vector<double>();
  const std::vector<double> base = iota({37, 3}, DType::Float32, 0).to_vector<double>();
  for (size_t i = 0; i < sum.size(); ++i) CHECK(sum[i] == Approx(size * base[i] + size * (size - 1) / 2.0));
  auto all = comm->allgather(x);
  for (int r = 0; r < size; ++r) CHECK(same_values(all[size_t(r)], iota({37, 3}, DType::Float32, r)));
  const std::string text(1000 + size_t(rank), char('a' + rank));
  auto texts = comm->allgather_bytes(text);
  for (int r = 0; r < size; ++r) CHECK(texts[size_t(r)] == std::string(1000 + size_t(r), char('a' + r)));
  CHECK(comm->bcast_bytes(rank == 0 ? text : "", 0) == std::string(1000, 'a'));
  if (size >= 2) {
    if (rank == 0) comm->send(x, 1, 2);
    if (rank == 1) CHECK(same_values(comm->recv(0, 2), iota({37, 3}, DType::Float32, 0)));
  }
  // The multi-node mean too.
  for (const std::string& kind : kinds()) {
    auto c = make(kind);
    ExampleModel model;
    for (auto& [n, p] : model.namedparams()) p.set_grad(Tensor::full(p.shape(), rank));
    c->multi_node_mean_grad(model);
    for (auto& [n, p] : model.namedparams()) CHECK(all_equal(p.grad(), (size - 1) / 2.0));
  }
}

// ---- Byte strings and objects ----

TEST_CASE("communicator: byte strings: send/recv, bcast, gather") {
  auto comm = make();
  const int rank = comm->rank(), size = comm->size();
  std::string blob(300, '\0');
  for (size_t i = 0; i < blob.size(); ++i) blob[i] = char((i * 7 + size_t(rank)) % 256);  // with NULs
  if (size >= 2) {
    if (rank == 0) comm->send_bytes(blob, 1, 11);
    if (rank == 1) {
      const std::string got = comm->recv_bytes(0, 11);
      REQUIRE(got.size() == 300);
      for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == char((i * 7) % 256));
    }
  }
  CHECK(comm->bcast_bytes(rank == size - 1 ? "from the last" : "ignored", size - 1) == "from the last");
  CHECK(comm->bcast_bytes("", 0).empty());
  auto all = comm->gather_bytes(std::string(size_t(rank), 'x'), 0);
  if (rank == 0) {
    REQUIRE(int(all.size()) == size);
    for (int r = 0; r < size; ++r) CHECK(all[size_t(r)] == std::string(size_t(r), 'x'));
  } else {
    CHECK(all.empty());
  }
}

TEST_CASE("communicator: object serialization round-trips nested values and rejects bad input") {
  using Nested = std::map<std::string, std::vector<std::pair<int, std::string>>>;
  const Nested n{{"a", {{1, "one"}, {2, "two"}}}, {"", {}}, {"z", {{-3, std::string("\0x", 2)}}}};
  CHECK(chainermn::deserialize_object<Nested>(chainermn::serialize_object(n)) == n);
  const std::vector<bool> bits{true, false, true};
  CHECK(chainermn::deserialize_object<std::vector<bool>>(chainermn::serialize_object(bits)) == bits);
  using P = std::pair<double, std::map<int, float>>;
  const P p{2.5, {{1, 1.5f}}};
  CHECK(chainermn::deserialize_object<P>(chainermn::serialize_object(p)) == p);
  const Tensor t = iota({3, 5}, DType::Int64, 7).transpose();
  const Tensor u = chainermn::deserialize_object<Tensor>(chainermn::serialize_object(t));
  CHECK(same_values(u, t.contiguous()));
  CHECK_FALSE(chainermn::deserialize_object<Tensor>(chainermn::serialize_object(Tensor())).defined());
  // A string read as a vector of doubles, truncated input, trailing bytes.
  CHECK_THROWS_AS(chainermn::deserialize_object<std::vector<double>>(chainermn::serialize_object(std::string("abc"))),
                  chainer::Error);
  std::string cut = chainermn::serialize_object(n);
  cut.pop_back();
  CHECK_THROWS_WITH(chainermn::deserialize_object<Nested>(cut), Catch::Contains("same type"));
  CHECK_THROWS_WITH(chainermn::deserialize_object<int32_t>(chainermn::serialize_object(int64_t(1))),
                    Catch::Contains("left over"));
}

TEST_CASE("communicator: object collectives on strings, vectors, maps, tensors") {
  auto comm = make();
  const int rank = comm->rank(), size = comm->size();
  using Table = std::map<std::string, std::vector<int>>;
  if (size >= 2) {
    if (rank == 0) comm->send_obj(Table{{"x", {1, 2, 3}}, {"y", {}}}, 1, 1);
    if (rank == 1) CHECK(comm->recv_obj<Table>(0, 1) == Table{{"x", {1, 2, 3}}, {"y", {}}});
  }
  CHECK(comm->bcast_obj(rank == 0 ? std::string("hello") : std::string("nope")) == "hello");
  CHECK(comm->bcast_obj(std::vector<std::string>(size_t(rank + 1), "v"), size - 1) ==
        std::vector<std::string>(size_t(size), "v"));
  auto names = comm->gather_obj(chainer::str("rank", rank), 0);
  if (rank == 0) {
    REQUIRE(int(names.size()) == size);
    for (int r = 0; r < size; ++r) CHECK(names[size_t(r)] == chainer::str("rank", r));
  }
  auto tables = comm->allgather_obj(Table{{"r", {rank}}});
  for (int r = 0; r < size; ++r) CHECK(tables[size_t(r)] == Table{{"r", {r}}});

  // allreduce_obj: sums, in closed form.
  CHECK(comm->allreduce_obj(rank) == size * (size - 1) / 2);
  CHECK(comm->allreduce_obj(int64_t(1) << 40) == (int64_t(1) << 40) * size);
  CHECK(comm->allreduce_obj(0.5 * rank) == Approx(0.25 * size * (size - 1)));
  const auto m = comm->allreduce_obj(std::map<std::string, double>{{"main/loss", 1.0 + rank}, {chainer::str("r", rank), 1}});
  CHECK(m.at("main/loss") == Approx(size + size * (size - 1) / 2.0));
  CHECK(int(m.size()) == size + 1);  // the union of the keys
  for (int r = 0; r < size; ++r) CHECK(m.at(chainer::str("r", r)) == 1.0);
  CHECK(comm->allreduce_obj(std::vector<double>{1.0, double(rank)}) ==
        std::vector<double>{double(size), size * (size - 1) / 2.0});
  CHECK(all_equal(comm->allreduce_obj(Tensor::full({2, 2}, rank, DType::Float64)), size * (size - 1) / 2.0));
  const auto nested = comm->allreduce_obj(std::map<std::string, std::pair<int, double>>{{"k", {1, 0.5}}});
  CHECK(nested.at("k").first == size);
  CHECK(nested.at("k").second == Approx(0.5 * size));
  if (size >= 2) {
    CHECK_THROWS_WITH(comm->allreduce_obj(std::vector<int>(rank == 1 ? 2 : 1, 0)), Catch::Contains("different lengths"));
  }
}

// ---- Models ----

TEST_CASE("communicator: bcast_data makes every rank's parameters rank 0's") {
  for (const std::string& kind : kinds()) {
    auto comm = make(kind);
    const int rank = comm->rank(), size = comm->size();
    chainer::random::seed(uint64_t(100 + rank));  // different initial values on every rank
    ExampleModel model;
    auto before = comm->allgather(model.a->W().data());
    if (size >= 2) CHECK_FALSE(same_values(before[0], before[1]));
    // A non-contiguous parameter off the root still receives in place.
    if (rank == 1) model.c->W().set_data(model.c->W().data().transpose().contiguous().transpose());
    comm->bcast_data(model);
    for (auto& [n, p] : model.namedparams()) {
      auto all = comm->allgather(p.data());
      for (int r = 1; r < size; ++r) CHECK(same_values(all[size_t(r)], all[0]));
    }
    CHECK(same_values(model.a->W().data(), before[0]));
  }
}

TEST_CASE("communicator: bcast_data names the parameter when models differ", "[peers]") {
  auto comm = make();
  const int rank = comm->rank(), size = comm->size();
  SKIP_UNLESS(size >= 2, "needs a peer: 2 or more processes");
  ExampleModel model(rank == 1 ? 6 : 3);
  CHECK_THROWS_WITH(comm->bcast_data(model),
                    Catch::Contains("bcast_data: the model differs across ranks") && Catch::Contains("rank 1:") &&
                        Catch::Contains("/a/W is float32 (6, 2) here but float32 (3, 2) on rank 0"));
  L::Linear lazy(3);  // W uninitialized until the first forward
  if (rank == 0) lazy(Variable(Tensor::ones({1, 4})));
  CHECK_THROWS_WITH(comm->bcast_data(lazy), Catch::Contains("/W is initialized on rank 0 but not here"));
}

namespace {
// grad = rank + k for the k-th parameter (k = 0..5), as in ChainerMN's tests.
void set_grads(chainer::Link& model, int rank) {
  int k = 0;
  for (auto& [n, p] : model.namedparams()) p.set_grad(Tensor::full(p.shape(), rank + k++));
}
}  // namespace

TEST_CASE("communicator: multi_node_mean_grad averages gradients (every kind, twice)") {
  for (const std::string& kind : kinds()) {
    auto comm = make(kind);
    const int rank = comm->rank(), size = comm->size();
    ExampleModel model;
    for (int round = 0; round < 2; ++round) {
      set_grads(model, rank);
      if (round == 1) comm->allreduce_grad(model);  // the old name
      else comm->multi_node_mean_grad(model);
      int k = 0;
      for (auto& [n, p] : model.namedparams()) {
        INFO(kind << " " << n << " round " << round);
        CHECK(p.grad().shape() == p.shape());
        CHECK(all_equal(p.grad(), (size - 1) / 2.0 + k++));  // mean of rank + k over the ranks
      }
    }
  }
}

TEST_CASE("communicator: flat reuses one buffer across calls and handles float64") {
  auto comm = chainermn::create_communicator("flat");
  auto* flat = dynamic_cast<chainermn::FlatCommunicator*>(comm.get());
  REQUIRE(flat != nullptr);
  const int rank = comm->rank(), size = comm->size();
  ExampleModel model;
  set_grads(model, rank);
  comm->multi_node_mean_grad(model);
  const Tensor buf = flat->buffer(DType::Float32);
  REQUIRE(buf.defined());
  CHECK(buf.numel() == model.count_params());
  set_grads(model, rank);
  comm->multi_node_mean_grad(model);
  CHECK(flat->buffer(DType::Float32).shares_storage(buf));
  // A float64 parameter gets a buffer of its own.
  chainer::Link link;
  link.add_param("d", Tensor::zeros({4}, DType::Float64)).set_grad(Tensor::full({4}, rank, DType::Float64));
  link.add_param("f", Tensor::zeros({2})).set_grad(Tensor::full({2}, 2 * rank));
  comm->multi_node_mean_grad(link);
  CHECK(all_equal(link.param("d").grad(), (size - 1) / 2.0));
  CHECK(all_equal(link.param("f").grad(), size - 1.0));
  CHECK(flat->buffer(DType::Float64).numel() == 4);
}

TEST_CASE("communicator: parameters without gradients are skipped") {
  for (const std::string& kind : kinds()) {
    auto comm = make(kind);
    const int rank = comm->rank(), size = comm->size();
    ExampleModel model;
    set_grads(model, rank);
    model.c->W().cleargrad();  // on every rank
    model.b->b()->cleargrad();
    comm->multi_node_mean_grad(model);
    CHECK_FALSE(model.c->W().grad().defined());
    CHECK_FALSE(model.b->b()->grad().defined());
    CHECK(all_equal(model.a->W().grad(), (size - 1) / 2.0 + 0));
    CHECK(all_equal(model.c->b()->grad(), (size - 1) / 2.0 + 5));
    // Uninitialized parameters are skipped too.
    L::Linear lazy(3);
    comm->multi_node_mean_grad(lazy, true);
    CHECK_FALSE(lazy.W().grad().defined());
  }
}

TEST_CASE("communicator: zero_fill counts missing gradients as zeros") {
  for (const std::string& kind : kinds()) {
    auto comm = make(kind);
    const int rank = comm->rank(), size = comm->size();
    {
      // Only even ranks have gradients (rank + k). With m = ceil(size / 2) even ranks,
      // sum over even r of (r + k) = m (m - 1) + k m, divided by size.
      ExampleModel model;
      if (rank % 2 == 0) set_grads(model, rank);
      else model.cleargrads();
      comm->multi_node_mean_grad(model, true);
      const int m = (size + 1) / 2;
      int k = 0;
      for (auto& [n, p] : model.namedparams()) {
        INFO(kind << " " << n);
        REQUIRE(p.grad().defined());
        CHECK(all_equal(p.grad(), (m * (m - 1.0) + k++ * m) / size));
      }
    }
    {
      // Every rank but 0 has gradients: sum over r = 1..size-1 of (r + k) / size
      //   = (size - 1) / 2 + k (size - 1) / size.
      ExampleModel model;
      if (rank != 0) set_grads(model, rank);
      else model.cleargrads();
      comm->multi_node_mean_grad(model, true);
      int k = 0;
      for (auto& [n, p] : model.namedparams()) {
        INFO(kind << " " << n);
        CHECK(all_equal(p.grad(), (size - 1) / 2.0 + double(k++) * (size - 1) / size));
      }
    }
  }
}

// ---- allreduce_grad_dtype: gradients travel in another dtype ----

namespace {

std::shared_ptr<Communicator> make_with_wire(const std::string& kind, DType wire) {
  chainermn::CommunicatorOptions options;
  options.allreduce_grad_dtype = wire;
  return chainermn::create_communicator(kind, MPI_COMM_WORLD, options);
}

// Rank RANK's gradient of parameter K of SHAPE in the random cases: normal values from a
// generator seeded by both, so that every rank can make every rank's.
Tensor random_grad(const Shape& shape, int rank, int k) {
  chainer::Generator gen(uint64_t(1000 * rank + k));
  return chainer::random::normal(shape, 0.0, 1.0, DType::Float32, &gen);
}

// Whether every element of T is V, exactly.
bool exactly(const Tensor& t, double v) {
  const std::vector<double> values = t.to_vector<double>();
  return std::all_of(values.begin(), values.end(), [&](double x) { return x == v; });
}

// The unit roundoff of the wire dtype: half its spacing at 1.
double unit_roundoff(DType wire) { return wire == DType::Float16 ? 0x1p-11 : 0x1p-8; }

const std::vector<DType> kWireTypes = {DType::Float16, DType::BFloat16};

}  // namespace

TEST_CASE("communicator: allreduce_grad_dtype float16 and bfloat16: the float32 mean within the wire's precision") {
  for (const std::string& kind : kinds())
    for (DType wire : kWireTypes) {
      INFO(kind << ", " << chainer::dtype_name(wire) << " on the wire");
      auto comm = make_with_wire(kind, wire);
      auto reference = make("naive");  // float32 on the wire
      CHECK(comm->options().allreduce_grad_dtype == wire);
      const int rank = comm->rank(), size = comm->size();
      ExampleModel model, ref;
      const auto params = model.namedparams(), ref_params = ref.namedparams();
      for (size_t k = 0; k < params.size(); ++k) {
        Variable(params[k].second).set_grad(random_grad(params[k].second.shape(), rank, int(k)));
        Variable(ref_params[k].second).set_grad(random_grad(params[k].second.shape(), rank, int(k)));
      }
      comm->multi_node_mean_grad(model);
      reference->multi_node_mean_grad(ref);
      // Each rank's g / size is rounded once (relative error u) and the sum of SIZE such values
      // takes at most SIZE - 1 roundings of partial sums: |error| <= SIZE u mean_r |g_r| to first
      // order (plus float16's subnormal spacing 2^-24 per rounding, for values near zero, and the
      // float32 reference's own rounding).
      const double u = unit_roundoff(wire);
      size_t bad = 0, total = 0;
      double worst = 0;
      for (size_t k = 0; k < params.size(); ++k) {
        CHECK(params[k].second.grad().dtype() == DType::Float32);
        const std::vector<float> got = params[k].second.grad().to_vector<float>();
        const std::vector<float> want = ref_params[k].second.grad().to_vector<float>();
        std::vector<double> mean_abs(got.size(), 0.0);
        for (int r = 0; r < size; ++r) {
          const std::vector<float> g = random_grad(params[k].second.shape(), r, int(k)).to_vector<float>();
          for (size_t i = 0; i < g.size(); ++i) mean_abs[i] += std::abs(double(g[i])) / size;
        }
        for (size_t i = 0; i < got.size(); ++i, ++total) {
          const double allowed = size * u * (1 + size * u) * mean_abs[i] + size * 0x1p-24 + 1e-6 * mean_abs[i];
          const double err = std::abs(double(got[i]) - double(want[i]));
          if (!(err <= allowed)) ++bad;
          worst = std::max(worst, err / (mean_abs[i] + 1e-30));
        }
      }
      INFO(bad << " of " << total << " elements outside the bound; the worst error is " << worst
                << " times the element's mean |g|");
      CHECK(bad == 0);
    }
}

TEST_CASE("communicator: allreduce_grad_dtype: exact means where the wire holds the values, rounded where not") {
  for (const std::string& kind : kinds())
    for (DType wire : kWireTypes) {
      INFO(kind << ", " << chainer::dtype_name(wire) << " on the wire");
      auto comm = make_with_wire(kind, wire);
      const int rank = comm->rank(), size = comm->size();
      for (size_t chunk : {size_t(1) << 30, size_t(64)}) {  // and in many chunks of 32 elements
        INFO("chunks of " << chunk << " bytes");
        SmallChunks chunks(chunk);
        // Parameter k gets size (rank + k) / 8 on every element: each rank's share (rank + k) / 8
        // and every partial sum are small multiples of 1/8, exact in both dtypes, so the mean
        // size ((size - 1) / 2 + k) / 8 is exact too.
        ExampleModel model;
        int k = 0;
        for (auto& [n, p] : model.namedparams()) p.set_grad(Tensor::full(p.shape(), size * (rank + k++) / 8.0));
        comm->multi_node_mean_grad(model);
        k = 0;
        for (auto& [n, p] : model.namedparams()) {
          INFO(n);
          CHECK(exactly(p.grad(), size * ((size - 1) / 2.0 + k++) / 8.0));
        }
        // size (1 + u/2), u the unit roundoff: each rank's share 1 + u/2 lies between 1 and the
        // next wire value, below the tie, so it rounds to 1 and the mean comes back as exactly
        // size, where float32 on the wire would keep size (1 + u/2).
        const double off = unit_roundoff(wire) / 2;
        for (auto& [n, p] : model.namedparams()) p.set_grad(Tensor::full(p.shape(), size * (1 + off)));
        comm->multi_node_mean_grad(model);
        for (auto& [n, p] : model.namedparams()) {
          INFO(n);
          CHECK(exactly(p.grad(), size));
        }
      }
    }
}

TEST_CASE("communicator: allreduce_grad_dtype float16: a sum past float16's range whose mean fits comes back") {
  // 40000 on every rank sums to 40000 size, past float16's largest value (65504) from 2 ranks
  // on, but each rank's share is scaled by 1/size before the cast, so no partial sum exceeds
  // 40000. Mixed signs and a float64 parameter in the same buffer too.
  for (const std::string& kind : kinds()) {
    INFO(kind);
    auto comm = make_with_wire(kind, DType::Float16);
    chainer::Link link;
    link.add_param("big", Tensor::zeros({5})).set_grad(Tensor::full({5}, 40000.0));
    link.add_param("negative", Tensor::zeros({3})).set_grad(Tensor::full({3}, -60000.0));
    link.add_param("wide", Tensor::zeros({2}, DType::Float64)).set_grad(Tensor::full({2}, 50000.0, DType::Float64));
    comm->multi_node_mean_grad(link);
    CHECK(link.param("wide").grad().dtype() == DType::Float64);  // back in its own dtype
    // Exact for 1, 2 and 4 ranks; with 3, 40000 / 3 rounds to 13336 and the sum to 40000 or
    // 40032 (float16's spacing there is 32): within one spacing in every case.
    for (const auto& [name, want] : std::vector<std::pair<std::string, double>>{
             {"big", 40000.0}, {"negative", -60000.0}, {"wide", 50000.0}})
      for (double v : link.param(name).grad().to_vector<double>()) {
        INFO(name << ": " << v);
        CHECK(std::isfinite(v));
        CHECK(std::abs(v - want) <= 32.0);
      }
  }
}

TEST_CASE("communicator: allreduce_grad_dtype float32 averages float64 gradients in float32") {
  for (const std::string& kind : kinds()) {
    INFO(kind);
    auto comm = make_with_wire(kind, DType::Float32);
    const int rank = comm->rank(), size = comm->size();
    chainer::Link link;
    // size (rank + 1) / 8 + 2^-40: the shares are exact in float32 but for the 2^-40 term, which
    // float32 cannot hold next to them; the mean comes back without it, as float64.
    link.add_param("d", Tensor::zeros({6}, DType::Float64))
        .set_grad(Tensor::full({6}, size * (rank + 1) / 8.0 + 0x1p-40, DType::Float64));
    link.add_param("f", Tensor::zeros({3})).set_grad(Tensor::full({3}, 2.0 * rank));  // its own dtype already
    comm->multi_node_mean_grad(link);
    CHECK(link.param("d").grad().dtype() == DType::Float64);
    CHECK(exactly(link.param("d").grad(), size * ((size - 1) / 2.0 + 1) / 8.0));
    CHECK(all_equal(link.param("f").grad(), size - 1.0));
  }
  // The flat communicator packs both into its float32 buffer.
  auto flat = make_with_wire("flat", DType::Float32);
  chainer::Link link;
  link.add_param("d", Tensor::zeros({4}, DType::Float64)).set_grad(Tensor::ones({4}, DType::Float64));
  link.add_param("f", Tensor::zeros({2})).set_grad(Tensor::ones({2}));
  flat->multi_node_mean_grad(link);
  const auto* f = dynamic_cast<const chainermn::FlatCommunicator*>(flat.get());
  REQUIRE(f != nullptr);
  CHECK(f->buffer(DType::Float32).numel() == 6);
  CHECK_FALSE(f->buffer(DType::Float64).defined());
}

TEST_CASE("communicator: allreduce_grad_dtype that cannot carry gradients is refused at creation") {
  for (const std::string& kind : kinds())
    for (DType bad : {DType::Int32, DType::Int64, DType::UInt8}) {
      INFO(kind << " " << chainer::dtype_name(bad));
      CHECK_THROWS_WITH(make_with_wire(kind, bad),
                        Catch::Contains("create_communicator: allreduce_grad_dtype " +
                                        std::string(chainer::dtype_name(bad))) &&
                            Catch::Contains("float16, bfloat16, float32, float64"));
    }
  // The 16-bit types travel as a type of their own: MPI's integer sum on them is an error (on
  // every rank), not a sum of bit patterns.
  auto plain = make();
  uint16_t one = 0x3c00;
  auto integer_sum = [&] {
    CHAINERMN_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &one, 1, chainermn::detail::mpi_datatype(DType::Float16), MPI_SUM,
                                      plain->mpi_comm()));
  };
  CHECK_THROWS_AS(integer_sum(), chainermn::MpiError);
  CHECK(chainermn::detail::mpi_sum_op(DType::Float16) != MPI_SUM);
  CHECK(chainermn::detail::mpi_sum_op(DType::BFloat16) != chainermn::detail::mpi_sum_op(DType::Float16));
  CHECK(chainermn::detail::mpi_sum_op(DType::Float32) == MPI_SUM);
  // split() keeps the option.
  auto comm = make_with_wire("flat", DType::BFloat16);
  auto half = comm->split(comm->rank() % 2, comm->rank());
  REQUIRE(half != nullptr);
  CHECK(half->options().allreduce_grad_dtype == DType::BFloat16);
}

TEST_CASE("communicator: debug mode names the parameter and ranks whose shapes differ") {
  for (const std::string& kind : kinds()) {
    auto comm = make(kind);
    comm->set_debug(true);
    const int rank = comm->rank(), size = comm->size();
    if (size < 2) continue;
    ExampleModel model(rank == 1 ? 6 : 3);
    set_grads(model, rank);
    std::string others = size == 2 ? "rank 0" : size == 3 ? "ranks 0, 2" : "ranks 0, 2, 3";
    CHECK_THROWS_WITH(comm->multi_node_mean_grad(model),
                      Catch::Contains("debug mode") && Catch::Contains("parameter /a/W differs across ranks") &&
                          Catch::Contains("float32 (3, 2) on " + others) && Catch::Contains("float32 (6, 2) on rank 1") &&
                          Catch::Contains("parameter /b/W differs"));
    // A gradient missing on one rank only, without zero_fill.
    ExampleModel same;
    set_grads(same, rank);
    if (rank == size - 1) same.b->b()->cleargrad();
    CHECK_THROWS_WITH(comm->multi_node_mean_grad(same),
                      Catch::Contains("parameter /b/b differs") && Catch::Contains("float32 (4,) on") &&
                          Catch::Contains(chainer::str("no gradient on rank ", size - 1)));
    // zero_fill makes it consistent again.
    CHECK_NOTHROW(comm->multi_node_mean_grad(same, true));
  }
}

TEST_CASE("communicator: debug mode reports diverged (non-finite) gradients") {
  for (const std::string& kind : kinds()) {
    auto comm = make(kind);
    comm->set_debug(true);
    const int rank = comm->rank();
    ExampleModel model;
    set_grads(model, rank);
    if (rank == 0) Tensor(model.b->W().grad()).data<float>()[3] = std::numeric_limits<float>::quiet_NaN();
    CHECK_THROWS_WITH(comm->multi_node_mean_grad(model),
                      Catch::Contains("parameters diverged") && Catch::Contains("/b/W"));
    set_grads(model, rank);
    if (rank == 0) Tensor(model.c->b()->grad()).data<float>()[0] = std::numeric_limits<float>::infinity();
    CHECK_THROWS_WITH(comm->multi_node_mean_grad(model), Catch::Contains("parameters diverged") && Catch::Contains("/c/b"));
    // Without debug mode nobody checks.
    comm->set_debug(false);
    set_grads(model, rank);
    if (rank == 0) Tensor(model.c->b()->grad()).data<float>()[0] = std::numeric_limits<float>::infinity();
    CHECK_NOTHROW(comm->multi_node_mean_grad(model));
  }
}

// ---- Split communicators ----

namespace {
// Whether every host of HOSTS runs the same number of processes (what two_dimensional needs).
bool evenly_placed(const std::vector<std::string>& hosts) {
  const std::map<std::string, int> per_host = chainermn::processes_per_host(hosts);
  for (const auto& [h, n] : per_host)
    if (n != per_host.begin()->second) return false;
  return true;
}

// The world ranks of each half of split(rank % 2, key) in the half's rank order: ascending, or
// highest first with REVERSED (key -rank).
std::vector<std::vector<int>> halves(int size, bool reversed) {
  std::vector<std::vector<int>> members(2);
  for (int i = 0; i < size; ++i) {
    const int r = reversed ? size - 1 - i : i;
    members[size_t(r % 2)].push_back(r);
  }
  return members;
}

// Whether both halves of COMM suit KIND's placement rule (every rank knows every host name, so
// all ranks decide alike): two_dimensional needs each half evenly placed over its hosts.
bool halves_suit(const std::string& kind, const Communicator& comm) {
  if (kind != "two_dimensional") return true;
  for (const std::vector<int>& members : halves(comm.size(), false)) {
    std::vector<std::string> hosts;
    for (int r : members) hosts.push_back(comm.host_names()[size_t(r)]);
    if (!hosts.empty() && !evenly_placed(hosts)) return false;
  }
  return true;
}
}  // namespace

TEST_CASE("communicator: a split has its own members' topology and host names, and its parent's kind and settings") {
  for (const std::string& kind : kinds()) {
    auto comm = make_with_wire(kind, DType::BFloat16);
    if (!halves_suit(kind, *comm)) continue;
    INFO(kind);
    const int rank = comm->rank(), color = rank % 2;
    comm->set_debug(true);
    auto sub = comm->split(color, -rank);  // highest world rank first
    CHECK(sub != nullptr);
    if (!sub) continue;
    const std::vector<int> members = halves(comm->size(), true)[size_t(color)];
    std::vector<std::string> hosts;
    for (int r : members) hosts.push_back(comm->host_names()[size_t(r)]);
    CHECK(sub->name() == kind);
    CHECK(sub->debug());
    CHECK(sub->options().allreduce_grad_dtype == DType::BFloat16);
    CHECK(sub->size() == int(members.size()));
    // MPI's own view: the split's ranks are these world ranks, in this order.
    MPI_Group sub_group, world_group;
    MPI_Comm_group(sub->mpi_comm(), &sub_group);
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    std::vector<int> sub_ranks(members.size()), world_ranks(members.size());
    for (size_t i = 0; i < sub_ranks.size(); ++i) sub_ranks[i] = int(i);
    MPI_Group_translate_ranks(sub_group, int(members.size()), sub_ranks.data(), world_group, world_ranks.data());
    MPI_Group_free(&sub_group);
    MPI_Group_free(&world_group);
    CHECK(world_ranks == members);
    // The topology is the members' own: their host names, intra and inter counted over them.
    CHECK(sub->host_names() == hosts);
    const chainermn::Topology t = chainermn::compute_topology(hosts, sub->rank());
    CHECK(sub->intra_rank() == t.intra_rank);
    CHECK(sub->intra_size() == t.intra_size);
    CHECK(sub->inter_rank() == t.inter_rank);
    CHECK(sub->inter_size() == t.inter_size);
    if (comm->inter_size() == 1) {  // one host: the half is all of its host, not the parent's count
      CHECK(sub->intra_size() == sub->size());
      CHECK(sub->intra_rank() == sub->rank());
      CHECK(sub->inter_size() == 1);
    }
    // A split of a split.
    auto quarter = sub->split(sub->rank() % 2, sub->rank());
    CHECK(quarter != nullptr);
    if (quarter) CHECK(quarter->size() == (sub->size() + 1 - sub->rank() % 2) / 2);
  }
}

TEST_CASE("communicator: every kind's split sums, broadcasts and averages within its half only") {
  for (const std::string& kind : kinds()) {
    auto comm = make(kind);
    if (!halves_suit(kind, *comm)) continue;
    INFO(kind);
    const int rank = comm->rank(), color = rank % 2;
    auto sub = comm->split(color, rank);
    CHECK(sub != nullptr);
    if (!sub) continue;
    const std::vector<int> members = halves(comm->size(), false)[size_t(color)];
    const int n = int(members.size());
    int member_sum = 0;
    for (int r : members) member_sum += r;
    CHECK(sub->allreduce(Tensor::scalar(rank, DType::Int64)).item<int64_t>() == member_sum);
    CHECK(sub->bcast(Tensor::scalar(rank, DType::Int64), n - 1).item<int64_t>() == members.back());
    CHECK(sub->allgather_obj(rank) == members);
    CHECK(sub->allreduce_obj(std::map<std::string, int>{{"ranks", rank}}).at("ranks") == member_sum);
    // The communicator's own averaging, and the sum the gradient reducer starts.
    ExampleModel model;
    set_grads(model, rank);
    sub->multi_node_mean_grad(model);
    int k = 0;
    for (auto& [name, p] : model.namedparams()) {
      INFO(name);
      CHECK(all_equal(p.grad(), double(member_sum) / n + k++));
    }
    Tensor buf = Tensor::full({37}, rank + 1, DType::Float32);
    sub->start_sum(buf)->wait();
    CHECK(all_equal(buf, member_sum + n));
  }
}

TEST_CASE("communicator: a split's messages do not mix with its parent's") {
  auto comm = make();
  const int rank = comm->rank(), size = comm->size(), color = rank % 2;
  auto sub = comm->split(color, rank);
  CHECK(sub != nullptr);
  if (!sub) return;
  // A message on the parent, tag 0, to the next rank; it arrives before the split is used.
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  int sent = 1000 + rank;
  MPI_Request request;
  CHAINERMN_MPI_CHECK(MPI_Isend(&sent, 1, MPI_INT, next, 0, comm->mpi_comm(), &request));
  MPI_Status status;
  CHAINERMN_MPI_CHECK(MPI_Probe(prev, 0, comm->mpi_comm(), &status));
  // The split sees nothing of it: not a probe for anything, nor a receive from any source.
  int pending = 1;
  CHAINERMN_MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, sub->mpi_comm(), &pending, MPI_STATUS_IGNORE));
  CHECK_FALSE(pending);
  comm->allreduce(Tensor::scalar(0, DType::Int64));  // nobody sends on the split before every rank has looked
  if (sub->rank() != 0) {
    sub->send(Tensor::scalar(2000 + rank, DType::Int32), 0, 0);
  } else {
    std::set<int> from;
    for (int i = 1; i < sub->size(); ++i) from.insert(sub->recv(MPI_ANY_SOURCE, 0).item<int32_t>());
    const std::vector<int> members = halves(size, false)[size_t(color)];
    std::set<int> expected;
    for (int r : members)
      if (r != rank) expected.insert(2000 + r);
    CHECK(from == expected);
  }
  // Collectives on both, interleaved; then the parent's message is still there for its receiver.
  CHECK(sub->allreduce(Tensor::scalar(1, DType::Int64)).item<int64_t>() == sub->size());
  CHECK(comm->allreduce(Tensor::scalar(1, DType::Int64)).item<int64_t>() == size);
  int received = -1;
  CHAINERMN_MPI_CHECK(MPI_Recv(&received, 1, MPI_INT, prev, 0, comm->mpi_comm(), MPI_STATUS_IGNORE));
  CHAINERMN_MPI_CHECK(MPI_Wait(&request, MPI_STATUS_IGNORE));
  CHECK(received == 1000 + prev);
}
