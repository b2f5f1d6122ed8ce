// Loading the optional back ends that live in plugins (libchainer_cuda.so, libchainermn_nccl.so):
// a plugin sits beside the library that loads it, in the build tree and where both are
// installed, so a CPU-only run never maps the CUDA libraries the plugin links.
#pragma once
#include <string>

namespace chainer {

// Opens FILE from the folder of the library that contains ANCHOR (any function of it), else,
// where no such file lies there, by the dynamic loader's search, and returns its symbol ENTRY. On
// failure returns nullptr and sets WHY_NOT, naming WHAT ("the CUDA support library"), the path
// tried and the loader's reason (for a file that is there, its own: a library it needs, say).
// FILE in the folder of the library that contains ANCHOR (FILE alone where dladdr cannot say).
std::string path_beside(const void* anchor, const char* file);

void* load_plugin_entry(const void* anchor, const char* file, const char* entry, const char* what,
                        std::string& why_not);

}  // namespace chainer
