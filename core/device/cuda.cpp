// Loads the CUDA plugin on first use and forwards core/device/cuda.h to it.
#include "core/device/cuda.h"

#include <atomic>
#include <mutex>
#include <utility>
#include <vector>

#include "core/cuda/runtime.h"
#include "core/ops/kernels.h"
#include "core/util/plugin.h"

namespace chainer::cuda {

namespace {

struct Plugin {
  Runtime* runtime = nullptr;  // null when not available
  std::string why_not;         // why runtime is null, or why there are no devices
  int devices = 0;
};

Plugin load() {
  Plugin p;
#ifndef CHAINER_WITH_CUDA
  p.why_not = "this build of chainermn-cpp has no CUDA support (it was configured without nvcc or with -Dcuda=disabled)";
#else
  auto entry = reinterpret_cast<Runtime* (*)()>(load_plugin_entry(
      reinterpret_cast<const void*>(&load), "libchainer_cuda.so", "chainer_cuda_runtime", "the CUDA support library",
      p.why_not));
  if (!entry) return p;
  // A plugin compiled from another kernel list has a table of another layout: refuse it.
  auto list = reinterpret_cast<uint64_t (*)()>(load_plugin_entry(reinterpret_cast<const void*>(&load),
                                                                 "libchainer_cuda.so", "chainer_cuda_kernel_list",
                                                                 "the CUDA support library", p.why_not));
  if (!list || list() != kKernelListHash) {
    p.why_not = "libchainer_cuda.so was compiled from another kernel list than libchainer.so "
                "(core/ops/kernel_list.def changed since): rebuild it (meson does not follow the headers of "
                "the .cu files: touch core/cuda/*.cu)";
    return p;
  }
  p.runtime = entry();
  p.devices = p.runtime->device_count(p.why_not);
#endif
  return p;
}

const Plugin& plugin() {
  static const Plugin p = load();  // thread-safe initialization
  return p;
}

// This thread's device (DeviceHandle::use). The runtime is told the device at every call
// rather than once per thread: another library may have called cudaSetDevice since, and
// set_device costs a cudaGetDevice when the device is already current.
thread_local int t_current = 0;

// The plugin, once DEVICE is known to be usable (throws naming the device otherwise).
const Plugin& plugin_with(int device) {
  const Plugin& p = plugin();
  if (p.devices == 0) throw Error(str("cuda:", device, ": no CUDA device is available (", p.why_not, ")"));
  if (device < 0 || device >= p.devices)
    throw Error(str("cuda:", device, ": there is no such device (", p.devices, p.devices == 1 ? " device" : " devices",
                    " available: cuda:0", p.devices > 1 ? str("..cuda:", p.devices - 1) : std::string(), ")"));
  return p;
}

Runtime& runtime_for(int device) {
  const Plugin& p = plugin_with(device);
  p.runtime->set_device(device);
  return *p.runtime;
}

}  // namespace

namespace detail {
Runtime& runtime(int device) { return runtime_for(device); }
}  // namespace detail

bool built_with_cuda() {
#ifdef CHAINER_WITH_CUDA
  return true;
#else
  return false;
#endif
}

int device_count() { return plugin().devices; }
bool is_available() { return device_count() > 0; }
std::string unavailable_reason() { return device_count() > 0 ? std::string() : plugin().why_not; }

RuntimeVersions versions() {
  const Plugin& p = plugin();
  if (!p.runtime) throw Error(str("cuda::versions: ", p.why_not));
  return p.runtime->versions();
}

DeviceProperties device_properties(int id) { return plugin_with(id).runtime->device_properties(id); }

DeviceHandle get_device(int id) {
  runtime_for(id);  // throws for an ID that cannot be used
  return DeviceHandle(id);
}

void DeviceHandle::use() const {
  runtime_for(id_);
  t_current = id_;
}

namespace {
// The waiters of detail::add_stream_waiter; calls run under the lock, so a removed waiter is
// never called again once remove_stream_waiter returns.
std::mutex g_waiters_mutex;
std::vector<std::pair<int, std::function<void(int)>>> g_waiters;
int g_next_waiter = 0;
}  // namespace

namespace detail {
int add_stream_waiter(std::function<void(int device)> wait) {
  std::lock_guard<std::mutex> lock(g_waiters_mutex);
  g_waiters.emplace_back(++g_next_waiter, std::move(wait));
  return g_next_waiter;
}
void remove_stream_waiter(int id) {
  std::lock_guard<std::mutex> lock(g_waiters_mutex);
  std::erase_if(g_waiters, [id](const auto& w) { return w.first == id; });
}
void wait_for_other_streams(int device) {
  std::lock_guard<std::mutex> lock(g_waiters_mutex);
  for (const auto& w : g_waiters) w.second(device);
}
}  // namespace detail

void DeviceHandle::synchronize() const {
  runtime_for(id_).synchronize(id_);  // first: it refuses while the stream is captured
  detail::wait_for_other_streams(id_);
}

int current_device() { return t_current; }

void synchronize() { get_device(t_current).synchronize(); }

MemoryStats memory_stats(int device) {
  if (device < 0) device = t_current;
  return runtime_for(device).memory_stats(device);
}

void reset_peak_memory_stats(int device) {
  if (device < 0) device = t_current;
  runtime_for(device).reset_peak_memory_stats(device);
}

void empty_cache() {
  if (plugin().devices > 0) plugin().runtime->empty_cache();
}

LaunchCounts launch_counts() { return plugin().devices > 0 ? plugin().runtime->launch_counts() : LaunchCounts{}; }

namespace {
std::atomic<bool> g_allow_tf32{false};
}
void set_allow_tf32(bool allow) { g_allow_tf32 = allow; }
bool allow_tf32() { return g_allow_tf32; }

std::unique_ptr<Graph> Graph::capture(Device device, const std::function<void()>& step) {
  if (!device.is_cuda()) throw Error(str("CUDA graph: device ", device.str(), " is not a CUDA device"));
  Runtime& rt = runtime_for(device.index);
  rt.begin_capture(device.index);
  try {
    step();
  } catch (...) {
    runtime_for(device.index).abort_capture(device.index);
    throw;
  }
  std::shared_ptr<void> exec = runtime_for(device.index).end_capture(device.index);
  return std::unique_ptr<Graph>(new Graph(device, std::move(exec)));
}

Graph::~Graph() = default;

void Graph::replay() { runtime_for(device_.index).replay(exec_); }

}  // namespace chainer::cuda
