// What the tests against naive float64 references share (pooling, local response normalization,
// the activations, batch normalization): near, values within 1e-12, and error_of, the message of
// the chainer::Error a call throws. Header-only.
#pragma once
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include "core/util/error.h"

namespace chainer::testing {

// math_checks.h has a near of its own, looser: a file includes one of the two, and each near
// lives in a namespace of its own (one program holds both).
namespace reference_checks {
/// Elementwise within 1e-12, relative or absolute.
inline auto near(const std::vector<double>& want) {
  return Catch::Matchers::Approx(want).epsilon(1e-12).margin(1e-12);
}
}  // namespace reference_checks
using reference_checks::near;

/// The message of the chainer::Error F throws ("" when it throws none).
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace chainer::testing
