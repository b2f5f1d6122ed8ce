#include "training/metrics/error_rate.h"

#include <algorithm>

#include "core/util/error.h"

namespace chainer::training::metrics {

int64_t edit_distance(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  // One row of the dynamic programme: row[j] is the distance between a's prefix and b[0, j).
  std::vector<int64_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = static_cast<int64_t>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    int64_t diagonal = row[0];
    row[0] = static_cast<int64_t>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      const int64_t up = row[j];
      row[j] = std::min({up + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

void ErrorRateStatistics::add(const std::vector<int32_t>& reference, const std::vector<int32_t>& hypothesis) {
  const int64_t distance = edit_distance(reference, hypothesis);
  edits += distance;
  reference_length += static_cast<int64_t>(reference.size());
  ++sequences;
  wrong_sequences += distance > 0;
}

void ErrorRateStatistics::merge(const ErrorRateStatistics& other) {
  edits += other.edits;
  reference_length += other.reference_length;
  sequences += other.sequences;
  wrong_sequences += other.wrong_sequences;
}

double ErrorRateStatistics::token_error_rate() const {
  if (reference_length == 0)
    throw Error(str("ErrorRateStatistics::token_error_rate: the ", sequences,
                    " references hold no token; expected at least one"));
  return static_cast<double>(edits) / static_cast<double>(reference_length);
}

double ErrorRateStatistics::sequence_error_rate() const {
  if (sequences == 0) throw Error("ErrorRateStatistics::sequence_error_rate: no sequence was added");
  return static_cast<double>(wrong_sequences) / static_cast<double>(sequences);
}

ErrorRateStatistics corpus_error_rate(const std::vector<std::vector<int32_t>>& references,
                                      const std::vector<std::vector<int32_t>>& hypotheses) {
  if (references.size() != hypotheses.size())
    throw Error(str("corpus_error_rate: ", hypotheses.size(), " hypotheses and ", references.size(),
                    " references; expected one reference per hypothesis"));
  ErrorRateStatistics statistics;
  for (size_t i = 0; i < references.size(); ++i) statistics.add(references[i], hypotheses[i]);
  return statistics;
}

}  // namespace chainer::training::metrics
