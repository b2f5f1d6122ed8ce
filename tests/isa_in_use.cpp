// Compiled into the kernel tests that tests/meson.build runs once per kernel family (with
// CHAINER_CPU_ISA=generic, avx2, avx512 and avx512_bf16): the kernels every other case of the binary runs
// are the named family's own, so a family that fell back to another's kernels (or to Eigen's
// products) fails here instead of passing on the other family's results. Without
// CHAINER_CPU_ISA, the family is the best this CPU supports.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/cpu/family.h"
#include "core/cpu/isa.h"
#include "core/ops/kernels.h"

using namespace chainer;

TEST_CASE("cpu isa: the kernels in use are the family CHAINER_CPU_ISA names, with its own matrix products", "[isa]") {
  const char* requested = std::getenv("CHAINER_CPU_ISA");
  const cpu::Isa want =
      requested && *requested ? cpu::choose_isa(requested, cpu::cpu_features()) : cpu::supported_isas(cpu::cpu_features()).back();
  CAPTURE(cpu::isa_description());
  REQUIRE(cpu::isa() == want);
  REQUIRE(cpu::kernel_family().isa == want);
  REQUIRE(&cpu::kernel_table() == cpu::kernel_family_for(want).kernels);
  const char* gemm = std::getenv("CHAINER_GEMM");
  const std::string backend = gemm && std::strcmp(gemm, "eigen") == 0 ? "eigen"
                              : want == cpu::Isa::Avx512Bf16          ? "packed-avx512_bf16"
                              : want == cpu::Isa::Avx512              ? "packed-avx512"
                              : want == cpu::Isa::Avx2                ? "packed-avx2"
                                                                      : "eigen";
  CHECK(cpu::gemm_backend() == backend);
}
