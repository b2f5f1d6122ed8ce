/// @file
/// Sequence-to-sequence data as plain vectors: what the seq2seq examples' readers return
/// (read_parallel_text: English words to Spanish words; read_cmudict: letters to phonemes), so
/// that one model and one set of program flags serve both. Each field is a list of int32 id
/// sequences, ready to become a field of a dataset of variable-length examples.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace chainer::datasets {

/// Pairs of id sequences: example i is (sources[i], targets[i]), read from keys[i].
struct SequencePairs {
  /// The input sequences (ids in SequencePairData::source_vocab), without `<eos>`.
  std::vector<std::vector<int32_t>> sources;
  /// The output sequences (ids in SequencePairData::target_vocab), without `<eos>`.
  std::vector<std::vector<int32_t>> targets;
  /// Where each pair comes from, for reports: a verse ("Gen.1.1"), a word ("aardvark").
  std::vector<std::string> keys;

  /// The number of pairs.
  size_t size() const { return sources.size(); }
};

/// A task's three splits and its two vocabularies (index = id; 0 is `"<eos>"`, 1 is `"<unk>"`).
struct SequencePairData {
  /// The source tokens by id.
  std::vector<std::string> source_vocab;
  /// The target tokens by id.
  std::vector<std::string> target_vocab;
  /// What the model trains on.
  SequencePairs train;
  /// What it is evaluated on while it trains.
  SequencePairs validation;
  /// What is held back for the final score.
  SequencePairs test;
};

/// The pairs of PAIRS whose two sides both have 1 to LIMIT - 1 tokens (seq2seq.py keeps
/// training pairs with 0 < len < 50); LIMIT 0 keeps every pair with two non-empty sides (the
/// example's filter for its test pairs). A negative LIMIT throws chainer::Error.
SequencePairs filter_by_length(const SequencePairs& pairs, int64_t limit);

}  // namespace chainer::datasets
