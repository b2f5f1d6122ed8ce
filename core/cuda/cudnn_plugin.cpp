#include "core/cuda/cudnn_plugin.h"

#include <dlfcn.h>

#include <utility>

#include "core/util/config.h"
#include "core/util/error.h"
#include "core/util/plugin.h"

namespace chainer::cuda {

const CudnnPlugin* open_cudnn_plugin(const void* anchor, const char* file, std::string& why_not) {
  // CHAINER_CUDNN=0 runs as on a machine without cuDNN (torch.backends.cudnn.enabled = False):
  // the recurrent stacks composed of this library's kernels, the convolutions refused.
  try {
    if (!config::env_flag("CHAINER_CUDNN", true)) {
      why_not = "CHAINER_CUDNN=0 turns cuDNN off";
      return nullptr;
    }
  } catch (const Error& e) {
    why_not = e.what();
    return nullptr;
  }
  const std::string path = path_beside(anchor, file);
  // RTLD_LOCAL: nothing else resolves symbols against the plugin. Never closed: its table and
  // its handles are used until exit.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    // dlerror names the file only when it is the plugin itself that is missing or broken (not
    // when a library it needs is).
    const char* raw = dlerror();
    const std::string e = raw ? raw : "unknown error";
    why_not = e.starts_with(path) ? e : str(path, ": ", e);
    return nullptr;
  }
  dlerror();
  void* entry = dlsym(handle, "chainer_cudnn_plugin");
  if (!entry) {
    why_not = str(path, " has no chainer_cudnn_plugin entry point");
    return nullptr;
  }
  const CudnnPlugin* plugin = reinterpret_cast<const CudnnPlugin* (*)()>(entry)();
  if (!plugin || plugin->interface != kCudnnPluginInterface) {
    why_not = str(path, " is of another build (its interface is ", plugin ? plugin->interface : 0,
                  ", this libchainer_cuda.so expects ", kCudnnPluginInterface, "): install both from one build");
    return nullptr;
  }
  return plugin;
}

CudnnLoader::CudnnLoader(std::string library, Open open) : library_(std::move(library)), open_(std::move(open)) {
  CHAINER_ASSERT(open_, "CudnnLoader needs a way to open the plugin");
}

const CudnnPlugin* CudnnLoader::try_get() {
  if (const CudnnPlugin* p = loaded()) return p;
  std::call_once(once_, [this] {
    ++opens_;
    std::string why;
    const CudnnPlugin* p = open_(why);
    if (!p) why_not_ = why.empty() ? std::string("no reason given") : why;
    plugin_.store(p, std::memory_order_release);
  });
  return loaded();
}

const CudnnPlugin& CudnnLoader::get(const char* op, int device) {
  if (const CudnnPlugin* p = try_get()) return *p;
  throw Error(str(op, " on cuda:", device, ": the convolutions need cuDNN (", library_,
                  "), and the cuDNN support library could not be loaded: ", why_not_,
                  " (everything but the convolutions runs without it; the recurrent stacks without it are "
                  "composed of other kernels)"));
}

}  // namespace chainer::cuda
