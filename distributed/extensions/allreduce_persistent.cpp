#include "distributed/extensions/allreduce_persistent.h"

#include <utility>
#include <vector>

#include "core/ops/ops.h"

namespace chainermn::extensions {

using chainer::DType;
using chainer::Error;
using chainer::str;
using chainer::Tensor;

AllreducePersistent::AllreducePersistent(std::shared_ptr<chainer::Link> model, std::shared_ptr<Communicator> comm)
    : model_(std::move(model)), comm_(std::move(comm)) {
  if (!model_) throw Error("AllreducePersistent: the model is null");
  if (!comm_) throw Error("AllreducePersistent: the communicator is null");
}

void AllreducePersistent::operator()(chainer::training::Trainer& /*trainer*/) { allreduce_persistent(); }

void AllreducePersistent::allreduce_persistent() { extensions::allreduce_persistent(*model_, *comm_); }

void allreduce_persistent(chainer::Link& model, const Communicator& comm) {
  std::vector<std::pair<std::string, Tensor>> floating;
  // "name dtype shape" of each floating persistent: compared across ranks before any sum, so
  // that models which differ throw everywhere instead of mismatching the collectives.
  std::vector<std::string> signature;
  for (auto& [name, t] : model.namedpersistents()) {
    if (!t.defined() || !chainer::is_floating(t.dtype())) continue;
    signature.push_back(str(name, " ", chainer::dtype_name(t.dtype()), " ", chainer::shape_str(t.shape())));
    floating.emplace_back(name, t);
  }
  const std::vector<std::vector<std::string>> all = comm.allgather_obj(signature);
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r] == all[0]) continue;
    size_t i = 0;
    while (i < all[0].size() && i < all[r].size() && all[0][i] == all[r][i]) ++i;
    const auto at = [&](size_t rank) { return i < all[rank].size() ? all[rank][i] : std::string("nothing"); };
    throw Error(str("AllreducePersistent: the models' floating persistents differ: rank 0 has ", at(0), " where rank ", r,
                    " has ", at(r), " (every rank must hold the same model)"));
  }
  const double inv = 1.0 / double(comm.size());
  for (auto& [name, t] : floating) {
    // The communicator sums float32 and float64; the 16-bit dtypes travel as float32.
    const bool wide = t.dtype() == DType::Float32 || t.dtype() == DType::Float64;
    Tensor sum = comm.allreduce(wide ? t : t.astype(DType::Float32));
    t.copy_(chainer::ops::mul_scalar(sum, inv));
  }
}

}  // namespace chainermn::extensions
