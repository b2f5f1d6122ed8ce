// Loads libchainermn_nccl.so on first use (the reasons are in nccl_backend.h).
#include "distributed/communicators/nccl_backend.h"

#include <dlfcn.h>

#include <filesystem>

#include "core/error.h"

namespace chainermn::nccl {

using chainer::str;

namespace {

struct Loaded {
  Plugin* plugin = nullptr;
  std::string why_not;
};

std::string plugin_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&plugin_path), &info) && info.dli_fname)
    return (std::filesystem::path(info.dli_fname).parent_path() / "libchainermn_nccl.so").string();
  return "libchainermn_nccl.so";
}

Loaded load() {
  Loaded l;
#ifndef CHAINERMN_WITH_NCCL
  l.why_not = "this build of chainermn-cpp has no NCCL support (it was configured without CUDA or without NCCL)";
#else
  const std::string path = plugin_path();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) handle = dlopen("libchainermn_nccl.so", RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = dlerror();
    l.why_not = str("the NCCL support library could not be loaded (", path, "): ", e ? e : "unknown error");
    return l;
  }
  auto entry = reinterpret_cast<Plugin* (*)()>(dlsym(handle, "chainermn_nccl_plugin"));
  if (!entry) {
    l.why_not = str(path, " has no chainermn_nccl_plugin entry point");
    return l;
  }
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
