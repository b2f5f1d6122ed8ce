#include "datasets/sequence_pairs.h"

#include "core/util/error.h"

namespace chainer::datasets {

SequencePairs filter_by_length(const SequencePairs& pairs, int64_t limit) {
  if (limit < 0) throw Error(str("filter_by_length: limit ", limit, " is negative; expected 0 (none) or more"));
  if (pairs.targets.size() != pairs.size() || pairs.keys.size() != pairs.size())
    throw Error(str("filter_by_length: the pairs have ", pairs.sources.size(), " sources, ", pairs.targets.size(),
                    " targets and ", pairs.keys.size(), " keys; expected as many of each"));
  const auto fits = [limit](size_t n) { return n > 0 && (limit == 0 || n < static_cast<size_t>(limit)); };
  SequencePairs out;
  for (size_t i = 0; i < pairs.size(); ++i) {
    if (!fits(pairs.sources[i].size()) || !fits(pairs.targets[i].size())) continue;
    out.sources.push_back(pairs.sources[i]);
    out.targets.push_back(pairs.targets[i]);
    out.keys.push_back(pairs.keys[i]);
  }
  return out;
}

}  // namespace chainer::datasets
