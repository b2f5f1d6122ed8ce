// Loads libchainermn_nccl.so on first use (the reasons are in nccl_backend.h).
#include "distributed/communicators/nccl_backend.h"

#include "core/error.h"
#include "core/plugin.h"

namespace chainermn::nccl {

using chainer::load_plugin_entry;
using chainer::str;

namespace {

struct Loaded {
  Plugin* plugin = nullptr;
  std::string why_not;
};

Loaded load() {
  Loaded l;
#ifndef CHAINERMN_WITH_NCCL
  l.why_not = "this build of chainermn-cpp has no NCCL support (it was configured without CUDA or without NCCL)";
#else
  auto entry = reinterpret_cast<Plugin* (*)()>(load_plugin_entry(
      reinterpret_cast<const void*>(&load), "libchainermn_nccl.so", "chainermn_nccl_plugin", "the NCCL support library",
      l.why_not));
  if (!entry) return l;
  l.plugin = entry();
  l.why_not = l.plugin->unavailable_reason();
#endif
  return l;
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

}  // namespace

std::string unavailable_reason() { return loaded().why_not; }

int version() { return loaded().plugin ? loaded().plugin->version() : 0; }

std::unique_ptr<CollectiveBackend> backend(MPI_Comm comm, int device, const char* op) {
  const Loaded& l = loaded();
  if (!l.plugin || !l.why_not.empty()) throw chainer::Error(str(op, ": NCCL cannot be used: ", l.why_not));
  return l.plugin->backend(comm, device);
}

}  // namespace chainermn::nccl
