// Loading the cuDNN plugin (core/cuda/cudnn_plugin.h), on the host: the loader's error names the
// convolution, the device, the library and the dynamic loader's message; it opens once, whatever
// the threads, and keeps a failure; a plugin of another interface is refused. In a CUDA build,
// the real libchainer_cudnn.so is opened the way libchainer_cuda.so opens it: beside
// libchainer_cuda.so, after libchainer has loaded that one with RTLD_LOCAL, and it must resolve
// against that copy (no second one is loaded) and answer cuDNN's versions. None of it needs a GPU.
#include <catch2/catch.hpp>

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/device/cuda.h"
#include "core/cuda/cudnn_plugin.h"
#include "core/util/error.h"
#include "core/util/plugin.h"

using chainer::cuda::CudnnLoader;
using chainer::cuda::CudnnPlugin;

namespace {

// Any function of libchainer: the plugins lie beside it, in the build tree.
const void* libchainer_anchor() { return reinterpret_cast<const void*>(&chainer::load_plugin_entry); }

std::string message_of(CudnnLoader& loader, const char* op, int device) {
  try {
    loader.get(op, device);
  } catch (const chainer::Error& e) {
    return e.what();
  }
  return "";
}

// How many loaded objects have a file name ending in NAME.
int loaded_copies(const std::string& name) {
  struct Count {
    std::string name;
    int n = 0;
  } count{name};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* c = static_cast<Count*>(data);
        const std::string file = info->dlpi_name ? info->dlpi_name : "";
        if (file.size() >= c->name.size() && file.compare(file.size() - c->name.size(), c->name.size(), c->name) == 0)
          ++c->n;
        return 0;
      },
      &count);
  return count.n;
}

}  // namespace

TEST_CASE("cudnn loader: a plugin file that is not there names the op, the device, the library and the loader's message") {
  CudnnLoader loader("libcudnn.so.9", [](std::string& why_not) {
    return chainer::cuda::open_cudnn_plugin(libchainer_anchor(), "libchainer_cudnn_not_there.so", why_not);
  });
  const std::string m = message_of(loader, "convolution_2d", 3);
  INFO(m);
  CHECK(m.find("convolution_2d on cuda:3: ") != std::string::npos);
  CHECK(m.find("libcudnn.so.9") != std::string::npos);
  CHECK(m.find("libchainer_cudnn_not_there.so") != std::string::npos);
  CHECK(m.find("cannot open shared object file") != std::string::npos);  // dlerror's words
  CHECK(loader.loaded() == nullptr);
  // Kept: the next convolution gets the same answer without a second dlopen.
  const std::string again = message_of(loader, "convolution_2d_grad_data", 0);
  CHECK(again.find("convolution_2d_grad_data on cuda:0") != std::string::npos);
  CHECK(again.find("cannot open shared object file") != std::string::npos);
  CHECK(loader.opens() == 1);
}

TEST_CASE("cudnn loader: a file that is no shared library passes on the loader's message") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("chainer_cudnn_loader_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path bad = dir / "libchainer_cudnn.so";
  std::ofstream(bad) << "not an ELF file\n";
  std::string why;
  // With no anchor (dladdr finds no library) FILE is opened as given: here a whole path.
  const CudnnPlugin* p = chainer::cuda::open_cudnn_plugin(nullptr, bad.c_str(), why);
  std::filesystem::remove_all(dir);
  CHECK(p == nullptr);
  INFO(why);
  CHECK(why.find(bad.string()) != std::string::npos);
  CHECK((why.find("invalid ELF header") != std::string::npos || why.find("file too short") != std::string::npos));
}

TEST_CASE("cudnn loader: a library without the entry point, or of another interface, is refused") {
  // libchainer.so.0 lies beside the plugins and has no chainer_cudnn_plugin.
  std::string why;
  CHECK(chainer::cuda::open_cudnn_plugin(libchainer_anchor(), "libchainer.so.0", why) == nullptr);
  CHECK(why.find("has no chainer_cudnn_plugin entry point") != std::string::npos);

  static const CudnnPlugin other{.interface = chainer::cuda::kCudnnPluginInterface + 1};
  CudnnLoader loader("libcudnn.so.9", [](std::string& why_not) -> const CudnnPlugin* {
    // As open_cudnn_plugin checks a table: the words are its.
    why_not = chainer::str("libchainer_cudnn.so is of another build (its interface is ", other.interface, ")");
    return nullptr;
  });
  CHECK(message_of(loader, "convolution_2d", 0).find("of another build") != std::string::npos);
}

TEST_CASE("cudnn loader: the first call opens once for every thread, and later ones forward to the table") {
  static std::atomic<int> forwarded{0};
  static const CudnnPlugin table{
      .interface = chainer::cuda::kCudnnPluginInterface,
      .header_version = 91900,
      .library_version = [] { return size_t(91900); },
      .convolution_2d = [](const chainer::Tensor&, const chainer::Tensor&, const chainer::Tensor&,
                           const chainer::Conv2dGeometry&, chainer::Tensor&) { ++forwarded; }};
  std::atomic<int> opening{0}, overlapped{0};
  CudnnLoader loader("libcudnn.so.9", [&](std::string&) {
    if (opening++ > 0) ++overlapped;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // others arrive meanwhile
    --opening;
    return &table;
  });
  CHECK(loader.loaded() == nullptr);  // nothing opens before a convolution asks
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] {
      const CudnnPlugin& p = loader.get("convolution_2d", 0);
      if (&p != &table) ++wrong;
      chainer::Tensor t;
      p.convolution_2d(t, t, t, chainer::Conv2dGeometry{}, t);
    });
  for (auto& t : threads) t.join();
  CHECK(loader.opens() == 1);
  CHECK(overlapped == 0);
  CHECK(wrong == 0);
  CHECK(forwarded == 8);
  CHECK(loader.loaded() == &table);
}

TEST_CASE("cudnn loader: the real plugin resolves against the libchainer_cuda.so already loaded") {
  if (!chainer::cuda::built_with_cuda()) {
    SUCCEED("this build has no CUDA plugins");
    return;
  }
  // As core/device/cuda.cpp loads the CUDA plugin: beside libchainer, RTLD_LOCAL.
  std::string why;
  void* runtime_entry =
      chainer::load_plugin_entry(libchainer_anchor(), "libchainer_cuda.so", "chainer_cuda_runtime", "the CUDA plugin", why);
  INFO(why);
  REQUIRE(runtime_entry != nullptr);
  REQUIRE(loaded_copies("/libchainer_cuda.so") == 1);
  // As runtime.cu opens the cuDNN plugin: beside the CUDA plugin.
  const CudnnPlugin* p = chainer::cuda::open_cudnn_plugin(runtime_entry, "libchainer_cudnn.so", why);
  INFO(why);
  REQUIRE(p != nullptr);
  CHECK(loaded_copies("/libchainer_cuda.so") == 1);  // its DT_NEEDED matched the loaded copy
  CHECK(loaded_copies("/libchainer_cudnn.so") == 1);
  CHECK(p->interface == chainer::cuda::kCudnnPluginInterface);
  CHECK(p->header_version >= 90000);
  CHECK(p->header_version < 100000);  // libcudnn.so.9
  REQUIRE(p->library_version != nullptr);
  CHECK(p->library_version() / 10000 == size_t(p->header_version) / 10000);  // the same major version
  CHECK(p->convolution_2d != nullptr);
  CHECK(p->convolution_2d_grad_data != nullptr);
  CHECK(p->convolution_2d_grad_filter != nullptr);
  CHECK(p->prepare_handle != nullptr);
}

TEST_CASE("cudnn loader: CHAINER_CUDNN=0 opens nothing and says so; a value that is no yes or no is named") {
  struct Restore {
    ~Restore() { unsetenv("CHAINER_CUDNN"); }
  } restore;
  setenv("CHAINER_CUDNN", "0", 1);
  CudnnLoader loader("libcudnn.so.9", [](std::string& why_not) {
    // The real plugin where this build has one: the variable, not a missing file, refuses it.
    return chainer::cuda::open_cudnn_plugin(libchainer_anchor(), "libchainer_cudnn.so", why_not);
  });
  CHECK(loader.try_get() == nullptr);
  const std::string m = message_of(loader, "convolution_2d", 0);
  INFO(m);
  CHECK(m.find("convolution_2d on cuda:0: ") != std::string::npos);
  CHECK(m.find("CHAINER_CUDNN=0 turns cuDNN off") != std::string::npos);

  setenv("CHAINER_CUDNN", "maybe", 1);
  std::string why;
  CHECK(chainer::cuda::open_cudnn_plugin(libchainer_anchor(), "libchainer_cudnn.so", why) == nullptr);
  CHECK(why.find("CHAINER_CUDNN expects a yes/no value") != std::string::npos);
  CHECK(why.find("'maybe'") != std::string::npos);
}

// The CUDA and NCCL plugins' loader (core/util/plugin.h): a plugin file beside libchainer that does
// not load keeps the loader's own reason (a library it needs is missing, say), rather than the
// "not found" of a second search by bare name; a file that is not there is looked for by the
// loader's search, and the message says both. The build folder beside libchainer holds meson's
// log folder, which is there and cannot be loaded.
TEST_CASE("plugin loader: a plugin that is there but does not load keeps its own reason") {
  std::string why;
  CHECK(chainer::load_plugin_entry(libchainer_anchor(), "meson-logs", "entry", "the test plugin", why) == nullptr);
  INFO(why);
  CHECK(why.find("the test plugin could not be loaded (") == 0);
  CHECK(why.find("meson-logs") != std::string::npos);
  CHECK(why.find("no such file there") == std::string::npos);
  why.clear();
  CHECK(chainer::load_plugin_entry(libchainer_anchor(), "libchainer_no_such_plugin.so", "entry", "the test plugin", why) ==
        nullptr);
  CHECK(why.find("no such file there, and the loader's search found none: libchainer_no_such_plugin.so") !=
        std::string::npos);
}
