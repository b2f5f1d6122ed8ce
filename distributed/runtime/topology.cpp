#include "distributed/runtime/topology.h"

#include <cstring>
#include <map>

#include "core/util/error.h"
#include "distributed/runtime/mpi_check.h"
#include "distributed/runtime/mpi_wait.h"

namespace chainermn {

Topology compute_topology(const std::vector<std::string>& hosts, int rank) {
  if (rank < 0 || size_t(rank) >= hosts.size())
    throw chainer::Error(chainer::str("compute_topology: rank ", rank, " is outside [0, ", hosts.size(), ")"));
  std::map<std::string, int> host_index;  // in order of first appearance = of smallest rank
  Topology t;
  t.intra_rank = 0;
  t.intra_size = 0;
  for (size_t r = 0; r < hosts.size(); ++r) {
    host_index.emplace(hosts[r], int(host_index.size()));
    if (hosts[r] == hosts[size_t(rank)]) {
      if (int(r) < rank) ++t.intra_rank;
      ++t.intra_size;
    }
  }
  t.inter_rank = host_index.at(hosts[size_t(rank)]);
  t.inter_size = int(host_index.size());
  return t;
}

std::map<std::string, int> processes_per_host(const std::vector<std::string>& hosts) {
  std::map<std::string, int> per_host;
  for (const std::string& h : hosts) ++per_host[h];
  return per_host;
}

std::string host_name() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  CHAINERMN_MPI_CHECK(MPI_Get_processor_name(name, &len));
  return std::string(name, size_t(len));
}

std::vector<std::string> allgather_host_names(MPI_Comm comm) {
  int size = 1;
  CHAINERMN_MPI_CHECK(MPI_Comm_size(comm, &size));
  std::vector<char> mine(MPI_MAX_PROCESSOR_NAME, '\0');
  const std::string me = host_name();
  me.copy(mine.data(), mine.size() - 1);
  std::vector<char> all(size_t(size) * MPI_MAX_PROCESSOR_NAME, '\0');
  CHAINERMN_MPI_CHECK(mpi::allgather(mine.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME,
                                    MPI_CHAR, comm));
  std::vector<std::string> names;
  for (int r = 0; r < size; ++r) {
    const char* p = all.data() + size_t(r) * MPI_MAX_PROCESSOR_NAME;
    names.emplace_back(p, strnlen(p, MPI_MAX_PROCESSOR_NAME));
  }
  return names;
}

}  // namespace chainermn
