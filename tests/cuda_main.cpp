// main() of the GPU test binaries: without a usable CUDA device (CI, a build without CUDA) the
// binary prints why and exits 77, which meson counts as skipped; otherwise Catch2 runs the cases.
#include <cstdio>

#include "catch_session.h"
#include "core/device/cuda.h"

int main(int argc, char** argv) {
  if (!chainer::cuda::is_available()) {
    std::printf("skipped: no CUDA device (%s)\n", chainer::cuda::unavailable_reason().c_str());
    return 77;
  }
  return run_catch_session(argc, argv);
}
