/// @file
/// Corpus BLEU on token-id sequences, computed exactly as NLTK's
/// nltk.translate.bleu_score.corpus_bleu(list_of_references, hypotheses, weights,
/// smoothing_function) (NLTK 3.8), which ChainerMN's seq2seq example reports (CalculateBleu,
/// BleuEvaluator: 4-gram weights 0.25 and SmoothingFunction().method1). Per hypothesis and
/// n-gram order, the clipped n-gram matches against the references and the hypothesis's n-gram
/// count (at least 1, so an empty or short hypothesis still counts 1) are summed over the corpus;
/// so are the hypothesis lengths and the closest reference lengths (the shorter on a tie) for
/// the brevity penalty. BLEU is 0 when no unigram matches; method1 replaces a zero count by
/// epsilon (0.1). The sums are kept in BleuStatistics, so parts of a corpus scored apart (one
/// per process) add up to the corpus's exact score. NLTK's auto_reweigh is not offered.
#pragma once
#include <cstdint>
#include <vector>

namespace chainer::training::metrics {

/// What replaces a precision whose n-gram matches are 0 (NLTK's SmoothingFunction).
enum class BleuSmoothing {
  none,     ///< method0: the smallest positive double (the score is then about 0)
  method1,  ///< method1: epsilon / the n-gram count (the example's choice)
};

/// How BLEU is scored (defaults: the seq2seq example's).
struct BleuOptions {
  /// The weight of each n-gram order's log precision, orders 1, 2, ... (NLTK: 0.25 each, 4 orders).
  std::vector<double> weights{0.25, 0.25, 0.25, 0.25};
  /// The smoothing of zero precisions.
  BleuSmoothing smoothing = BleuSmoothing::method1;
  /// method1's epsilon (NLTK's SmoothingFunction(epsilon=0.1)).
  double epsilon = 0.1;
};

/// The corpus sums BLEU is computed from.
struct BleuStatistics {
  /// Clipped n-gram matches per order (index 0: unigrams).
  std::vector<int64_t> matches;
  /// N-gram counts of the hypotheses per order, each hypothesis counting at least 1.
  std::vector<int64_t> totals;
  /// The summed hypothesis lengths.
  int64_t hypothesis_length = 0;
  /// The summed lengths of the references closest in length to their hypotheses.
  int64_t reference_length = 0;

  /// Empty sums for n-gram orders 1 to MAX_ORDER.
  explicit BleuStatistics(int max_order = 4);
  /// Adds HYPOTHESIS scored against its REFERENCES (at least one).
  void add(const std::vector<std::vector<int32_t>>& references, const std::vector<int32_t>& hypothesis);
  /// Adds the sums of OTHER (another part of the corpus; the same orders).
  void merge(const BleuStatistics& other);
  /// BLEU of the sums: 0 without unigram matches, else brevity penalty x exp(sum of weight x log
  /// precision). OPTIONS must have as many weights as orders or fewer; throws chainer::Error when
  /// no hypothesis was added (NLTK raises ZeroDivisionError).
  double score(const BleuOptions& options = {}) const;
};

/// NLTK's corpus_bleu(LIST_OF_REFERENCES, HYPOTHESES, ...): hypothesis i scored against the
/// references LIST_OF_REFERENCES[i] (each a list of one or more token sequences).
double corpus_bleu(const std::vector<std::vector<std::vector<int32_t>>>& list_of_references,
                   const std::vector<std::vector<int32_t>>& hypotheses, const BleuOptions& options = {});

}  // namespace chainer::training::metrics
