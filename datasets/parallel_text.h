/// @file
/// The English-Spanish translation task of the seq2seq examples: the Bible's verses in the King
/// James Version and the Reina-Valera 1909, as apps/sword_parallel_text writes them from Debian's
/// SWORD modules (docs/seq2seq.md), one verse per line: "OSIS-REF<TAB>English<TAB>Spanish",
/// e.g. "Gen.1.1<TAB>In the beginning ...<TAB>EN el principio ...". (The example trains on WMT's
/// giga-fren, a download of gigabytes; these texts are in Debian.)
/// Each side is tokenized by split_sentence, as the example's europal.py. Whole books are held
/// out for validation and test, so that no verse of a held-out book is seen in training; the
/// vocabularies are counted on the training books alone (the example counts its training file).
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "datasets/sequence_pairs.h"

namespace chainer::datasets {

/// How read_parallel_text splits and cuts the text.
struct ParallelTextOptions {
  /// Words kept per language besides `<eos>` and `<unk>`, most frequent first (seq2seq.py: 40000,
  /// more than the Bible has: about 12400 English and 28200 Spanish words); negative: all.
  int64_t max_vocab = 40000;
  /// Training pairs are kept when both sides have 1 to this - 1 tokens (seq2seq.py: 50); 0: any
  /// non-empty length. Validation and test pairs are kept whenever both sides are non-empty.
  int64_t train_length_limit = 50;
  /// The books (OSIS names, as the references: "Ruth", "1John") whose verses are validation data.
  std::vector<std::string> validation_books = {"Ruth", "Jonah", "Lam", "Phil", "Jas"};
  /// The books whose verses are test data.
  std::vector<std::string> test_books = {"Eccl", "Mark", "1John"};
  /// Spanish to English instead of English to Spanish.
  bool reverse = false;
};

/// The parallel text FILE (apps/sword_parallel_text's output) as English-to-Spanish pairs of
/// word ids, split by book. Throws chainer::Error naming the file and line when a line is not
/// "BOOK.CHAPTER.VERSE<TAB>text<TAB>text", and naming the book when a held-out book is in no
/// line of FILE or in both lists.
SequencePairData read_parallel_text(const std::filesystem::path& file, const ParallelTextOptions& options = {});

}  // namespace chainer::datasets
