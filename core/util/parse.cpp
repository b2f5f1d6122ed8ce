#include "core/util/parse.h"

#include <charconv>

#include "core/util/error.h"

namespace chainer {

int64_t parse_integer(const std::string& text, const std::string& name, int64_t min, int64_t max) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [at, error] = std::from_chars(text.data() + (text.size() > 1 && text[0] == '+'), end, value);
  if (error == std::errc::result_out_of_range)
    throw Error(str(name, " must be ", text[0] == '-' ? str("at least ", min) : str("at most ", max), ", got ", text));
  if (text.empty() || error != std::errc() || at != end) throw Error(str(name, " expects an integer, got '", text, "'"));
  if (value < min) throw Error(str(name, " must be at least ", min, ", got ", value));
  if (value > max) throw Error(str(name, " must be at most ", max, ", got ", value));
  return value;
}

}  // namespace chainer
