#include "datasets/split_sentence.h"

#include <cstdint>

namespace chainer::datasets {

namespace {

// The next code point of TEXT at I (advancing I), or -1 for a byte that starts no valid UTF-8
// sequence (then I moves past that byte alone).
int32_t next_code_point(std::string_view text, size_t& i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b = byte(i);
  int length = 0;
  int32_t cp = 0, min = 0;
  if (b < 0x80) {
    ++i;
    return b;
  } else if ((b & 0xE0) == 0xC0) {
    length = 2, cp = b & 0x1F, min = 0x80;
  } else if ((b & 0xF0) == 0xE0) {
    length = 3, cp = b & 0x0F, min = 0x800;
  } else if ((b & 0xF8) == 0xF0) {
    length = 4, cp = b & 0x07, min = 0x10000;
  } else {
    ++i;
    return -1;
  }
  if (i + length > text.size()) {
    ++i;
    return -1;
  }
  for (int k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) {
      ++i;
      return -1;
    }
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {  // overlong, out of range, surrogate
    ++i;
    return -1;
  }
  i += length;
  return cp;
}

void append_utf8(std::string& out, int32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Python's str.lower for the capitals of Latin (Basic, Latin-1, Extended-A), Greek and Cyrillic.
// The full Unicode table would need ICU, which the library does not link for one step of one
// data set; these blocks hold every capital of the English and Spanish texts read with it.
void append_lower(std::string& out, int32_t cp) {
  if ((cp >= 'A' && cp <= 'Z') || (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7)) {
    cp += 0x20;
  } else if (cp == 0x130) {  // İ lowers to i and a combining dot above, as in Python
    out += 'i';
    cp = 0x307;
  } else if (cp >= 0x100 && cp <= 0x17F) {
    // Pairs capital/small: even/odd up to U+0137 and from U+014A, odd/even in U+0139-U+0148 and
    // U+0179-U+017E; U+0138 and U+0149 have no capital, U+0178 is Ÿ, U+017F is ſ.
    if (cp == 0x178) cp = 0xFF;
    else if ((cp <= 0x137 || (cp >= 0x14A && cp <= 0x177)) && cp % 2 == 0) cp += 1;
    else if (((cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E)) && cp % 2 == 1) cp += 1;
  } else if (cp >= 0x391 && cp <= 0x3AB && cp != 0x3A2) {
    cp += 0x20;
  } else if (cp == 0x386) {
    cp = 0x3AC;
  } else if (cp >= 0x388 && cp <= 0x38A) {
    cp += 0x25;
  } else if (cp == 0x38C) {
    cp = 0x3CC;
  } else if (cp == 0x38E || cp == 0x38F) {
    cp += 0x3F;
  } else if (cp >= 0x400 && cp <= 0x40F) {
    cp += 0x50;
  } else if (cp >= 0x410 && cp <= 0x42F) {
    cp += 0x20;
  }
  append_utf8(out, cp);
}

// Python's str.isspace, which str.split() splits at.
bool is_space(int32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

// europal.py's split_pattern, r'([.,!?"\':;)(])'.
bool is_split_mark(int32_t cp) {
  switch (cp) {
    case '.': case ',': case '!': case '?': case '"': case '\'': case ':': case ';': case ')': case '(':
      return true;
    default:
      return false;
  }
}

}  // namespace

std::vector<std::string> split_sentence(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  auto flush = [&] {
    if (!word.empty()) words.push_back(std::move(word));
    word.clear();
  };
  for (size_t i = 0; i < text.size();) {
    int32_t cp = next_code_point(text, i);
    if (cp < 0) continue;
    if (cp == 0x2019) cp = '\'';
    if (cp >= '0' && cp <= '9') cp = '0';
    if (is_space(cp)) {
      flush();
    } else if (is_split_mark(cp)) {
      flush();
      words.emplace_back(1, static_cast<char>(cp));
    } else {
      append_lower(word, cp);
    }
  }
  flush();
  return words;
}

}  // namespace chainer::datasets
