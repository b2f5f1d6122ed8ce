// A benchmark ends on a user mistake (a bad option or CHAINER_* variable, a missing data set) as
// the apps do: the message on stderr and exit status 1, not std::terminate's abort.
#pragma once

#include <cstdio>
#include <exception>

namespace bench {

template <class Body>
int report_errors(Body&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}

}  // namespace bench
