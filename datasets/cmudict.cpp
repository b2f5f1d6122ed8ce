#include "datasets/cmudict.h"

#include <fstream>
#include <string_view>
#include <unordered_set>

#include "core/util/error.h"
#include "datasets/vocabulary.h"

namespace chainer::datasets {

namespace fs = std::filesystem;

namespace {

// The vowels of Festival's CMU phone set (radio phones, lowercase), which carry a syllable's stress.
bool is_vowel(std::string_view phone) {
  static const std::unordered_set<std::string_view> vowels{"aa", "ae", "ah", "ao", "aw", "ax", "ay", "eh",
                                                           "er", "ey", "ih", "iy", "ow", "oy", "uh", "uw"};
  return vowels.count(phone) > 0;
}

// Reads one entry, ("word" pos (((p h) 1) ((o n) 0))), from LINE; false when it is not one.
bool parse_entry(std::string_view line, bool stress, CmudictEntry& entry) {
  if (!line.starts_with("(\"")) return false;
  const size_t quote = line.find('"', 2);
  if (quote == std::string_view::npos || quote == 2) return false;
  entry.word.clear();
  for (char c : line.substr(2, quote - 2)) entry.word += (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
  size_t i = quote + 1;
  // " pos (": the part of speech is a bare token; skip it.
  if (i >= line.size() || line[i] != ' ') return false;
  const size_t open = line.find(" (", i + 1);
  if (open == std::string_view::npos || line.find(' ', i + 1) != open) return false;
  i = open + 2;
  entry.phonemes.clear();
  // Syllables: "((p h) 1)", separated by single spaces, then "))".
  for (bool first = true;; first = false) {
    if (line.substr(i) == "))") return !first;
    if (!first) {
      if (i >= line.size() || line[i] != ' ') return false;
      ++i;
    }
    if (!line.substr(i).starts_with("((")) return false;
    const size_t close = line.find(')', i + 2);
    if (close == std::string_view::npos || close + 3 >= line.size() || line[close + 1] != ' ' ||
        (line[close + 2] != '0' && line[close + 2] != '1') || line[close + 3] != ')')
      return false;
    const char syllable_stress = line[close + 2];
    std::string_view phones = line.substr(i + 2, close - i - 2);
    bool marked = !stress;
    const size_t before = entry.phonemes.size();
    while (!phones.empty()) {
      const size_t space = phones.find(' ');
      const std::string_view phone = phones.substr(0, space);
      if (phone.empty()) return false;
      std::string& out = entry.phonemes.emplace_back(phone);
      if (!marked && is_vowel(phone)) {
        out += syllable_stress;
        marked = true;
      }
      phones = space == std::string_view::npos ? std::string_view() : phones.substr(space + 1);
    }
    if (entry.phonemes.size() == before) return false;
    i = close + 4;
  }
}

// FNV-1a, 64-bit: a fixed hash, so a word's split is the same on every machine and build.
uint64_t fnv1a(std::string_view text) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

// The letters of WORD, one token per UTF-8 character (the lexicon's words are ASCII).
std::vector<std::string> letters(std::string_view word) {
  std::vector<std::string> out;
  for (size_t i = 0; i < word.size();) {
    size_t n = 1;
    while (i + n < word.size() && (static_cast<unsigned char>(word[i + n]) & 0xC0) == 0x80) ++n;
    out.emplace_back(word.substr(i, n));
    i += n;
  }
  return out;
}

}  // namespace

fs::path cmudict_package_path() { return "/usr/share/festival/dicts/cmu/cmudict-0.4.out"; }

std::vector<CmudictEntry> read_cmudict_entries(const fs::path& file, bool stress) {
  std::ifstream in(file, std::ios::binary);
  if (!in)
    throw Error(str("read_cmudict: cannot read ", file, "; Debian's package festlex-cmu installs the lexicon as ",
                    cmudict_package_path()));
  std::vector<CmudictEntry> entries;
  std::unordered_set<std::string> seen;
  std::string line;
  CmudictEntry entry;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (number == 1 && line == "MNCL")) continue;  // Festival's header: a compiled lexicon
    if (!parse_entry(line, stress, entry))
      throw Error(str("read_cmudict: ", file, ":", number, ": '", std::string_view(line).substr(0, 80),
                      "' is no Festival lexicon entry (\"word\" pos (((phones) stress) ...))"));
    if (seen.insert(entry.word).second) entries.push_back(entry);
  }
  if (in.bad()) throw Error(str("read_cmudict: reading ", file, " failed"));
  return entries;
}

SequencePairData read_cmudict(const fs::path& file, const CmudictOptions& options) {
  const int v = options.validation_percent, t = options.test_percent;
  if (v < 0 || t < 0 || v + t > 100)
    throw Error(str("read_cmudict: validation_percent ", v, " and test_percent ", t,
                    " must be 0 or more and sum to 100 or less"));
  struct Split {
    std::vector<std::vector<std::string>> sources, targets;
    std::vector<std::string> keys;
  } train, validation, test;
  for (CmudictEntry& entry : read_cmudict_entries(file, options.stress)) {
    const uint64_t bucket = fnv1a(entry.word) % 100;
    Split& split = bucket < static_cast<uint64_t>(t) ? test : bucket < static_cast<uint64_t>(t + v) ? validation : train;
    split.sources.push_back(letters(entry.word));
    split.targets.push_back(std::move(entry.phonemes));
    split.keys.push_back(std::move(entry.word));
  }
  SequencePairData data;
  data.source_vocab = make_vocabulary(train.sources, -1);
  data.target_vocab = make_vocabulary(train.targets, -1);
  for (auto [from, to] : std::initializer_list<std::pair<Split*, SequencePairs*>>{
           {&train, &data.train}, {&validation, &data.validation}, {&test, &data.test}}) {
    to->sources = make_ids(data.source_vocab, from->sources);
    to->targets = make_ids(data.target_vocab, from->targets);
    to->keys = std::move(from->keys);
  }
  return data;
}

SequencePairData read_cmudict(const CmudictOptions& options) {
  const fs::path path = cmudict_package_path();
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw Error(str("read_cmudict: no CMU lexicon at ", path,
                    "; install Debian's package festlex-cmu, or give read_cmudict the lexicon's path"));
  return read_cmudict(path, options);
}

}  // namespace chainer::datasets
