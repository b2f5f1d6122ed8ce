// ChainerMN's troubleshooting guide ("Step-by-step troubleshooting") as one program: it checks,
// in the guide's order, the MPI library, that every rank runs and where, that the launcher and
// the library agree on the job, the communicator's host topology, what CUDA this machine has
// (devices, driver, runtime, NCCL, cuDNN, each as loaded and as compiled against, whether MPI is
// CUDA-aware) and, where there is a device, that cuBLAS, cuDNN and NCCL run on it, and then a small
// all-reduce with a known result on every communicator that can run here. Alone, it is the first
// check of a GPU machine: every CUDA library the framework loads, loaded and run once.
//   mpiexec -n 4 build/apps/chainermn_check        (or without mpiexec: a 1-process job)
// Rank 0 prints; every verdict is agreed by all ranks, so rank 0 reports what any rank saw.
// Exit status: 0 when every check passed, 1 when one failed, 2 for a bad command line.
#include <chainer.h>
#include <chainermn.h>
#include <dlfcn.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/cuda/cudnn_plugin.h"
#include "core/util/plugin.h"
#include "distributed/communicators/nccl_api.h"
#include "distributed/communicators/nccl_backend.h"
#include "distributed/runtime/mpi_library.h"

using chainer::DType;
using chainer::Error;
using chainer::str;
using chainer::Tensor;

namespace {

const char* kUsage = R"(usage: mpiexec -n N chainermn_check      (or chainermn_check alone: a 1-process job)
Checks a ChainerMN set-up step by step, as ChainerMN's troubleshooting guide does, and prints
from rank 0, one section per step:
  1. the MPI library (version, MPI standard, thread level);
  2. every rank with its host name, and that all ranks load the same MPI library;
  3. that the launcher and the library agree on the job (a program started by another MPI's
     mpiexec runs every process alone as rank 0 of 1);
  4. each rank's intra_rank/intra_size (on its host) and inter_rank/inter_size (hosts);
  5. CUDA, in a build with CUDA: devices, driver and runtime versions, NCCL and cuDNN (found
     at run time: libnccl.so.2, libcudnn.so.9, next to the versions of the headers the plugins
     were compiled with), whether MPI is CUDA-aware; where a rank has a device, that a matrix
     product (cuBLAS) and a convolution with its gradients (cuDNN) on it match the CPU, and
     that its libnccl is new enough for the NCCL communicators;
  6. on every communicator this build has and this placement suits (naive, flat, hierarchical,
     two_dimensional, single_node, ...): multi_node_mean_grad, allreduce and bcast_data
     against results known in closed form.
The last line says how many checks passed. Exit status: 0 when all passed, 1 when any failed,
2 for a bad command line. See docs/troubleshooting.md for what each section tells.
  -h, --help   show this help
)";

int world_rank() { return chainermn::world_rank(); }
int world_size() { return chainermn::world_size(); }
bool root() { return world_rank() == 0; }

// Every rank's TEXT, indexed by rank, on rank 0 (empty elsewhere).
std::vector<std::string> gather_text(const std::string& text) {
  const int size = world_size();
  const int length = int(text.size());
  std::vector<int> lengths(root() ? size : 0), offsets(root() ? size : 0);
  CHAINERMN_MPI_CHECK(chainermn::mpi::gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD));
  std::string all;
  if (root()) {
    int at = 0;
    for (int r = 0; r < size; ++r) offsets[r] = at, at += lengths[r];
    all.resize(size_t(at));
  }
  CHAINERMN_MPI_CHECK(chainermn::mpi::gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
                                  0, MPI_COMM_WORLD));
  std::vector<std::string> out;
  for (int r = 0; r < int(lengths.size()); ++r) out.push_back(all.substr(size_t(offsets[r]), size_t(lengths[r])));
  return out;
}

// "0-3, 5": ranks as ranges.
std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    out += str(out.empty() ? "" : ", ", ranks[i], j > i ? str("-", ranks[j]) : std::string());
    i = j + 1;
  }
  return out;
}

// The checks and their outcomes, printed by rank 0 as they are decided.
struct Tally {
  int passed = 0, failed = 0;
  // Every rank calls this with its own finding (empty: fine) and gets the same answer: whether
  // every rank was fine. Rank 0 prints "OK: WHAT" or "FAILED: WHAT: rank R: finding" and HINT.
  bool decide(const std::string& what, const std::string& finding, const std::string& hint = "") {
    const std::vector<std::string> all = gather_text(finding);
    int failing = finding.empty() ? 0 : 1;
    CHAINERMN_MPI_CHECK(chainermn::mpi::allreduce(MPI_IN_PLACE, &failing, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    if (failing == 0) {
      ++passed;
      if (root()) std::cout << "OK: " << what << "\n";
      return true;
    }
    ++failed;
    if (root()) {
      std::vector<int> ranks;
      for (int r = 0; r < int(all.size()); ++r)
        if (!all[r].empty()) ranks.push_back(r);
      std::cout << "FAILED: " << what << ": rank " << ranks[0] << ": " << all[ranks[0]];
      if (ranks.size() > 1) std::cout << " (also on rank" << (ranks.size() > 2 ? "s " : " ")
                                      << rank_list({ranks.begin() + 1, ranks.end()}) << ")";
      std::cout << "\n";
      if (!hint.empty()) std::cout << "  what to try: " << hint << "\n";
    }
    return false;
  }
};

void section(const std::string& title) {
  if (root()) std::cout << "\n== " << title << "\n";
}

void flush() { std::cout << std::flush; }

// ---- 1-3: MPI, ranks, launcher ----

void print_mpi_library() {
  section("1. MPI library");
  if (!root()) return;
  std::cout << "library: " << chainermn::mpi_library_name() << "\n";
  const std::string path = chainermn::mpi_library_path();
  if (!path.empty()) std::cout << "loaded from: " << path << "\n";
  std::cout << "MPI standard: " << chainermn::mpi_standard_version() << "\n"
            << "thread level: " << chainermn::mpi_thread_level()
            << " (chainermn asks for MPI_THREAD_FUNNELED: only the main thread calls MPI)\n"
            << "processes in MPI_COMM_WORLD: " << world_size() << "\n";
}

// Returns every rank's host name (on rank 0).
std::vector<std::string> check_ranks(Tally& tally) {
  section("2. Ranks and hosts");
  const std::vector<std::string> hosts = gather_text(chainermn::host_name());
  const std::vector<std::string> libraries = gather_text(chainermn::mpi_library_name());
  if (root())
    for (int r = 0; r < int(hosts.size()); ++r)
      std::cout << "rank " << r << " of " << world_size() << " on " << hosts[r] << "\n";
  // The CPU kernels each rank chose for its CPU (core/cpu/isa.h): rank 0's, and any other's that differs.
  const std::vector<std::string> cpus = gather_text(chainer::cpu::isa_description());
  for (int r = 0; r < int(cpus.size()); ++r)
    if (r == 0 || cpus[r] != cpus[0]) std::cout << "cpu kernels of rank " << r << ": " << cpus[r] << "\n";
  // A host with another MPICH (another version, or another MPI under the same name) breaks
  // the job in ways that are hard to read; the first line names the version.
  std::string finding;
  if (root())
    for (int r = 1; r < int(libraries.size()); ++r)
      if (libraries[r] != libraries[0]) {
        finding = str("rank ", r, " on ", hosts[r], " runs '", libraries[r], "' but rank 0 on ", hosts[0], " runs '",
                      libraries[0], "'");
        break;
      }
  tally.decide("every rank runs the same MPI library", finding,
               "install the same MPICH version on every host, and check LD_LIBRARY_PATH there "
               "(ssh HOST 'echo $LD_LIBRARY_PATH'; mpiexec -genv LD_LIBRARY_PATH ... passes one)");
  flush();
  return hosts;
}

// False when the launcher started several processes that each run alone (then nothing later can work).
bool check_launcher(Tally& tally) {
  section("3. Launcher and library agree");
  const std::string mismatch = chainermn::launcher_mismatch();
  if (mismatch.empty()) {
    // How the ranks wait for each other (distributed/runtime/mpi_wait.h): passive where a machine has
    // more ranks than cores.
    const char* policy = std::getenv("CHAINERMN_WAIT_POLICY");
    if (root())
      std::cout << "MPI wait policy: " << chainermn::wait_policy_name(chainermn::wait_policy())
                << " (CHAINERMN_WAIT_POLICY=" << (policy && *policy ? policy : "auto") << ")\n";
    return tally.decide(str("the launcher and MPI agree: ", world_size(), world_size() == 1 ? " process" : " processes"),
                        "");
  }
  // Each process is its own job here, so each reports (each is rank 0 of 1).
  return tally.decide(
      "the launcher and MPI agree", str(mismatch, world_size() == 1 ? ": every process runs alone as rank 0 of 1" : ""),
      "this program was built with MPICH but started by another MPI's mpiexec (Open MPI's mpirun, or an "
      "`mpiexec` that belongs to another MPI: `mpiexec --version` says which). Launch it with MPICH's: "
      "mpiexec.mpich -n N ...");
}

// ---- 4: topology ----

// Where this rank runs on its host.
struct Placement {
  int intra_rank = 0, intra_size = 1;
};

Placement check_topology(Tally& tally, const std::vector<std::string>& hosts) {
  section("4. Topology (a naive communicator)");
  auto comm = chainermn::create_communicator("naive");
  const std::vector<std::string> rows = gather_text(str(comm->intra_rank(), " ", comm->intra_size(), " ",
                                                        comm->inter_rank(), " ", comm->inter_size()));
  std::string finding;
  if (comm->rank() != world_rank() || comm->size() != world_size())
    finding = str("the communicator says rank ", comm->rank(), " of ", comm->size(), ", MPI_COMM_WORLD rank ",
                  world_rank(), " of ", world_size());
  if (root()) {
    // ChainerMN's definitions, from the host names of section 2: intra_rank is the position of a
    // rank among the ranks of its host, inter_rank the index of its host, hosts ordered by their
    // smallest rank.
    std::vector<std::string> host_order;
    std::map<std::string, int> seen;
    for (int r = 0; r < int(rows.size()); ++r) {
      std::istringstream in(rows[r]);
      int intra_rank = -1, intra_size = -1, inter_rank = -1, inter_size = -1;
      in >> intra_rank >> intra_size >> inter_rank >> inter_size;
      std::cout << "rank " << r << " on " << hosts[r] << ": intra_rank " << intra_rank << " intra_size " << intra_size
                << " inter_rank " << inter_rank << " inter_size " << inter_size << "\n";
      if (!seen.count(hosts[r])) host_order.push_back(hosts[r]);
      const int expect_intra_rank = seen[hosts[r]]++;
      const int expect_intra_size = int(std::count(hosts.begin(), hosts.end(), hosts[r]));
      const int expect_inter_rank =
          int(std::find(host_order.begin(), host_order.end(), hosts[r]) - host_order.begin());
      const int expect_inter_size = int(std::set<std::string>(hosts.begin(), hosts.end()).size());
      if (finding.empty() && (intra_rank != expect_intra_rank || intra_size != expect_intra_size ||
                              inter_rank != expect_inter_rank || inter_size != expect_inter_size))
        finding = str("rank ", r, " on ", hosts[r], " has intra ", intra_rank, "/", intra_size, " inter ", inter_rank, "/",
                      inter_size, ", expected intra ", expect_intra_rank, "/", expect_intra_size, " inter ",
                      expect_inter_rank, "/", expect_inter_size, " from the host names");
    }
    std::cout << host_order.size() << (host_order.size() == 1 ? " host" : " hosts") << ":";
    for (const std::string& h : host_order) std::cout << " " << h << " (" << seen[h] << ")";
    std::cout << "\n";
  }
  tally.decide("intra and inter ranks match the host names", finding,
               "every host needs a distinct host name (`hostname` on each; MPI_Get_processor_name is what counts)");
  flush();
  return {comm->intra_rank(), comm->intra_size()};
}

// ---- 5: CUDA ----

// "2.21.5" from a version number encoded as NCCL and cuDNN encode theirs: major * 10000 + minor
// * 100 + patch since NCCL 2.9 and cuDNN 9, major * 1000 + minor * 100 + patch before.
std::string library_version(long v) {
  const long major = v >= 10000 ? v / 10000 : v / 1000;
  const long minor = v >= 10000 ? v % 10000 / 100 : v % 1000 / 100;
  return str(major, ".", minor, ".", v % 100);
}

std::string cuda_version(int v) { return str(v / 1000, ".", v % 1000 / 10); }

// Loads the first of SONAMES that the dynamic loader finds and calls its version function
// SYMBOL: "2.21.5 (/usr/lib/.../libnccl.so.2)", or "not found (...)". Loaded here only, so
// that neither libchainermn nor this program needs the library to start.
template <class Query>
std::string dlopen_version(const std::vector<const char*>& sonames, const char* symbol, const Query& query) {
  std::string why;
  for (const char* soname : sonames) {
    void* handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* e = dlerror();
      why += str(why.empty() ? "" : "; ", e ? e : soname);
      continue;
    }
    void* fn = dlsym(handle, symbol);
    if (!fn) return str("unknown (", soname, " has no ", symbol, ")");
    Dl_info info{};
    const std::string where = dladdr(fn, &info) && info.dli_fname ? info.dli_fname : soname;
    return str(query(fn), " (", where, ")");
  }
  return str("not found (", why, ")");
}

// The NCCL found at run time, then the nccl.h the NCCL plugin was compiled with.
std::string nccl_version() {
  std::string out = dlopen_version({"libnccl.so.2"}, "ncclGetVersion", [](void* fn) {
    int v = 0;
    const int status = reinterpret_cast<int (*)(int*)>(fn)(&v);  // ncclResult_t, 0: ncclSuccess
    return status == 0 ? library_version(v) : str("unknown (ncclGetVersion returned ", status, ")");
  });
  const int header = chainermn::nccl::header_version();
  if (header == 0) return str(out, "; no NCCL plugin: ", chainermn::nccl::unavailable_reason());
  return str(out, "; compiled with nccl.h ", library_version(header), " (libchainermn_nccl.so), needs ",
             library_version(chainermn::nccl::kMinNcclVersion), " or newer");
}

// The cuDNN plugin, opened as libchainer_cuda.so opens it (core/cuda/cudnn_plugin.h): beside the
// libraries, which libchainer's folder is. Null with WHY_NOT set when it cannot be loaded.
const chainer::cuda::CudnnPlugin* cudnn_plugin(std::string& why_not) {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<const void*>(&chainer::load_plugin_entry), &info) || !info.dli_fname) {
    why_not = "libchainer's folder is unknown (dladdr)";
    return nullptr;
  }
  const std::string path = str(std::filesystem::path(info.dli_fname).parent_path().string(), "/libchainer_cudnn.so");
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = dlerror();
    why_not = e ? e : path + ": unknown error";
    return nullptr;
  }
  auto entry = reinterpret_cast<const chainer::cuda::CudnnPlugin* (*)()>(dlsym(handle, "chainer_cudnn_plugin"));
  const chainer::cuda::CudnnPlugin* plugin = entry ? entry() : nullptr;
  if (!plugin || plugin->interface != chainer::cuda::kCudnnPluginInterface) {
    why_not = str(path, " has no chainer_cudnn_plugin entry of this build's interface");
    return nullptr;
  }
  return plugin;
}

// The cuDNN found at run time (loaded by the cuDNN plugin first, so it is the plugin's), then the
// cudnn.h the plugin was compiled with.
std::string cudnn_version() {
  std::string why_not;
  const chainer::cuda::CudnnPlugin* plugin = cudnn_plugin(why_not);
  const std::string found = dlopen_version({"libcudnn.so.9", "libcudnn.so.8"}, "cudnnGetVersion", [](void* fn) {
    return library_version(long(reinterpret_cast<size_t (*)()>(fn)()));
  });
  if (!plugin) return str(found, "; the cuDNN plugin could not be loaded (the convolutions will fail): ", why_not);
  return str(found, "; compiled with cudnn.h ", library_version(plugin->header_version), " (libchainer_cudnn.so)");
}

// This rank's CUDA, as lines of text (ranks of one host normally print the same).
std::string describe_cuda() {
  namespace cuda = chainer::cuda;
  std::ostringstream out;
  const int devices = cuda::device_count();
  if (devices == 0) out << "devices: none (" << cuda::unavailable_reason() << ")\n";
  else out << "devices: " << devices << "\n";
  for (int d = 0; d < devices; ++d) {
    const cuda::DeviceProperties p = cuda::device_properties(d);
    out << "  cuda:" << d << ": " << p.name << ", compute capability " << p.major << "." << p.minor << ", "
        << std::fixed << std::setprecision(1) << double(p.total_memory_bytes) / double(1 << 30) << " GiB, "
        << p.multiprocessors << " multiprocessors" << (p.pci_bus_id.empty() ? "" : ", PCI ") << p.pci_bus_id << "\n";
  }
  try {
    const cuda::RuntimeVersions v = cuda::versions();
    out << "CUDA driver: " << (v.driver == 0 ? "none installed" : "supports CUDA " + cuda_version(v.driver)) << "\n"
        << "CUDA runtime: " << cuda_version(v.runtime) << "\n";
  } catch (const Error& e) {
    out << "CUDA driver and runtime: unknown (" << e.what() << ")\n";
  }
  out << "NCCL: " << nccl_version() << "\n"
      << "cuDNN: " << cudnn_version() << "\n";
  const chainermn::CudaAwareness aware = chainermn::mpi_cuda_aware();
  out << "MPI CUDA-aware: " << aware.name() << " (" << aware.reason << ")\n";
  return out.str();
}

void print_cuda(const std::vector<std::string>& hosts) {
  section("5. CUDA");
  if (!chainer::cuda::built_with_cuda()) {
    if (root()) std::cout << "this build has no CUDA support (configured without nvcc, or with -Dcuda=disabled)\n";
    return;
  }
  const std::vector<std::string> texts = gather_text(describe_cuda());
  if (!root()) return;
  // One block per distinct description, naming the ranks and hosts it holds for.
  std::vector<std::pair<std::string, std::vector<int>>> blocks;
  for (int r = 0; r < int(texts.size()); ++r) {
    auto it = std::find_if(blocks.begin(), blocks.end(), [&](const auto& b) { return b.first == texts[r]; });
    if (it == blocks.end()) blocks.push_back({texts[r], {r}});
    else it->second.push_back(r);
  }
  for (const auto& [text, ranks] : blocks) {
    std::vector<std::string> names;
    for (int r : ranks)
      if (std::find(names.begin(), names.end(), hosts[r]) == names.end()) names.push_back(hosts[r]);
    std::string on;
    for (const std::string& n : names) on += (on.empty() ? "" : ", ") + n;
    std::cout << (ranks.size() == 1 ? "rank " : "ranks ") << rank_list(ranks) << " (" << on << "):\n" << text;
  }
  flush();
}

// ---- 6: communicators ----

// A model with two parameters of odd sizes and two dtypes, so that packing, offsets and
// per-dtype buffers are all exercised.
struct CheckModel : chainer::Link {
  CheckModel() {
    add_param("w", Tensor::zeros({7, 13}, DType::Float32));
    add_param("b", Tensor::zeros({1001}, DType::Float64));
  }
};

// Gradient of element K of parameter P on rank R, and its mean over N ranks: integers and
// halves, so every rank's value is exact in float32; the mean of (R + 1) over R is (N + 1) / 2
// and of R^2 is (N - 1)(2N - 1) / 6.
double grad_value(int p, int64_t k, int r) { return double(k % 11 + 1) * (r + 1) + double(k % 5 + p) * 0.5 * r * r; }
double grad_mean(int p, int64_t k, int n) {
  return double(k % 11 + 1) * (n + 1) / 2.0 + double(k % 5 + p) * 0.5 * (n - 1) * (2.0 * n - 1) / 6.0;
}

// Compares GOT with EXPECTED elementwise; returns "" or "NAME[i] is x, expected y (and K more)".
std::string compare(const std::string& name, const std::vector<double>& got, const std::vector<double>& expected,
                    double rtol) {
  if (got.size() != expected.size())
    return str(name, " has ", got.size(), " values, expected ", expected.size());
  int64_t wrong = 0, first = -1;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(got[i] - expected[i]) <= rtol * std::max(1.0, std::abs(expected[i])))) {
      if (first < 0) first = int64_t(i);
      ++wrong;
    }
  if (wrong == 0) return "";
  return str(name, "[", first, "] is ", got[size_t(first)], ", expected ", expected[size_t(first)],
             wrong > 1 ? str(" (and ", wrong - 1, " more wrong values)") : std::string());
}

double tolerance(DType dtype) { return dtype == DType::Float32 ? 4e-6 : 1e-12; }

// The kinds whose gradients live on GPUs only (ChainerMN's NCCL communicators).
bool gpu_only(const std::string& kind) { return kind == "pure_nccl" || kind == "non_cuda_aware"; }

std::string check_mean_grad(const chainermn::Communicator& comm, chainer::Device device) {
  CheckModel model;
  model.to_device(device);
  const int r = comm.rank(), n = comm.size();
  int p = 0;
  for (auto& [name, param] : model.namedparams()) {
    std::vector<double> g(size_t(param.data().numel()));
    for (size_t k = 0; k < g.size(); ++k) g[k] = grad_value(p, int64_t(k), r);
    param.set_grad(Tensor::from_vector(g, param.shape()).astype(param.data().dtype()).to(device));
    ++p;
  }
  comm.multi_node_mean_grad(model);
  p = 0;
  for (auto& [name, param] : model.namedparams()) {
    std::vector<double> expected(size_t(param.data().numel()));
    for (size_t k = 0; k < expected.size(); ++k) expected[k] = grad_mean(p, int64_t(k), n);
    if (std::string wrong = compare(name + " gradient", param.grad().to_vector<double>(), expected,
                                    tolerance(param.data().dtype()));
        !wrong.empty())
      return wrong;
    ++p;
  }
  return "";
}

std::string check_allreduce(const chainermn::Communicator& comm, chainer::Device device) {
  const int r = comm.rank(), n = comm.size();
  // float64: r + 1 + k / 2 sums to n(n + 1)/2 + n k / 2; int64: (r + 1)(k + 1) * 1000003 sums exactly.
  std::vector<double> x(15), expected_x(15);
  for (int k = 0; k < 15; ++k) {
    x[size_t(k)] = r + 1 + k * 0.5;
    expected_x[size_t(k)] = n * (n + 1) / 2.0 + n * k * 0.5;
  }
  std::vector<int64_t> y(11);
  std::vector<double> expected_y(11);
  for (int k = 0; k < 11; ++k) {
    y[size_t(k)] = int64_t(r + 1) * (k + 1) * 1000003;
    expected_y[size_t(k)] = double(int64_t(n) * (n + 1) / 2 * (k + 1) * 1000003);
  }
  const Tensor sx = comm.allreduce(Tensor::from_vector(x, {3, 5}).to(device));
  const Tensor sy = comm.allreduce(Tensor::from_vector(y, {11}).to(device));
  if (sx.shape() != chainer::Shape{3, 5} || sx.dtype() != DType::Float64)
    return str("the float64 sum came back with shape ", chainer::shape_str(sx.shape()), " and dtype ",
               chainer::dtype_name(sx.dtype()), ", expected (3, 5) float64");
  if (std::string wrong = compare("float64 sum", sx.to_vector<double>(), expected_x, 0); !wrong.empty()) return wrong;
  if (sy.dtype() != DType::Int64) return str("the int64 sum came back as ", chainer::dtype_name(sy.dtype()));
  return compare("int64 sum", sy.to_vector<double>(), expected_y, 0);
}

std::string check_bcast_data(const chainermn::Communicator& comm, chainer::Device device) {
  CheckModel model;
  const int r = comm.rank();
  // Rank 0's values are k / 4; every other rank starts from something else.
  for (auto& [name, param] : model.namedparams()) {
    std::vector<double> v(size_t(param.data().numel()));
    for (size_t k = 0; k < v.size(); ++k) v[k] = double(k) * 0.25 + 1000.0 * r;
    param.data() = Tensor::from_vector(v, param.shape()).astype(param.data().dtype());
  }
  model.to_device(device);
  comm.bcast_data(model);
  for (auto& [name, param] : model.namedparams()) {
    std::vector<double> expected(size_t(param.data().numel()));
    for (size_t k = 0; k < expected.size(); ++k) expected[k] = double(k) * 0.25;
    if (std::string wrong = compare(name, param.data().to_vector<double>(), expected, 0); !wrong.empty())
      return wrong;
  }
  return "";
}

// Runs CHECK, turning an exception into a finding (thrown on every rank alike, as the
// communicators' errors are; one rank throwing alone would leave the others waiting).
std::string attempt(const std::function<std::string()>& check) {
  try {
    return check();
  } catch (const std::exception& e) {
    return str("threw: ", e.what());
  }
}

// The device this rank uses for the library checks (as section 6 picks a GPU: cuda:intra_rank,
// shared when a host has more ranks than devices), or -1 with none.
int library_check_device(const Placement& placement) {
  const int devices = chainer::cuda::device_count();
  return devices == 0 ? -1 : placement.intra_rank % devices;
}

// Deterministic values in [-1, 1) for a tensor of SHAPE: exact in float32.
Tensor pattern(const chainer::Shape& shape, DType dtype, int seed) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = double((i * 37 + seed * 11) % 64 - 32) / 32.0;
  return Tensor::from_vector(v, shape).astype(dtype);
}

// "" when GOT (on a device) matches EXPECTED (on the CPU) within the products' rounding.
std::string compare_to_cpu(const std::string& name, const Tensor& got, const Tensor& expected, DType dtype) {
  return compare(name, got.to(chainer::Device::cpu()).astype(DType::Float64).to_vector<double>(),
                 expected.astype(DType::Float64).to_vector<double>(), dtype == DType::Float32 ? 1e-4 : 1e-10);
}

std::string check_matmul(chainer::Device device) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const Tensor a = pattern({37, 53}, dtype, 1), b = pattern({53, 29}, dtype, 2);
    const Tensor expected = chainer::ops::matmul(a, b);
    if (std::string wrong = compare_to_cpu(str(chainer::dtype_name(dtype), " product"),
                                           chainer::ops::matmul(a.to(device), b.to(device)), expected, dtype);
        !wrong.empty())
      return wrong;
  }
  return "";
}

std::string check_convolution(chainer::Device device) {
  namespace ops = chainer::ops;
  const ops::Conv2dParams params{.sy = 2, .sx = 1, .ph = 1, .pw = 1};
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const Tensor x = pattern({2, 3, 9, 11}, dtype, 3), W = pattern({4, 3, 3, 3}, dtype, 4), b = pattern({4}, dtype, 5);
    const Tensor y = ops::convolution_2d(x, W, b, params);
    const Tensor gy = pattern(y.shape(), dtype, 6);
    const std::string kind = chainer::dtype_name(dtype);
    if (std::string wrong = compare_to_cpu(kind + " convolution_2d",
                                           ops::convolution_2d(x.to(device), W.to(device), b.to(device), params), y,
                                           dtype);
        !wrong.empty())
      return wrong;
    if (std::string wrong = compare_to_cpu(kind + " convolution_2d_grad_data",
                                           ops::convolution_2d_grad_data(gy.to(device), W.to(device), 9, 11, params),
                                           ops::convolution_2d_grad_data(gy, W, 9, 11, params), dtype);
        !wrong.empty())
      return wrong;
    if (std::string wrong = compare_to_cpu(kind + " convolution_2d_grad_filter",
                                           ops::convolution_2d_grad_filter(x.to(device), gy.to(device), 3, 3, params),
                                           ops::convolution_2d_grad_filter(x, gy, 3, 3, params), dtype);
        !wrong.empty())
      return wrong;
  }
  return "";
}

// Where any rank has a device: each runs cuBLAS and cuDNN on its device against the CPU, and
// checks that its libnccl can run the NCCL communicators (a rank without a device fails these).
// Run alone, this is what a GPU machine is checked with first.
void check_cuda_libraries(Tally& tally, const Placement& placement) {
  if (!chainer::cuda::built_with_cuda()) return;
  const int device = library_check_device(placement);
  int any = device >= 0 ? 1 : 0;
  CHAINERMN_MPI_CHECK(chainermn::mpi::allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
  if (any == 0) {
    if (root()) std::cout << "(no rank has a CUDA device: cuBLAS, cuDNN and NCCL are not run)\n";
    return;
  }
  const std::string none = device < 0 ? str("no CUDA device on ", chainermn::host_name(), " (",
                                            chainer::cuda::unavailable_reason(), ")")
                                      : std::string();
  const chainer::Device d = chainer::Device::cuda(std::max(device, 0));
  auto on_device = [&](const std::function<std::string()>& check) {
    return device < 0 ? none : attempt([&] {
      chainer::cuda::get_device(device).use();
      std::string finding = check();
      chainer::cuda::synchronize();  // a device error is this check's
      return finding;
    });
  };
  const std::string where = str("cuda:intra_rank", placement.intra_size > 1 ? " (each rank's)" : "");
  tally.decide(str("cuBLAS: float32 and float64 matrix products on ", where, " match the CPU"),
               on_device([&] { return check_matmul(d); }));
  tally.decide(str("cuDNN: convolution_2d and its gradients on ", where, " match the CPU"),
               on_device([&] { return check_convolution(d); }),
               "the cuDNN plugin (libchainer_cudnn.so) needs libcudnn.so.9: section 5's cuDNN line says what was found");
  // NCCL: where no rank has the NCCL plugin (a build without NCCL, or no libnccl: section 5 says
  // which) there is nothing to check; otherwise every rank's libnccl must be new enough.
  const bool has_plugin = chainermn::nccl::header_version() != 0;
  int any_plugin = has_plugin ? 1 : 0;
  CHAINERMN_MPI_CHECK(chainermn::mpi::allreduce(MPI_IN_PLACE, &any_plugin, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
  if (any_plugin == 1) {
    const int loaded = chainermn::nccl::version();
    const std::string needed = library_version(chainermn::nccl::kMinNcclVersion);
    tally.decide(str("NCCL: the loaded libnccl is ", needed, " or newer"),
                 !has_plugin ? str("the NCCL plugin could not be loaded: ", chainermn::nccl::unavailable_reason())
                 : loaded >= chainermn::nccl::kMinNcclVersion
                     ? std::string()
                     : str("libnccl.so.2 is ", loaded == 0 ? std::string("of unknown version") : library_version(loaded),
                           ", older than ", needed),
                 str("install NCCL ", needed, " or newer (ideally the version section 5 says the plugin was compiled "
                     "with) where the dynamic loader finds libnccl.so.2"));
  }
  flush();
}

void check_communicators(Tally& tally, int intra_size) {
  section("6. Communicators: multi_node_mean_grad, allreduce, bcast_data against closed forms");
  int not_applicable = 0, not_available = 0;
  for (const chainermn::CommunicatorKind& kind : chainermn::communicator_kinds()) {
    if (!kind.averages) continue;  // the dummy: nothing to check against a closed form
    if (!kind.available) {
      ++not_available;
      if (root()) std::cout << kind.name << ": not available: needs " << kind.requirement << "\n";
      continue;
    }
    // A GPU-only kind needs a device of its own for every rank (NCCL refuses two ranks on one
    // GPU): rank intra_rank of a host takes cuda:intra_rank.
    chainer::Device device = chainer::Device::cpu();
    if (gpu_only(kind.name)) {
      const int devices = chainer::cuda::device_count();
      const std::string lack =
          devices == 0 ? str("no CUDA device on ", chainermn::host_name(), " (", chainer::cuda::unavailable_reason(), ")")
          : intra_size > devices ? str(intra_size, " processes on ", chainermn::host_name(), " but ", devices,
                                       devices == 1 ? " CUDA device" : " CUDA devices", " (one each is needed)")
                                 : std::string();
      const std::vector<std::string> lacks = gather_text(lack);
      int lacking = lack.empty() ? 0 : 1;
      CHAINERMN_MPI_CHECK(chainermn::mpi::allreduce(MPI_IN_PLACE, &lacking, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
      if (lacking > 0) {
        ++not_applicable;
        if (root())
          for (const std::string& l : lacks)
            if (!l.empty()) {
              std::cout << kind.name << ": not applicable here: " << l << "\n";
              break;
            }
        continue;
      }
    }
    // The constructor refuses a placement that does not suit it (single_node across hosts,
    // two_dimensional with uneven hosts), on every rank alike.
    std::shared_ptr<chainermn::Communicator> comm;
    std::string refused;
    try {
      comm = chainermn::create_communicator(kind.name);
    } catch (const Error& e) {
      refused = e.what();
    }
    if (!refused.empty()) {
      ++not_applicable;
      if (root()) std::cout << kind.name << ": not applicable here: " << refused << "\n";
      continue;
    }
    if (gpu_only(kind.name)) {
      const int id = comm->intra_rank();
      chainer::cuda::get_device(id).use();
      device = chainer::Device::cuda(id);
    }
    const std::string hint =
        "rerun with CHAINERMN_DEBUG=1 for every rank (mpiexec -genv CHAINERMN_DEBUG 1 ...), which names the parameter "
        "and the ranks that differ; use a communicator that passed here meanwhile; the suite's tests "
        "(meson test -C build communicator_np2 simhosts) narrow it down";
    tally.decide(kind.name + ": multi_node_mean_grad",
                 attempt([&] { return check_mean_grad(*comm, device); }), hint);
    tally.decide(kind.name + ": allreduce", attempt([&] { return check_allreduce(*comm, device); }), hint);
    tally.decide(kind.name + ": bcast_data", attempt([&] { return check_bcast_data(*comm, device); }), hint);
    comm->finalize();
    flush();
  }
  if (root() && (not_applicable || not_available))
    std::cout << "(" << not_available << " not available in this build, " << not_applicable
              << " not applicable to this placement)\n";
}

int finish(const Tally& tally, const std::string& note = "") {
  const int total = tally.passed + tally.failed;
  if (root()) {
    if (tally.failed == 0) std::cout << "\nchainermn_check: all " << total << " checks passed\n";
    else std::cout << "\nchainermn_check: " << tally.failed << " of " << total << " checks failed" << note << "\n";
  }
  flush();
  return tally.failed == 0 ? 0 : 1;
}

int run(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      if (root()) std::cout << kUsage;
      return 0;
    }
    // Every rank sees the same command line, so every rank stops here alike.
    if (root()) std::cerr << "chainermn_check: error: unknown option '" << a << "' (see --help)\n";
    return 2;
  }
  if (root())
    std::cout << "chainermn_check: ChainerMN's troubleshooting steps (docs/troubleshooting.md), " << world_size()
              << (world_size() == 1 ? " process" : " processes") << "\n";
  Tally tally;
  print_mpi_library();
  flush();
  const std::vector<std::string> hosts = check_ranks(tally);
  if (!check_launcher(tally)) return finish(tally, "; the later steps were not run: fix the launch first");
  flush();
  const Placement placement = check_topology(tally, hosts);
  print_cuda(hosts);
  check_cuda_libraries(tally, placement);
  check_communicators(tally, placement.intra_size);
  return finish(tally);
}

}  // namespace

int main(int argc, char** argv) {
  return chainermn::run_main(argc, argv, [](int c, char** v) { return run(c, v); });
}
