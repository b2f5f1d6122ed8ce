/// @file
/// Error rates of sequence predictions, for the grapheme-to-phoneme task (datasets/cmudict.h):
/// the phoneme error rate, the Levenshtein distances (substitutions, insertions and deletions,
/// each 1) summed over the corpus and divided by the summed reference lengths, and the word error
/// rate, the share of sequences predicted with any error. Corpus-level, as BLEU: kept as sums in
/// ErrorRateStatistics, so parts scored apart (one per process) add up to the corpus's rates.
#pragma once
#include <cstdint>
#include <vector>

namespace chainer::training::metrics {

/// The Levenshtein distance between A and B: the fewest substitutions, insertions and deletions
/// that turn one into the other.
int64_t edit_distance(const std::vector<int32_t>& a, const std::vector<int32_t>& b);

/// The corpus sums error rates are computed from.
struct ErrorRateStatistics {
  /// Summed edit distances between the hypotheses and their references.
  int64_t edits = 0;
  /// Summed reference lengths.
  int64_t reference_length = 0;
  /// Sequences added.
  int64_t sequences = 0;
  /// Sequences whose hypothesis differs from the reference.
  int64_t wrong_sequences = 0;

  /// Adds HYPOTHESIS scored against its REFERENCE.
  void add(const std::vector<int32_t>& reference, const std::vector<int32_t>& hypothesis);
  /// Adds the sums of OTHER (another part of the corpus).
  void merge(const ErrorRateStatistics& other);
  /// edits / reference_length (the phoneme error rate of G2P); throws chainer::Error when the
  /// references hold no token.
  double token_error_rate() const;
  /// wrong_sequences / sequences (the word error rate of G2P); throws chainer::Error when no
  /// sequence was added.
  double sequence_error_rate() const;
};

/// The sums of every hypothesis against its reference (REFERENCES[i] for HYPOTHESES[i]).
ErrorRateStatistics corpus_error_rate(const std::vector<std::vector<int32_t>>& references,
                                      const std::vector<std::vector<int32_t>>& hypotheses);

}  // namespace chainer::training::metrics
