/// @file
/// Where the processes of a communicator run, as ChainerMN sees it: processes group by host name
/// (every rank's name is allgathered); "intra" numbers the processes of one host, "inter" the
/// hosts, ordered by their smallest rank. Kept apart from MPI so the rule can be tested with any
/// list of host names.
#pragma once
#include <mpi.h>

#include <map>
#include <string>
#include <vector>

namespace chainermn {

/// Where one process runs: its place on its host and its host's place among the hosts.
struct Topology {
  int intra_rank = 0;  ///< Position of this process among those on its host, by rank.
  int intra_size = 1;  ///< Processes on this host.
  int inter_rank = 0;  ///< Index of this host, hosts ordered by their smallest rank.
  int inter_size = 1;  ///< Number of hosts.
};

/// The topology of rank RANK when rank i runs on HOSTS[i].
Topology compute_topology(const std::vector<std::string>& hosts, int rank);

/// Host name `->` how many of HOSTS (one entry per rank) run there.
std::map<std::string, int> processes_per_host(const std::vector<std::string>& hosts);

/// This machine's host name (MPI_Get_processor_name).
std::string host_name();

/// Every rank's host name, indexed by rank in COMM (a collective).
std::vector<std::string> allgather_host_names(MPI_Comm comm);

}  // namespace chainermn
