// create_communicator: one row per kind of communicator, as ChainerMN names them.
#include <functional>

#include "distributed/communicators/communicator.h"
#include "distributed/communicators/composed_communicators.h"
#include "distributed/communicators/dummy_communicator.h"
#include "distributed/communicators/flat_communicator.h"
#include "distributed/communicators/naive_communicator.h"
#include "distributed/communicators/nccl_backend.h"

namespace chainermn {

using chainer::str;

namespace {
using Make = std::function<std::shared_ptr<Communicator>(MPI_Comm, const CommunicatorOptions&)>;

std::string nothing_missing() { return {}; }

struct Kind {
  const char* name;
  Make make;
  // What the kind needs that this build or machine lacks (empty: it can be made here).
  std::function<std::string()> missing = nothing_missing;
  bool averages = true;  // false for the dummy, which leaves each rank its own gradients
};

Make composed(ComposedCommunicator::Algorithm a) {
  return [a](MPI_Comm c, const CommunicatorOptions& o) { return std::make_shared<ComposedCommunicator>(a, c, o); };
}

// The GPU-only kinds: NCCL, which needs a CUDA build with NCCL and a device.
std::string needs_nccl() {
  const std::string why = nccl::unavailable_reason();
  return why.empty() ? why : "NCCL on CUDA devices (" + why + ")";
}

const std::vector<Kind>& kinds() {
  using A = ComposedCommunicator::Algorithm;
  static const std::vector<Kind> table{
      {"naive", [](MPI_Comm c, const CommunicatorOptions& o) { return std::make_shared<NaiveCommunicator>(c, o); }},
      {"flat", [](MPI_Comm c, const CommunicatorOptions& o) { return std::make_shared<FlatCommunicator>(c, o); }},
      {"hierarchical", composed(A::Hierarchical)},
      {"two_dimensional", composed(A::TwoDimensional)},
      {"single_node", composed(A::SingleNode)},
      {"pure_nccl", composed(A::PureNccl), needs_nccl},
      {"non_cuda_aware", composed(A::NonCudaAware), needs_nccl},
      {"dummy", [](MPI_Comm c, const CommunicatorOptions& o) { return std::make_shared<DummyCommunicator>(c, o); },
       nothing_missing, false},
  };
  return table;
}
}  // namespace

std::vector<CommunicatorKind> communicator_kinds() {
  std::vector<CommunicatorKind> out;
  for (const Kind& k : kinds()) {
    std::string missing = k.missing();
    out.push_back({k.name, missing.empty(), missing, k.averages});
  }
  return out;
}

std::shared_ptr<Communicator> create_communicator(const std::string& name, MPI_Comm comm,
                                                  const CommunicatorOptions& options) {
  std::string valid;
  for (const Kind& k : kinds()) {
    valid += str(valid.empty() ? "" : ", ", k.name);
    if (name != k.name) continue;
    if (std::string missing = k.missing(); !missing.empty())
      throw chainer::Error(str("create_communicator: the '", name, "' communicator needs ", missing,
                               "; naive, flat, hierarchical, two_dimensional and single_node work everywhere"));
    return k.make(comm, options);
  }
  throw chainer::Error(str("create_communicator: unknown communicator name '", name, "'; valid names: ", valid));
}

}  // namespace chainermn
