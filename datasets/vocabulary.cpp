#include "datasets/vocabulary.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "core/util/error.h"

namespace chainer::datasets {

std::vector<std::string> make_vocabulary(const std::vector<std::vector<std::string>>& sentences,
                                         int64_t max_words) {
  // Counter keeps its words in the order they first appear, and most_common sorts stably by
  // count: ties stay in that order.
  std::unordered_map<std::string_view, size_t> slot;
  std::vector<std::pair<std::string_view, int64_t>> counts;
  for (const auto& sentence : sentences)
    for (const std::string& word : sentence) {
      auto [it, fresh] = slot.try_emplace(word, counts.size());
      if (fresh) counts.emplace_back(word, 0);
      ++counts[it->second].second;
    }
  std::stable_sort(counts.begin(), counts.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (max_words >= 0 && counts.size() > static_cast<size_t>(max_words)) counts.resize(static_cast<size_t>(max_words));
  std::vector<std::string> vocabulary{"<eos>", "<unk>"};
  for (const auto& [word, count] : counts) vocabulary.emplace_back(word);
  return vocabulary;
}

std::vector<std::vector<int32_t>> make_ids(const std::vector<std::string>& vocabulary,
                                           const std::vector<std::vector<std::string>>& sentences) {
  if (vocabulary.size() < 2 || vocabulary[kEosId] != "<eos>" || vocabulary[kUnkId] != "<unk>")
    throw Error(str("make_ids: the vocabulary (", vocabulary.size(),
                    " words) must start with \"<eos>\" and \"<unk>\", as make_vocabulary's does"));
  if (vocabulary.size() > static_cast<size_t>(INT32_MAX))
    throw Error(str("make_ids: a vocabulary of ", vocabulary.size(), " words has ids beyond int32"));
  // A word listed twice gets its last index, as the dict comprehension of europal.make_dataset.
  std::unordered_map<std::string_view, int32_t> ids;
  for (size_t i = 0; i < vocabulary.size(); ++i) ids[vocabulary[i]] = static_cast<int32_t>(i);
  std::vector<std::vector<int32_t>> out;
  out.reserve(sentences.size());
  for (const auto& sentence : sentences) {
    std::vector<int32_t>& row = out.emplace_back();
    row.reserve(sentence.size());
    for (const std::string& word : sentence) {
      auto it = ids.find(word);
      row.push_back(it == ids.end() ? kUnkId : it->second);
    }
  }
  return out;
}

}  // namespace chainer::datasets
