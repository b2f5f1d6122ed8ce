// main() of the single-process test binaries. A binary that tests/meson.build runs for one
// kernel family (CHAINER_CPU_ISA) on a CPU without its instruction set is skipped (exit 77,
// meson's SKIP) instead of failing at its first kernel; tests/core/cpu/test_cpu_isa.cpp checks that this
// CPU's sets are read as Linux reports them.
#include <cstdlib>
#include <iostream>
#include <string>

#include "catch_session.h"
#include "core/cpu/isa.h"

int main(int argc, char** argv) {
  using namespace chainer::cpu;
  if (const char* requested = std::getenv("CHAINER_CPU_ISA"); requested && *requested) {
    const CpuFeatures features = cpu_features();
    bool known = false, here = false;
    for (Isa isa : {Isa::Generic, Isa::Avx2, Isa::Avx512, Isa::Avx512Bf16})
      if (std::string(requested) == isa_name(isa)) {
        known = true;
        for (Isa s : supported_isas(features)) here = here || s == isa;
      }
    if (known && !here) {
      std::cout << "skipped: CHAINER_CPU_ISA=" << requested << ", which this CPU (" << features.model
                << ") does not support\n";
      return 77;
    }
  }
  return run_catch_session(argc, argv);
}
