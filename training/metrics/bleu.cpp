#include "training/metrics/bleu.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/util/error.h"

namespace chainer::training::metrics {

namespace {

// The N-gram of SEQUENCE at I as a hashable key (its ids' bytes).
std::string_view ngram_key(const std::vector<int32_t>& sequence, size_t i, size_t n) {
  return {reinterpret_cast<const char*>(sequence.data() + i), n * sizeof(int32_t)};
}

// Python's math.fsum (Shewchuk's exact partial sums, then the correctly rounded total), which
// NLTK sums the weighted log precisions with.
double fsum(const std::vector<double>& values) {
  std::vector<double> partials;
  for (double x : values) {
    size_t i = 0;
    for (double y : partials) {
      if (std::fabs(x) < std::fabs(y)) std::swap(x, y);
      const double hi = x + y;
      const double lo = y - (hi - x);
      if (lo != 0.0) partials[i++] = lo;
      x = hi;
    }
    partials.resize(i);
    partials.push_back(x);
  }
  size_t n = partials.size();
  double hi = 0.0, lo = 0.0;
  if (n > 0) {
    hi = partials[--n];
    while (n > 0) {
      const double x = hi, y = partials[--n];
      hi = x + y;
      lo = y - (hi - x);
      if (lo != 0.0) break;
    }
    // Round half-even across the partials the loop stopped at, as CPython does.
    if (n > 0 && ((lo < 0.0 && partials[n - 1] < 0.0) || (lo > 0.0 && partials[n - 1] > 0.0))) {
      const double y = lo * 2.0, x = hi + y;
      if (y == x - hi) hi = x;
    }
  }
  return hi;
}

}  // namespace

BleuStatistics::BleuStatistics(int max_order) {
  if (max_order < 1) throw Error(str("BleuStatistics: max_order ", max_order, " is less than 1"));
  matches.assign(static_cast<size_t>(max_order), 0);
  totals.assign(static_cast<size_t>(max_order), 0);
}

void BleuStatistics::add(const std::vector<std::vector<int32_t>>& references, const std::vector<int32_t>& hypothesis) {
  if (references.empty()) throw Error("BleuStatistics::add: a hypothesis has no reference; expected one or more");
  std::unordered_map<std::string_view, std::pair<int64_t, int64_t>> counts;  // n-gram: in hypothesis, max in a reference
  std::unordered_map<std::string_view, int64_t> in_reference;
  for (size_t n = 1; n <= matches.size(); ++n) {
    counts.clear();
    const size_t hypothesis_ngrams = hypothesis.size() >= n ? hypothesis.size() - n + 1 : 0;
    for (size_t i = 0; i < hypothesis_ngrams; ++i) ++counts[ngram_key(hypothesis, i, n)].first;
    for (const auto& reference : references) {
      in_reference.clear();
      for (size_t i = 0; i + n <= reference.size(); ++i) {
        const std::string_view key = ngram_key(reference, i, n);
        if (counts.count(key)) ++in_reference[key];
      }
      for (const auto& [key, count] : in_reference) counts[key].second = std::max(counts[key].second, count);
    }
    int64_t clipped = 0;
    for (const auto& [key, count] : counts) clipped += std::min(count.first, count.second);
    matches[n - 1] += clipped;
    totals[n - 1] += std::max<int64_t>(1, static_cast<int64_t>(hypothesis_ngrams));
  }
  // The reference closest in length; the shorter of two as close.
  const int64_t length = static_cast<int64_t>(hypothesis.size());
  int64_t closest = static_cast<int64_t>(references[0].size());
  for (const auto& reference : references) {
    const int64_t r = static_cast<int64_t>(reference.size());
    if (std::llabs(r - length) < std::llabs(closest - length) ||
        (std::llabs(r - length) == std::llabs(closest - length) && r < closest))
      closest = r;
  }
  hypothesis_length += length;
  reference_length += closest;
}

void BleuStatistics::merge(const BleuStatistics& other) {
  if (other.matches.size() != matches.size())
    throw Error(str("BleuStatistics::merge: statistics of ", other.matches.size(), " n-gram orders added to ",
                    matches.size(), "; expected the same orders"));
  for (size_t n = 0; n < matches.size(); ++n) {
    matches[n] += other.matches[n];
    totals[n] += other.totals[n];
  }
  hypothesis_length += other.hypothesis_length;
  reference_length += other.reference_length;
}

double BleuStatistics::score(const BleuOptions& options) const {
  if (options.weights.empty() || options.weights.size() > matches.size())
    throw Error(str("BleuStatistics::score: ", options.weights.size(), " weights for statistics of ", matches.size(),
                    " n-gram orders; expected 1 to ", matches.size()));
  if (totals[0] == 0)  // NLTK's Fraction(0, 0) raises ZeroDivisionError
    throw Error("BleuStatistics::score: no hypothesis was added; BLEU of an empty corpus is undefined");
  if (matches[0] == 0) return 0.0;
  // NLTK's brevity_penalty on the corpus sums (Python's int / int is the correctly rounded
  // quotient, as double / double of integers below 2^53).
  double penalty = 1.0;
  if (hypothesis_length <= reference_length)
    penalty = hypothesis_length == 0
                  ? 0.0
                  : std::exp(1.0 - static_cast<double>(reference_length) / static_cast<double>(hypothesis_length));
  std::vector<double> terms;
  for (size_t n = 0; n < options.weights.size(); ++n) {
    double precision = static_cast<double>(matches[n]) / static_cast<double>(totals[n]);
    if (matches[n] == 0)
      precision = options.smoothing == BleuSmoothing::method1 ? (0.0 + options.epsilon) / static_cast<double>(totals[n])
                                                               : DBL_MIN;  // method0: sys.float_info.min
    if (precision > 0.0) terms.push_back(options.weights[n] * std::log(precision));
  }
  return penalty * std::exp(fsum(terms));
}

double corpus_bleu(const std::vector<std::vector<std::vector<int32_t>>>& list_of_references,
                   const std::vector<std::vector<int32_t>>& hypotheses, const BleuOptions& options) {
  if (list_of_references.size() != hypotheses.size())
    throw Error(str("corpus_bleu: ", hypotheses.size(), " hypotheses and ", list_of_references.size(),
                    " lists of references; expected one list per hypothesis"));
  BleuStatistics statistics(std::max<int>(1, static_cast<int>(options.weights.size())));
  for (size_t i = 0; i < hypotheses.size(); ++i) statistics.add(list_of_references[i], hypotheses[i]);
  return statistics.score(options);
}

}  // namespace chainer::training::metrics
