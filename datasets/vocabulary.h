/// @file
/// Vocabularies and id sequences as ChainerMN's seq2seq example builds them (europal.py's
/// count_words and make_array, seq2seq.py's read_source): the vocabulary lists `<eos>`, `<unk>`,
/// then the most frequent words; a word's id is its index there, and a word outside it reads as
/// `<unk>`. The decoder starts from `<eos>` too (seq2seq.py's ys_in), so there
/// is no separate begin-of-sentence id.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace chainer::datasets {

/// The id of `"<eos>"`: ends every target sequence, and is the decoder's first input.
inline constexpr int32_t kEosId = 0;
/// The id of `"<unk>"`: every word outside the vocabulary.
inline constexpr int32_t kUnkId = 1;

/// The vocabulary of SENTENCES (token lists): `"<eos>"`, `"<unk>"`, then at most MAX_WORDS words
/// (all of them when MAX_WORDS is negative), most frequent first and words of equal count in the
/// order they first appear (Python's Counter.most_common(40000); seq2seq.py uses 40000).
std::vector<std::string> make_vocabulary(const std::vector<std::vector<std::string>>& sentences,
                                         int64_t max_words = 40000);

/// Each of SENTENCES as the ids of its words in VOCABULARY (a list from make_vocabulary), kUnkId
/// for the words it lacks (europal.make_array). No `<eos>` is appended: the model adds it.
std::vector<std::vector<int32_t>> make_ids(const std::vector<std::string>& vocabulary,
                                           const std::vector<std::vector<std::string>>& sentences);

}  // namespace chainer::datasets
