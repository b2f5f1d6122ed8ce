/// @file
/// How a rank waits for its peers in MPI, and the blocking MPI calls chainermn makes through it.
///
/// MPICH 4's ch4 device (Debian's MPICH runs it over UCX) waits in a blocking call by polling
/// without ever giving the core away in a single-threaded process: its progress loop yields
/// only a thread lock, and no CVAR changes that (MPIR_CVAR_POLLS_BEFORE_YIELD belongs to ch3).
/// That is the fastest way to wait while every rank has a core of its own. With more ranks than
/// cores, a waiting rank spins out its whole time slice while the rank it waits for is not
/// running: on 2 cores a 1-element all-reduce took 5 ms with 3 or 4 ranks instead of 0.2 us with 2,
/// and an MPI_Comm_dup 8 ms. There the passive policy starts the nonblocking form of each call
/// and polls it with MPI_Test, giving the core away (sched_yield) between polls: 9-20 us. It is
/// not the default everywhere because MPICH's blocking collectives have shared-memory algorithms
/// its nonblocking ones lack (measured on 2 ranks with a core each: the MLP's per-parameter
/// all-reduces 2.4x slower). Open MPI's mpi_yield_when_idle and Intel MPI's I_MPI_WAIT_MODE
/// answer the same problem.
///
/// The policy is the job's, decided once by init_mpi and the same on every rank (MPI does not
/// match a blocking collective on one rank with a nonblocking one on another):
/// `CHAINERMN_WAIT_POLICY=active|passive|auto` in the environment, default auto: passive when
/// some machine runs more ranks than there are cores in their affinity masks together, else
/// active. A machine is a kernel: ranks with one boot id (/proc/sys/kernel/random/boot_id),
/// whatever host names MPI sees (containers, hosts simulated by scripts/simcluster). Without
/// init_mpi (MPI started by the program and no communicator made through chainermn) the
/// policy is active.
#pragma once
#include <mpi.h>

namespace chainermn {

/// How a rank waits for its peers in MPI (see the file's documentation).
enum class WaitPolicy {
  Active,   ///< MPI's own blocking calls, which poll without yielding: fastest with a core per rank
  Passive,  ///< nonblocking calls polled with MPI_Test, yielding the core between polls
};

/// The job's wait policy (Active until init_mpi has decided it).
WaitPolicy wait_policy();
/// "active" or "passive".
const char* wait_policy_name(WaitPolicy policy);

/// MPI's blocking calls, waiting as wait_policy() says: each takes the arguments of the MPI call
/// of the same name and returns MPI's error code, for CHAINERMN_MPI_CHECK.
namespace mpi {
int barrier(MPI_Comm comm);  ///< MPI_Barrier
int bcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm);  ///< MPI_Bcast
/// MPI_Allreduce
int allreduce(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm);
/// MPI_Reduce
int reduce(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm);
/// MPI_Reduce_scatter
int reduce_scatter(const void* send, void* recv, const int counts[], MPI_Datatype type, MPI_Op op, MPI_Comm comm);
/// MPI_Allgather
int allgather(const void* send, int send_count, MPI_Datatype send_type, void* recv, int recv_count,
              MPI_Datatype recv_type, MPI_Comm comm);
/// MPI_Allgatherv
int allgatherv(const void* send, int send_count, MPI_Datatype send_type, void* recv, const int recv_counts[],
               const int displs[], MPI_Datatype recv_type, MPI_Comm comm);
/// MPI_Gather
int gather(const void* send, int send_count, MPI_Datatype send_type, void* recv, int recv_count,
           MPI_Datatype recv_type, int root, MPI_Comm comm);
/// MPI_Gatherv
int gatherv(const void* send, int send_count, MPI_Datatype send_type, void* recv, const int recv_counts[],
            const int displs[], MPI_Datatype recv_type, int root, MPI_Comm comm);
/// MPI_Send
int send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm);
/// MPI_Recv
int recv(void* buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status* status);
/// MPI_Waitall
int wait_all(int count, MPI_Request* requests, MPI_Status* statuses);
/// MPI_Mprobe
int mprobe(int source, int tag, MPI_Comm comm, MPI_Message* message, MPI_Status* status);
/// MPI_Comm_dup
int comm_dup(MPI_Comm comm, MPI_Comm* dup);
}  // namespace mpi

namespace detail {
/// Decides the job's wait policy (collective over MPI_COMM_WORLD; init_mpi calls it once).
/// Throws chainer::Error when CHAINERMN_WAIT_POLICY is not active, passive or auto.
void decide_wait_policy();
}  // namespace detail

}  // namespace chainermn
