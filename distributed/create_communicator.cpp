// create_communicator: one row per kind of communicator, as ChainerMN's names them.
#include <functional>

#include "distributed/communicator.h"
#include "distributed/composed_communicators.h"
#include "distributed/flat_communicator.h"
#include "distributed/naive_communicator.h"

namespace chainermn {

using chainer::str;

namespace {
struct Kind {
  const char* name;
  // Null for a kind this version cannot make; MISSING then says what it lacks.
  std::function<std::shared_ptr<Communicator>(MPI_Comm)> make;
  const char* missing = nullptr;
};

std::shared_ptr<Communicator> composed(ComposedCommunicator::Algorithm a, MPI_Comm c) {
  return std::make_shared<ComposedCommunicator>(a, c);
}

const std::vector<Kind>& kinds() {
  using A = ComposedCommunicator::Algorithm;
  static const std::vector<Kind> table{
      {"naive", [](MPI_Comm c) { return std::make_shared<NaiveCommunicator>(c); }},
      {"flat", [](MPI_Comm c) { return std::make_shared<FlatCommunicator>(c); }},
      {"hierarchical", [](MPI_Comm c) { return composed(A::Hierarchical, c); }},
      {"two_dimensional", [](MPI_Comm c) { return composed(A::TwoDimensional, c); }},
      {"single_node", [](MPI_Comm c) { return composed(A::SingleNode, c); }},
      {"pure_nccl", nullptr, "NCCL on CUDA devices"},
      {"non_cuda_aware", nullptr, "NCCL on CUDA devices"},
  };
  return table;
}
}  // namespace

std::shared_ptr<Communicator> create_communicator(const std::string& name, MPI_Comm comm) {
  std::string valid;
  for (const Kind& k : kinds()) {
    valid += str(valid.empty() ? "" : ", ", k.name);
    if (name != k.name) continue;
    if (k.make) return k.make(comm);
    throw chainer::Error(str("create_communicator: the '", name, "' communicator needs ", k.missing,
                             ", which this version of chainermn-cpp does not have yet; naive, flat, hierarchical, "
                             "two_dimensional and single_node average CPU tensors"));
  }
  throw chainer::Error(str("create_communicator: unknown communicator name '", name, "'; valid names: ", valid));
}

}  // namespace chainermn
