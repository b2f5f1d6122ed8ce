#include "core/util/plugin.h"

#include <dlfcn.h>

#include <filesystem>

#include "core/util/error.h"

namespace chainer {

std::string path_beside(const void* anchor, const char* file) {
  Dl_info info{};
  if (dladdr(anchor, &info) && info.dli_fname)
    return (std::filesystem::path(info.dli_fname).parent_path() / file).string();
  return file;
}

void* load_plugin_entry(const void* anchor, const char* file, const char* entry, const char* what,
                        std::string& why_not) {
  const std::string path = path_beside(anchor, file);
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = dlerror();
    std::string first = e ? e : "unknown error";
    // Where the file is there but does not load (a library it needs is missing), that is the
    // reason to report: the loader's search would only add "not found" on top of it.
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      handle = dlopen(file, RTLD_NOW | RTLD_LOCAL);
      if (!handle) {
        e = dlerror();
        first = str("no such file there, and the loader's search found none: ", e ? e : "unknown error");
      }
    }
    if (!handle) {
      why_not = str(what, " could not be loaded (", path, "): ", first);
      return nullptr;
    }
  }
  void* symbol = dlsym(handle, entry);
  if (!symbol) why_not = str(path, " has no ", entry, " entry point");
  return symbol;
}

}  // namespace chainer
