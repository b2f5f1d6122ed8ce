#include "training/extensions/terminal.h"

#include <unistd.h>

#include <iostream>

namespace chainer::training::extensions {

bool is_standard_stream(const std::ostream& out) { return &out == &std::cout || &out == &std::cerr || &out == &std::clog; }

bool is_terminal(const std::ostream& out) {
  if (&out == &std::cout) return ::isatty(STDOUT_FILENO) == 1;
  if (&out == &std::cerr || &out == &std::clog) return ::isatty(STDERR_FILENO) == 1;
  return false;
}

}  // namespace chainer::training::extensions
