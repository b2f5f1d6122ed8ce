#include "core/util/error.h"

namespace chainer {

void throw_internal(const char* cond, const char* file, int line, const std::string& msg) {
  throw InternalError(str("internal error: ", cond, " failed at ", file, ":", line,
                          msg.empty() ? "" : ": ", msg, " (this is a bug in chainermn-cpp)"));
}

}  // namespace chainer
