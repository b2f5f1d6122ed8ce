// The seq2seq examples' text data: europal.py's tokenization and vocabularies (also against the
// Python code itself), the parallel-text and CMUdict readers on fixture files written here, and
// ([bible], [cmudict]) on the data Debian's packages install, skipped where they are absent.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "catch_session.h"
#include "core/util/error.h"
#include "dataset_files.h"
#include "datasets/cmudict.h"
#include "datasets/parallel_text.h"
#include "datasets/sequence_pairs.h"
#include "datasets/split_sentence.h"
#include "datasets/vocabulary.h"
#include "python_runner.h"

using namespace chainer;
using namespace chainer::datasets;
using namespace chainer::testing;
using Catch::Contains;
using Words = std::vector<std::string>;
namespace fs = std::filesystem;

namespace {

// The words of IDS in VOCAB.
Words words_of(const std::vector<std::string>& vocab, const std::vector<int32_t>& ids) {
  Words out;
  for (int32_t id : ids) out.push_back(vocab.at(static_cast<size_t>(id)));
  return out;
}

// Lines whose tokenization the Python example and split_sentence must agree on.
const std::vector<std::string> kSentences{
    "Hello, World! It\xE2\x80\x99s 1909.",
    "\xC2\xBFQui\xC3\xA9n ES? \xC2\xA1\xC3\x81NIMO! (dijo) \"s\xC3\xAD\": fu\xC3\xA9; ya...",
    "  tabs\there\xC2\xA0nbsp\xE2\x80\x83" "em-space\xE3\x80\x80ideographic  ",
    "\xC3\x89L Y \xC3\x91O\xC3\x91O \xC3\x9C \xC3\x86 \xC3\x98 \xC3\x97 \xC3\x9E \xC4\xB0stanbul \xC5\x81\xC3\xB3" "d\xC5\xBA \xC5\xB8 \xC4\xBF \xC5\x8A",
    "\xCE\x91\xCE\xB8\xCE\x97\xCE\x9D\xCE\x91 \xCE\x86\xCE\x88 \xD0\x9C\xD0\x9E\xD0\xA1\xD0\x9A\xD0\x92\xD0\x90 \xD0\x81\xD0\x96",
    "r\xC3\xA1" "eme 12:30, 3.14 -- don't",
    "the the a a b the c c c",
};

}  // namespace

TEST_CASE("split_sentence tokenizes as europal.py") {
  CHECK(split_sentence("Hello, World!") == Words{"hello", ",", "world", "!"});
  CHECK(split_sentence("It\xE2\x80\x99s 1909.") == Words{"it", "'", "s", "0000", "."});
  CHECK(split_sentence("\xC2\xBFQui\xC3\xA9n ES?") == Words{"\xC2\xBFqui\xC3\xA9n", "es", "?"});
  CHECK(split_sentence("(a)b..c") == Words{"(", "a", ")", "b", ".", ".", "c"});
  CHECK(split_sentence("\xC3\x81NIMO \xC3\x91" "and\xC3\xBA") == Words{"\xC3\xA1nimo", "\xC3\xB1" "and\xC3\xBA"});
  CHECK(split_sentence(" a\tb\xC2\xA0" "c\n") == Words{"a", "b", "c"});
  CHECK(split_sentence("a\xFF" "b \xC3") == Words{"ab"});  // bytes that are no UTF-8 are dropped
  CHECK(split_sentence("").empty());
  CHECK(split_sentence(" . ") == Words{"."});
}

TEST_CASE("split_sentence and make_vocabulary equal the Python example's", "[python]") {
  const std::string python = find_python("collections, re");
  REQUIRE(!python.empty());
  TempDir dir;
  std::string text;
  for (const std::string& s : kSentences) text += s + "\n";
  write_file(dir.path / "text.txt", text);
  // europal.py's split_sentence and count_words, as in ChainerMN's example.
  write_file(dir.path / "europal.py", "import collections, io, re\n"
                                      "split_pattern = re.compile(r'([.,!?\"\\':;)(])')\n"
                                      "digit_pattern = re.compile(r'\\d')\n"
                                      "def split_sentence(s):\n"
                                      "    s = s.lower()\n"
                                      "    s = s.replace('\\u2019', '\\'')\n"
                                      "    s = digit_pattern.sub('0', s)\n"
                                      "    words = []\n"
                                      "    for word in s.strip().split():\n"
                                      "        words.extend(split_pattern.split(word))\n"
                                      "    return [w for w in words if w]\n"
                                      "counts = collections.Counter()\n"
                                      "with io.open('" + (dir.path / "text.txt").string() +
                                          "', encoding='utf-8', errors='ignore') as f:\n"
                                      "    for line in f:\n"
                                      "        words = split_sentence(line)\n"
                                      "        counts.update(words)\n"
                                      "        print('\\x1f'.join(words))\n"
                                      "print('\\x1f'.join(w for w, _ in counts.most_common(40000)))\n");
  int status = 0;
  const std::string output = run_python(python, (dir.path / "europal.py").string(), status);
  INFO(output);
  REQUIRE(status == 0);
  std::istringstream lines(output);
  std::vector<Words> sentences;
  auto fields = [](const std::string& line) {
    Words out;
    std::string field;
    std::istringstream in(line);
    while (std::getline(in, field, '\x1f')) out.push_back(field);
    return out;
  };
  std::string line;
  for (const std::string& s : kSentences) {
    REQUIRE(std::getline(lines, line));
    INFO(s);
    CHECK(split_sentence(s) == fields(line));
    sentences.push_back(split_sentence(s));
  }
  REQUIRE(std::getline(lines, line));
  Words expected{"<eos>", "<unk>"};
  for (const std::string& w : fields(line)) expected.push_back(w);
  CHECK(make_vocabulary(sentences) == expected);
}

TEST_CASE("make_vocabulary ranks by count, ties by first appearance, and cuts") {
  const std::vector<Words> sentences{{"b", "a", "c"}, {"a", "d", "c"}, {"e", "a"}};
  CHECK(make_vocabulary(sentences) == Words{"<eos>", "<unk>", "a", "c", "b", "d", "e"});
  CHECK(make_vocabulary(sentences, 2) == Words{"<eos>", "<unk>", "a", "c"});
  CHECK(make_vocabulary(sentences, 0) == Words{"<eos>", "<unk>"});
  CHECK(make_vocabulary(sentences, -1).size() == 7);
  const Words vocab = make_vocabulary(sentences, 2);
  CHECK(make_ids(vocab, {{"c", "a", "zz"}, {}}) == std::vector<std::vector<int32_t>>{{3, 2, kUnkId}, {}});
  CHECK(vocab[kEosId] == "<eos>");
  CHECK_THROWS_WITH(make_ids({"a", "b"}, {}), Contains("make_ids: the vocabulary (2 words) must start with"));
}

TEST_CASE("filter_by_length keeps seq2seq.py's lengths") {
  SequencePairs pairs;
  for (size_t n : {0, 1, 49, 50}) {
    pairs.sources.emplace_back(n, 5);
    pairs.targets.emplace_back(3, 5);
    pairs.keys.push_back(std::to_string(n));
  }
  pairs.sources.emplace_back(3, 5);
  pairs.targets.emplace_back();
  pairs.keys.push_back("empty target");
  CHECK(filter_by_length(pairs, 50).keys == Words{"1", "49"});
  CHECK(filter_by_length(pairs, 0).keys == Words{"1", "49", "50"});
  CHECK_THROWS_WITH(filter_by_length(pairs, -1), Contains("filter_by_length: limit -1 is negative"));
  pairs.keys.pop_back();
  CHECK_THROWS_WITH(filter_by_length(pairs, 0), Contains("5 sources, 5 targets and 4 keys"));
}

TEST_CASE("read_parallel_text splits by book and counts the vocabulary on training books") {
  TempDir dir;
  const fs::path file = dir.path / "bible.tsv";
  std::string long_verse;
  for (int i = 0; i < 49; ++i) long_verse += "w ";  // 49 tokens: kept; with the "." below, 50: dropped
  write_file(file, "Gen.1.1\tIn the beginning God created.\tEN el principio cri\xC3\xB3 Dios.\r\n"
                   "Gen.1.2\tAnd God saw.\tY vio Dios.\n"
                   "\n"
                   "Ruth.1.1\tAnd Ruth went.\tY Ruth fu\xC3\xA9.\n"
                   "Mark.1.1\tThe gospel of God.\tEl evangelio de Dios.\n"
                   "Exod.1.1\t" + long_verse + "\tx\n"
                   "Exod.1.2\t" + long_verse + ".\tx\n");
  ParallelTextOptions options;
  options.validation_books = {"Ruth"};
  options.test_books = {"Mark"};
  const SequencePairData data = read_parallel_text(file, options);
  CHECK(data.train.keys == Words{"Gen.1.1", "Gen.1.2", "Exod.1.1"});
  CHECK(data.validation.keys == Words{"Ruth.1.1"});
  CHECK(data.test.keys == Words{"Mark.1.1"});
  // "god" and "." twice each (Exod.1.2 is counted, though filtered out: 49 "w" tokens and a
  // "."), ties in order of first appearance.
  CHECK(data.source_vocab == Words{"<eos>", "<unk>", "w", ".", "god", "in", "the", "beginning", "created", "and", "saw"});
  CHECK(words_of(data.source_vocab, data.train.sources[0]) == Words{"in", "the", "beginning", "god", "created", "."});
  CHECK(words_of(data.target_vocab, data.train.targets[0]) ==
        Words{"en", "el", "principio", "cri\xC3\xB3", "dios", "."});
  // Words only in held-out books are unknown.
  CHECK(words_of(data.source_vocab, data.validation.sources[0]) == Words{"and", "<unk>", "<unk>", "."});
  CHECK(data.test.sources[0] == std::vector<int32_t>{6, kUnkId, kUnkId, 4, 3});
  CHECK(data.train.sources[2].size() == 49);

  options.reverse = true;
  options.train_length_limit = 0;
  const SequencePairData reversed = read_parallel_text(file, options);
  CHECK(reversed.source_vocab == data.target_vocab);
  CHECK(reversed.train.size() == 4);
  options.max_vocab = 1;
  CHECK(read_parallel_text(file, options).target_vocab == Words{"<eos>", "<unk>", "w"});
}

TEST_CASE("read_parallel_text explains bad files and options") {
  TempDir dir;
  const fs::path file = dir.path / "bible.tsv";
  CHECK_THROWS_WITH(read_parallel_text(dir.path / "none.tsv"),
                    Contains("cannot read") && Contains("none.tsv") && Contains("sword-text-kjv"));
  write_file(file, "Gen.1.1\ta\tb\nGen.1\tc\td\n");
  CHECK_THROWS_WITH(read_parallel_text(file), Contains("bible.tsv\":2: 'Gen.1\tc\td' is no 'BOOK.CHAPTER.VERSE"));
  write_file(file, "Gen.1.1\ta\tb\tc\n");
  CHECK_THROWS_WITH(read_parallel_text(file), Contains(":1:"));
  write_file(file, "Gen.1.1\ta\tb\nRuth.1.1\tc\td\n");
  ParallelTextOptions options;
  options.validation_books = {"Ruth"};
  options.test_books = {"Mark"};
  CHECK_THROWS_WITH(read_parallel_text(file, options), Contains("test book 'Mark' is in no line of"));
  options.test_books = {"Ruth"};
  CHECK_THROWS_WITH(read_parallel_text(file, options), Contains("book 'Ruth' is both a validation and a test book"));
  options.test_books = {};
  options.train_length_limit = -2;
  CHECK_THROWS_WITH(read_parallel_text(file, options), Contains("read_parallel_text: train_length_limit -2"));
}

TEST_CASE("read_cmudict flattens syllables, lowercases, keeps each word's first entry") {
  TempDir dir;
  const fs::path file = dir.path / "cmudict.out";
  write_file(file, "MNCL\n"
                   "(\"a\" dt (((ax) 0)))\n"
                   "(\"a\" n (((ey) 1)))\n"
                   "(\"aardvark\" nil (((aa r d) 1) ((v aa r k) 1)))\n"
                   "(\"AWOL\" n (((ey) 1) ((w ao l) 0)))\n"
                   "(\"awol\" nil (((ax) 1)))\n"
                   "(\"blouin\" nil (((b l) 0) ((w iy n) 1)))\n");
  const std::vector<CmudictEntry> entries = read_cmudict_entries(file);
  REQUIRE(entries.size() == 4);
  CHECK(entries[0].word == "a");
  CHECK(entries[0].phonemes == Words{"ax"});
  CHECK(entries[1].phonemes == Words{"aa", "r", "d", "v", "aa", "r", "k"});
  CHECK(entries[2].word == "awol");
  CHECK(entries[2].phonemes == Words{"ey", "w", "ao", "l"});
  const std::vector<CmudictEntry> stressed = read_cmudict_entries(file, true);
  CHECK(stressed[1].phonemes == Words{"aa1", "r", "d", "v", "aa1", "r", "k"});
  CHECK(stressed[3].phonemes == Words{"b", "l", "w", "iy1", "n"});  // a syllable without a vowel marks nothing

  CmudictOptions options;
  options.validation_percent = 0;
  options.test_percent = 0;
  const SequencePairData all = read_cmudict(file, options);
  CHECK(all.train.keys == Words{"a", "aardvark", "awol", "blouin"});
  // a 5 times; r, o, l twice; the rest once, in order of first appearance.
  CHECK(all.source_vocab == Words{"<eos>", "<unk>", "a", "r", "o", "l", "d", "v", "k", "w", "b", "u", "i", "n"});
  CHECK(words_of(all.source_vocab, all.train.sources[1]) == Words{"a", "a", "r", "d", "v", "a", "r", "k"});
  CHECK(words_of(all.target_vocab, all.train.targets[1]) == Words{"aa", "r", "d", "v", "aa", "r", "k"});
  CHECK(all.validation.size() == 0);
  CHECK(all.test.size() == 0);
}

TEST_CASE("read_cmudict's split depends on the word alone") {
  TempDir dir;
  std::string forward = "MNCL\n", backward;
  std::vector<std::string> lines;
  for (int i = 0; i < 400; ++i) {
    std::string word;
    for (int k = i; k > 0 || word.empty(); k /= 26) word += static_cast<char>('a' + k % 26);
    lines.push_back("(\"" + word + "\" nil (((k ae t) 1)))\n");
  }
  for (const auto& l : lines) forward += l;
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) backward += *it;
  write_file(dir.path / "forward", forward);
  write_file(dir.path / "backward", backward);
  const SequencePairData a = read_cmudict(dir.path / "forward"), b = read_cmudict(dir.path / "backward");
  auto split_of = [](const SequencePairData& d) {
    std::map<std::string, int> out;
    for (const auto& k : d.train.keys) out[k] = 0;
    for (const auto& k : d.validation.keys) out[k] = 1;
    for (const auto& k : d.test.keys) out[k] = 2;
    return out;
  };
  CHECK(split_of(a) == split_of(b));
  CHECK(split_of(a).size() == 400);
  // About 5% each (FNV-1a of the word, modulo 100).
  CHECK(a.validation.size() >= 8);
  CHECK(a.validation.size() <= 35);
  CHECK(a.test.size() >= 8);
  CHECK(a.test.size() <= 35);
}

TEST_CASE("read_cmudict explains bad files and options") {
  TempDir dir;
  CHECK_THROWS_WITH(read_cmudict(dir.path / "none"), Contains("cannot read") && Contains("festlex-cmu"));
  const fs::path file = dir.path / "cmudict.out";
  for (const char* bad : {"(\"a\" nil (((ax) 2)))", "(\"a\" nil ())", "(\"a\" nil (((ax) 0))", "(\"a\" (((ax) 0)))",
                          "a nil (((ax) 0)))", "(\"a\" nil ((() 0)))"}) {
    write_file(file, std::string("MNCL\n(\"b\" nil (((b iy) 1)))\n") + bad + "\n");
    INFO(bad);
    CHECK_THROWS_WITH(read_cmudict(file), Contains("cmudict.out\":3: '") && Contains("is no Festival lexicon entry"));
  }
  CmudictOptions options;
  options.test_percent = 60;
  options.validation_percent = 50;
  CHECK_THROWS_WITH(read_cmudict(file, options), Contains("validation_percent 50 and test_percent 60"));
}

TEST_CASE("read_cmudict reads Debian's festlex-cmu", "[cmudict]") {
  SKIP_UNLESS(fs::exists(cmudict_package_path()), "no " + cmudict_package_path().string() + " (Debian's festlex-cmu)");
  const SequencePairData data = read_cmudict();
  const size_t total = data.train.size() + data.validation.size() + data.test.size();
  CHECK(total >= 105000);
  CHECK(total <= 106000);
  CHECK(data.validation.size() > total / 25);
  CHECK(data.validation.size() < total / 15);
  CHECK(data.test.size() > total / 25);
  CHECK(data.test.size() < total / 15);
  CHECK(data.source_vocab.size() == 2 + 26);
  CHECK(data.target_vocab.size() == 2 + 40);  // Festival's CMU set: 39 phonemes and "ax"
  std::map<std::string, Words> found;
  for (const SequencePairs* split : {&data.train, &data.validation, &data.test})
    for (size_t i = 0; i < split->size(); ++i)
      if (split->keys[i] == "aardvark" || split->keys[i] == "zebra")
        found[split->keys[i]] = words_of(data.target_vocab, split->targets[i]);
  CHECK(found["aardvark"] == Words{"aa", "r", "d", "v", "aa", "r", "k"});
  CHECK(found["zebra"] == Words{"z", "iy", "b", "r", "ax"});
}

TEST_CASE("read_parallel_text reads the Bibles of Debian's SWORD packages", "[bible]") {
  const char* converter = std::getenv("SWORD_PARALLEL_TEXT");
  SKIP_UNLESS(converter && *converter && fs::exists(converter), "sword_parallel_text was not built (no libsword-dev)");
  SKIP_UNLESS(fs::exists("/usr/share/sword/mods.d/engKJV2006eb.conf") &&
                  fs::exists("/usr/share/sword/mods.d/spaRV1909eb.conf"),
              "no SWORD modules engKJV2006eb and spaRV1909eb (Debian's sword-text-kjv, sword-text-sparv)");
  TempDir dir;
  const fs::path file = dir.path / "bible.tsv";
  const std::string command = std::string("'") + converter + "' --out '" + file.string() + "' 2>/dev/null";
  REQUIRE(std::system(command.c_str()) == 0);
  std::ifstream in(file);
  std::string first;
  REQUIRE(std::getline(in, first));
  CHECK(first == "Gen.1.1\tIn the beginning God created the heaven and the earth.\t"
                 "EN el principio cri\xC3\xB3 Dios los cielos y la tierra.");
  const SequencePairData data = read_parallel_text(file);
  CHECK(data.validation.size() == 498);  // Ruth 85, Jonah 47, Lamentations 154, Philippians 104, James 108
  CHECK(data.test.size() == 1005);       // Ecclesiastes 222, Mark 678, 1 John 105
  CHECK(data.train.size() > 26000);      // of 29581 training verses, those of 1 to 49 tokens each side
  CHECK(data.train.size() < 28500);
  CHECK(data.source_vocab.size() > 10000);
  CHECK(data.source_vocab.size() < 20000);
  CHECK(data.target_vocab.size() > data.source_vocab.size());
  REQUIRE(data.train.keys[0] == "Gen.1.1");
  CHECK(words_of(data.target_vocab, data.train.targets[0]) ==
        Words{"en", "el", "principio", "cri\xC3\xB3", "dios", "los", "cielos", "y", "la", "tierra", "."});
}
