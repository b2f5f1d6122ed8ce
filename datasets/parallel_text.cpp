#include "datasets/parallel_text.h"

#include <fstream>
#include <set>
#include <string_view>

#include "core/util/error.h"
#include "datasets/split_sentence.h"
#include "datasets/vocabulary.h"

namespace chainer::datasets {

namespace {

// Tokenized verses of one split, before the vocabularies exist.
struct Verses {
  std::vector<std::vector<std::string>> sources, targets;
  std::vector<std::string> keys;
};

// The book of an OSIS reference, "Gen" of "Gen.1.1"; empty when REF is not BOOK.CHAPTER.VERSE.
std::string_view book_of(std::string_view ref) {
  const size_t first = ref.find('.');
  if (first == 0 || first == std::string_view::npos) return {};
  const size_t second = ref.find('.', first + 1);
  if (second == std::string_view::npos || second == first + 1 || second + 1 >= ref.size()) return {};
  for (size_t i = first + 1; i < ref.size(); ++i)
    if (i != second && (ref[i] < '0' || ref[i] > '9')) return {};
  return ref.substr(0, first);
}

SequencePairs encode(const Verses& verses, const std::vector<std::string>& source_vocab,
                     const std::vector<std::string>& target_vocab) {
  return {make_ids(source_vocab, verses.sources), make_ids(target_vocab, verses.targets), verses.keys};
}

}  // namespace

SequencePairData read_parallel_text(const std::filesystem::path& file, const ParallelTextOptions& options) {
  if (options.train_length_limit < 0)
    throw Error(str("read_parallel_text: train_length_limit ", options.train_length_limit,
                    " is negative; expected 0 (no limit) or more"));
  std::ifstream in(file, std::ios::binary);
  if (!in)
    throw Error(str("read_parallel_text: cannot read ", file,
                    "; write it with apps/sword_parallel_text --out FILE (Debian's packages sword-text-kjv and "
                    "sword-text-sparv hold the two Bibles it reads)"));
  const std::set<std::string, std::less<>> validation(options.validation_books.begin(), options.validation_books.end());
  const std::set<std::string, std::less<>> test(options.test_books.begin(), options.test_books.end());
  for (const std::string& book : validation)
    if (test.count(book))
      throw Error(str("read_parallel_text: book '", book, "' is both a validation and a test book; expected each in one list"));

  Verses train_verses, validation_verses, test_verses;
  std::set<std::string, std::less<>> books;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const size_t tab1 = line.find('\t');
    const size_t tab2 = tab1 == std::string::npos ? tab1 : line.find('\t', tab1 + 1);
    const std::string_view view(line);
    const std::string_view ref = view.substr(0, tab1);
    const std::string_view book = book_of(ref);
    if (tab2 == std::string::npos || line.find('\t', tab2 + 1) != std::string::npos || book.empty())
      throw Error(str("read_parallel_text: ", file, ":", number, ": '", view.substr(0, 80),
                      "' is no 'BOOK.CHAPTER.VERSE<TAB>English<TAB>Spanish' line (apps/sword_parallel_text's format)"));
    books.emplace(book);
    std::vector<std::string> english = split_sentence(view.substr(tab1 + 1, tab2 - tab1 - 1));
    std::vector<std::string> spanish = split_sentence(view.substr(tab2 + 1));
    Verses& verses = validation.count(book) ? validation_verses : test.count(book) ? test_verses : train_verses;
    verses.sources.push_back(std::move(options.reverse ? spanish : english));
    verses.targets.push_back(std::move(options.reverse ? english : spanish));
    verses.keys.emplace_back(ref);
  }
  if (in.bad()) throw Error(str("read_parallel_text: reading ", file, " failed"));
  for (const auto* held_out : {&validation, &test})
    for (const std::string& book : *held_out)
      if (!books.count(book))
        throw Error(str("read_parallel_text: ", held_out == &validation ? "validation" : "test", " book '", book,
                        "' is in no line of ", file, "; expected an OSIS book name of the file (Gen, Exod, ..., Rev)"));

  SequencePairData data;
  data.source_vocab = make_vocabulary(train_verses.sources, options.max_vocab);
  data.target_vocab = make_vocabulary(train_verses.targets, options.max_vocab);
  data.train = filter_by_length(encode(train_verses, data.source_vocab, data.target_vocab),
                                options.train_length_limit);
  data.validation = filter_by_length(encode(validation_verses, data.source_vocab, data.target_vocab), 0);
  data.test = filter_by_length(encode(test_verses, data.source_vocab, data.target_vocab), 0);
  return data;
}

}  // namespace chainer::datasets
