/// @file
/// Word tokenization as ChainerMN's seq2seq example (examples/chainermn/seq2seq/europal.py,
/// split_sentence), so that vocabularies and BLEU scores compare with the Python example's:
///  1. lowercase (Python's str.lower; here for the capitals of Basic Latin, Latin-1, Latin
///     Extended-A, Greek and Cyrillic, which holds every capital of the corpora read with it;
///     other characters stay as they are, and a Greek final capital sigma lowers to σ, not ς);
///  2. U+2019 (right single quotation mark) becomes an apostrophe;
///  3. every digit becomes 0 (Python's `\d` is any Unicode decimal digit; here 0-9);
///  4. split at whitespace (Python's str.split(): the Unicode whitespace characters);
///  5. each of . , ! ? " ' : ; ) ( is a token of its own, and splits the word it is in.
/// Nothing else is split off: Spanish ¿ and ¡ stay on their word ("¿quién"), as in the example.
/// Bytes that are not UTF-8 are dropped (the example opens its files with errors='ignore').
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace chainer::datasets {

/// The tokens of the sentence TEXT (UTF-8), as europal.split_sentence.
std::vector<std::string> split_sentence(std::string_view text);

}  // namespace chainer::datasets
