/// @file
/// A small, fast sequence-to-sequence task beside translation: English spelling to pronunciation
/// (grapheme to phoneme), from the CMU Pronouncing Dictionary as Debian's festlex-cmu installs it
/// for the Festival speech synthesizer: /usr/share/festival/dicts/cmu/cmudict-0.4.out, a header
/// line "MNCL" and one entry per line, syllabified,
///     ("aardvark" nil (((aa r d) 1) ((v aa r k) 1)))
/// (word, part of speech or nil, then each syllable's phonemes and its stress, 0 or 1). 105901
/// entries, 105664 words; 235 words have one entry per part of speech ("abstract" n and v).
/// The pairs are (the word's letters, its phonemes): the syllables are flattened into one phoneme
/// sequence; words are lowercased ("AWOL" is "awol") and each keeps its first entry, so a word has
/// one pronunciation and one split. Stress is dropped by default (the 39 phonemes alone); with
/// CmudictOptions::stress each syllable's first vowel carries the syllable's 0 or 1 ("aa1"), as
/// CMUdict's own files mark vowels (Festival's lexicon has no secondary stress, 2).
/// Words are split by a hash of their spelling (FNV-1a, 64-bit), so a word's split does not
/// depend on the file's order or on which other words it holds.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "datasets/sequence_pairs.h"

namespace chainer::datasets {

/// Where Debian's festlex-cmu installs the lexicon: /usr/share/festival/dicts/cmu/cmudict-0.4.out.
std::filesystem::path cmudict_package_path();

/// One word of the lexicon and its pronunciation.
struct CmudictEntry {
  /// The word, lowercased ("aardvark").
  std::string word;
  /// Its phonemes, syllables flattened ("aa", "r", "d", "v", "aa", "r", "k"; "aa1" with stress).
  std::vector<std::string> phonemes;
};

/// How read_cmudict reads and splits the lexicon.
struct CmudictOptions {
  /// Mark each syllable's first vowel with the syllable's stress, "aa1" (115 syllables have no
  /// vowel, as the "b l" of "blouin", and mark nothing); by default phonemes carry none.
  bool stress = false;
  /// Percent of the words that are validation data (by the hash of the word).
  int validation_percent = 5;
  /// Percent of the words that are test data.
  int test_percent = 5;
};

/// The entries of the lexicon FILE in file order, one per word (its first; see the file comment).
/// Throws chainer::Error naming the file and line of an entry it cannot read.
std::vector<CmudictEntry> read_cmudict_entries(const std::filesystem::path& file, bool stress = false);

/// The lexicon FILE as letters-to-phonemes pairs: source_vocab the letters, target_vocab the
/// phonemes (each after `<eos>` and `<unk>`, most frequent first, counted on the training words),
/// keys the words. Every word is kept (the longest has 22 letters).
SequencePairData read_cmudict(const std::filesystem::path& file, const CmudictOptions& options = {});

/// read_cmudict of cmudict_package_path(); throws chainer::Error naming the path and the package
/// festlex-cmu when the file is not there.
SequencePairData read_cmudict(const CmudictOptions& options = {});

}  // namespace chainer::datasets
