/// @file
/// Numbers given by people (command-line flags, environment variables), read strictly: the whole
/// text must be the number, and a bad one is a chainer::Error naming where it came from, what
/// was expected and what was given, instead of atoi's silent 0.
#pragma once
#include <cstdint>
#include <string>

namespace chainer {

/// TEXT as an integer in [MIN, MAX]. Throws chainer::Error "NAME expects an integer, got 'TEXT'",
/// "NAME must be at least MIN, got V" or "NAME must be at most MAX, got TEXT"; NAME says where
/// the text came from (`--threads`, `CHAINER_NUM_THREADS`).
int64_t parse_integer(const std::string& text, const std::string& name, int64_t min = INT64_MIN,
                      int64_t max = INT64_MAX);

}  // namespace chainer
