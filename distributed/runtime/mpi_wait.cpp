#include "distributed/runtime/mpi_wait.h"

#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "core/util/error.h"
#include "distributed/runtime/mpi_check.h"

namespace chainermn {

namespace {

std::atomic<WaitPolicy> g_policy{WaitPolicy::Active};

bool passive() { return g_policy.load(std::memory_order_relaxed) == WaitPolicy::Passive; }

// Polls before the first yield: about 10 us of MPI_Test, so that a reply already on its way is
// taken without a system call (measured on 2 ranks with a core each: yielding from the first
// poll made a 1-element all-reduce 2.5x slower, 1.3 us against 0.5 us).
constexpr int kPollsBeforeYield = 100;

// Calls POLL (which sets its flag and returns MPI's error code) until the flag is set or it fails.
template <class Poll>
int poll_until_done(Poll&& poll) {
  for (int polls = 0;; ++polls) {
    int done = 0;
    const int rc = poll(&done);
    if (rc != MPI_SUCCESS || done) return rc;
    if (polls >= kPollsBeforeYield) sched_yield();
  }
}

int wait_one(MPI_Request* request, MPI_Status* status) {
  return poll_until_done([&](int* done) { return MPI_Test(request, done, status); });
}

// START_RC, the error code of the call that started REQUEST, or if it succeeded the wait for it.
int started(int start_rc, MPI_Request* request, MPI_Status* status = MPI_STATUS_IGNORE) {
  return start_rc != MPI_SUCCESS ? start_rc : wait_one(request, status);
}

// This machine's boot id: what tells which ranks share a kernel, hence cores. MPI's notion of a
// host goes by host name, which a container or a simulated host (scripts/simcluster) changes.
std::string boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (!(in >> id)) {
    char name[256] = {};
    gethostname(name, sizeof name - 1);
    id = name;
  }
  return id;
}

// Whether the ranks on this machine outnumber the cores in their affinity masks together.
bool machine_oversubscribed() {
  struct Rank {
    char boot_id[64];
    cpu_set_t cpus;
  };
  Rank mine{};
  boot_id().copy(mine.boot_id, sizeof mine.boot_id - 1);
  if (sched_getaffinity(0, sizeof mine.cpus, &mine.cpus) != 0) CPU_SET(0, &mine.cpus);
  int size = 1;
  CHAINERMN_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  std::vector<Rank> all(static_cast<size_t>(size));
  CHAINERMN_MPI_CHECK(MPI_Allgather(&mine, int(sizeof mine), MPI_BYTE, all.data(), int(sizeof mine), MPI_BYTE,
                                    MPI_COMM_WORLD));
  int ranks = 0;
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  for (const Rank& r : all) {
    if (std::strncmp(r.boot_id, mine.boot_id, sizeof mine.boot_id) != 0) continue;
    ++ranks;
    CPU_OR(&cpus, &cpus, &r.cpus);
  }
  return ranks > CPU_COUNT(&cpus);
}

}  // namespace

WaitPolicy wait_policy() { return g_policy.load(); }

const char* wait_policy_name(WaitPolicy policy) { return policy == WaitPolicy::Passive ? "passive" : "active"; }

namespace detail {
void decide_wait_policy() {
  const char* text = std::getenv("CHAINERMN_WAIT_POLICY");
  const std::string wanted = text && *text ? text : "auto";
  if (wanted != "auto" && wanted != "active" && wanted != "passive")
    throw chainer::Error(chainer::str("init_mpi: CHAINERMN_WAIT_POLICY must be active, passive or auto, not '",
                                      wanted, "'"));
  // Every rank counts (a collective), whatever it was asked for: ranks asked differently must
  // still meet in the same calls.
  const bool oversubscribed = machine_oversubscribed();
  int want_passive = wanted == "passive" || (wanted == "auto" && oversubscribed);
  // One rank passive makes every rank passive: the policy must be the job's.
  CHAINERMN_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &want_passive, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
  g_policy = want_passive ? WaitPolicy::Passive : WaitPolicy::Active;
}
}  // namespace detail

namespace mpi {

int barrier(MPI_Comm comm) {
  if (!passive()) return MPI_Barrier(comm);
  MPI_Request r;
  return started(MPI_Ibarrier(comm, &r), &r);
}

int bcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  if (!passive()) return MPI_Bcast(buf, count, type, root, comm);
  MPI_Request r;
  return started(MPI_Ibcast(buf, count, type, root, comm, &r), &r);
}

int allreduce(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  if (!passive()) return MPI_Allreduce(send, recv, count, type, op, comm);
  MPI_Request r;
  return started(MPI_Iallreduce(send, recv, count, type, op, comm, &r), &r);
}

int reduce(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm) {
  if (!passive()) return MPI_Reduce(send, recv, count, type, op, root, comm);
  MPI_Request r;
  return started(MPI_Ireduce(send, recv, count, type, op, root, comm, &r), &r);
}

int reduce_scatter(const void* send, void* recv, const int counts[], MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  if (!passive()) return MPI_Reduce_scatter(send, recv, counts, type, op, comm);
  MPI_Request r;
  return started(MPI_Ireduce_scatter(send, recv, counts, type, op, comm, &r), &r);
}

int allgather(const void* send, int send_count, MPI_Datatype send_type, void* recv, int recv_count,
              MPI_Datatype recv_type, MPI_Comm comm) {
  if (!passive()) return MPI_Allgather(send, send_count, send_type, recv, recv_count, recv_type, comm);
  MPI_Request r;
  return started(MPI_Iallgather(send, send_count, send_type, recv, recv_count, recv_type, comm, &r), &r);
}

int allgatherv(const void* send, int send_count, MPI_Datatype send_type, void* recv, const int recv_counts[],
               const int displs[], MPI_Datatype recv_type, MPI_Comm comm) {
  if (!passive()) return MPI_Allgatherv(send, send_count, send_type, recv, recv_counts, displs, recv_type, comm);
  MPI_Request r;
  return started(MPI_Iallgatherv(send, send_count, send_type, recv, recv_counts, displs, recv_type, comm, &r), &r);
}

int gather(const void* send, int send_count, MPI_Datatype send_type, void* recv, int recv_count,
           MPI_Datatype recv_type, int root, MPI_Comm comm) {
  if (!passive()) return MPI_Gather(send, send_count, send_type, recv, recv_count, recv_type, root, comm);
  MPI_Request r;
  return started(MPI_Igather(send, send_count, send_type, recv, recv_count, recv_type, root, comm, &r), &r);
}

int gatherv(const void* send, int send_count, MPI_Datatype send_type, void* recv, const int recv_counts[],
            const int displs[], MPI_Datatype recv_type, int root, MPI_Comm comm) {
  if (!passive()) return MPI_Gatherv(send, send_count, send_type, recv, recv_counts, displs, recv_type, root, comm);
  MPI_Request r;
  return started(MPI_Igatherv(send, send_count, send_type, recv, recv_counts, displs, recv_type, root, comm, &r), &r);
}

int send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  if (!passive()) return MPI_Send(buf, count, type, dest, tag, comm);
  MPI_Request r;
  return started(MPI_Isend(buf, count, type, dest, tag, comm, &r), &r);
}

int recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status* status) {
  if (!passive()) return MPI_Recv(buf, count, type, source, tag, comm, status);
  MPI_Request r;
  return started(MPI_Irecv(buf, count, type, source, tag, comm, &r), &r, status);
}

int wait_all(int count, MPI_Request* requests, MPI_Status* statuses) {
  if (!passive()) return MPI_Waitall(count, requests, statuses);
  return poll_until_done([&](int* done) { return MPI_Testall(count, requests, done, statuses); });
}

int mprobe(int source, int tag, MPI_Comm comm, MPI_Message* message, MPI_Status* status) {
  if (!passive()) return MPI_Mprobe(source, tag, comm, message, status);
  return poll_until_done([&](int* done) { return MPI_Improbe(source, tag, comm, done, message, status); });
}

int comm_dup(MPI_Comm comm, MPI_Comm* dup) {
  if (!passive()) return MPI_Comm_dup(comm, dup);
  MPI_Request r;
  return started(MPI_Comm_idup(comm, dup, &r), &r);
}

}  // namespace mpi

}  // namespace chainermn
