// Loads libchainermn_nccl.so on first use (the reasons are in nccl_backend.h).
#include "distributed/communicators/nccl_backend.h"

#include "core/util/error.h"
#include "core/util/plugin.h"
#include "distributed/communicators/nccl_api.h"

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

int header_version() { return loaded().plugin ? loaded().plugin->header_version() : 0; }

std::string nccl_version_text(int code) {
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? code % 10000 / 100 : code % 1000 / 100;
  return str(major, ".", minor, ".", code % 100);
}

std::string nccl_version_problem(NcclApi& api, int header_version) {
  int loaded = 0;
  const int status = api.ncclGetVersion(&loaded);
  if (status != NcclApi::kNcclSuccess)
    return str("ncclGetVersion(&loaded) failed: ", api.nccl_error_text(status, nullptr), " at ", __FILE__, ":",
               __LINE__);
  if (loaded >= kMinNcclVersion) return "";
  return str("the NCCL library loaded (libnccl.so.2) is NCCL ", nccl_version_text(loaded),
             ", older than the oldest this build works with, NCCL ", nccl_version_text(kMinNcclVersion),
             " (non-blocking communicators through ncclCommInitRankConfig; the NCCL plugin was compiled with "
             "nccl.h of NCCL ",
             nccl_version_text(header_version), "): install NCCL ", nccl_version_text(kMinNcclVersion),
             " or newer where the dynamic loader finds libnccl.so.2");
}

void check_nccl_version(NcclApi& api, int header_version, const char* op) {
  const std::string problem = nccl_version_problem(api, header_version);
  if (!problem.empty()) throw chainer::Error(str(op, ": ", problem));
}

std::unique_ptr<CollectiveBackend> backend(MPI_Comm comm, int device, const char* op) {
  const Loaded& l = loaded();
  if (!l.plugin || !l.why_not.empty()) throw chainer::Error(str(op, ": NCCL cannot be used: ", l.why_not));
  return l.plugin->backend(comm, device);
}

}  // namespace chainermn::nccl
