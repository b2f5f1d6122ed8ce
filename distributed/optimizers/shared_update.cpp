#include "distributed/optimizers/shared_update.h"

#include <atomic>
#include <cstring>
#include <tuple>

#include "distributed/runtime/mpi_check.h"
#include "distributed/runtime/mpi_wait.h"

namespace chainermn {

using chainer::DType;
using chainer::Tensor;

std::shared_ptr<SharedUpdate> SharedUpdate::create(MPI_Comm comm, const chainer::Link& link,
                                                   const std::vector<std::string>& state_keys) {
  int rank = 0, size = 1;
  CHAINERMN_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  CHAINERMN_MPI_CHECK(MPI_Comm_size(comm, &size));
  struct Planned {
    std::string name;
    chainer::Shape shape;
    DType dtype;
    int64_t numel;
    size_t offset, stride;  // bytes: the data's place, then one place per state key
  };
  std::vector<Planned> plan;
  size_t bytes = 0;
  int floating = 1;
  for (const auto& [name, p] : link.namedparams()) {
    if (!p.data().defined()) continue;
    floating &= p.dtype() == DType::Float32 || p.dtype() == DType::Float64;
    const size_t stride = (size_t(p.numel()) * chainer::dtype_size(p.dtype()) + 63) / 64 * 64;
    plan.push_back({name, p.shape(), p.dtype(), p.numel(), bytes, stride});
    bytes += stride * (1 + state_keys.size());
  }
  // Every rank takes the same branch (the models have the same structure after bcast_data, but a
  // deadlock would be a poor way to find out they do not).
  int everywhere = 0;
  CHAINERMN_MPI_CHECK(mpi::allreduce(&floating, &everywhere, 1, MPI_INT, MPI_MIN, comm));
  if (!everywhere) return nullptr;
  auto segment = SharedSegment::create(comm, bytes);
  if (!segment) return nullptr;
  std::shared_ptr<SharedUpdate> shared(new SharedUpdate(comm, segment));
  for (const Planned& p : plan) {
    auto place = [&](size_t at) {
      auto storage = std::make_shared<chainer::Storage>(segment->data() + at, p.stride, chainer::Device{}, segment);
      return Tensor::from_storage(std::move(storage), p.shape, p.dtype);
    };
    Slot slot;
    slot.shape = p.shape;
    slot.dtype = p.dtype;
    std::tie(slot.first, slot.last) = share_of(p.numel, chainer::dtype_size(p.dtype), rank, size);
    slot.data = place(p.offset);
    for (size_t k = 0; k < state_keys.size(); ++k) slot.state[state_keys[k]] = place(p.offset + (k + 1) * p.stride);
    shared->slots_.emplace(p.name, std::move(slot));
  }
  return shared;
}

bool SharedUpdate::matches(const chainer::Link& link) const {
  size_t planned = 0;
  for (const auto& [name, p] : link.namedparams()) {
    if (!p.data().defined()) continue;
    auto it = slots_.find(name);
    if (it == slots_.end() || it->second.shape != p.shape() || it->second.dtype != p.dtype()) return false;
    ++planned;
  }
  return planned == slots_.size();
}

void SharedUpdate::barrier() const {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  CHAINERMN_MPI_CHECK(mpi::barrier(comm_));
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void SharedUpdate::bind_parameters(chainer::Link& link) {
  for (auto& [name, p] : link.unique_namedparams()) {
    auto it = slots_.find(name);
    if (it == slots_.end()) continue;  // not initialized yet: bound at its first step, as before
    bind(p.data(), it->second.data, it->second);
  }
  barrier();
}

void SharedUpdate::finish_step() { barrier(); }

void SharedUpdate::before_steps(bool hooks_ran) {
  if (hooks_ran) barrier();
}

void SharedUpdate::bind(Tensor& t, const Tensor& place, const Slot& slot) const {
  if (t.defined() && t.storage() == place.storage() && t.offset() == 0 && t.shape() == place.shape() &&
      t.is_contiguous())
    return;
  const size_t item = chainer::dtype_size(slot.dtype);
  Tensor out = place;
  char* dst = static_cast<char*>(out.raw_data()) + size_t(slot.first) * item;
  const size_t bytes = size_t(slot.last - slot.first) * item;
  if (!t.defined()) {
    std::memset(dst, 0, bytes);
  } else {
    if (t.numel() != place.numel())
      throw chainer::InternalError("SharedUpdate: a tensor does not have its parameter's size");
    const Tensor src = (t.dtype() == slot.dtype ? t : t.astype(slot.dtype)).contiguous();
    std::memmove(dst, static_cast<const char*>(src.raw_data()) + size_t(slot.first) * item, bytes);
  }
  t = out;
}

std::pair<int64_t, int64_t> SharedUpdate::prepare(const std::string& name, chainer::Variable& param,
                                                  chainer::TensorMap& state, const std::vector<std::string>& keys) {
  auto it = slots_.find(name);
  if (it == slots_.end() || it->second.shape != param.shape() || it->second.dtype != param.dtype())
    throw chainer::InternalError("SharedUpdate: parameter " + name + " is not the one planned");
  Slot& slot = it->second;
  bind(param.data(), slot.data, slot);
  for (const std::string& key : keys) {
    auto place = slot.state.find(key);
    if (place == slot.state.end()) throw chainer::InternalError("SharedUpdate: state '" + key + "' was not planned");
    bind(state[key], place->second, slot);
  }
  return {slot.first, slot.last};
}

bool SharedUpdate::holds(const Tensor& t) const {
  if (!t.defined()) return false;
  const char* p = static_cast<const char*>(t.storage()->data());
  return p >= segment_->data() && p < segment_->data() + segment_->bytes();
}

}  // namespace chainermn
