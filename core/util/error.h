/// @file
/// Errors: `chainer::Error` is a user mistake (bad shape, bad flag, missing file) and carries a
/// message meant for people; `CHAINER_ASSERT` guards internal invariants and reports file:line.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace chainer {

/// A user mistake (bad shape, bad flag, missing file), with a message meant for people.
class Error : public std::runtime_error {
 public:
  /// An error with message WHAT.
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

/// A broken internal invariant: a bug in chainermn-cpp, not in the user's program.
class InternalError : public std::logic_error {
 public:
  /// An error with message WHAT.
  explicit InternalError(const std::string& what) : std::logic_error(what) {}
};

/// Concatenates anything streamable: str("x has shape ", s, " but ...").
template <class... Args>
std::string str(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

/// Throws InternalError naming COND, FILE:LINE and MSG; what CHAINER_ASSERT calls.
[[noreturn]] void throw_internal(const char* cond, const char* file, int line, const std::string& msg);

}  // namespace chainer

/// Throws InternalError (a bug, reported with file:line) when COND is false; the other arguments
/// are streamed into the message as by chainer::str.
#define CHAINER_ASSERT(cond, ...)                                                               \
  do {                                                                                          \
    if (!(cond)) ::chainer::throw_internal(#cond, __FILE__, __LINE__, ::chainer::str(__VA_ARGS__)); \
  } while (0)
