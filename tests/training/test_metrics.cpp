// BLEU (training/metrics/bleu.h) against NLTK's corpus_bleu run in Python ([nltk]: skipped
// without python3-nltk), and on values computed by hand; the error rates on closed-form cases.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "catch_session.h"
#include "core/util/error.h"
#include "python_runner.h"
#include "training/metrics/bleu.h"
#include "training/metrics/error_rate.h"

using namespace chainer;
using namespace chainer::training::metrics;
using Catch::Contains;
using Seq = std::vector<int32_t>;
namespace fs = std::filesystem;

namespace {

struct BleuCase {
  std::vector<std::vector<Seq>> references;
  std::vector<Seq> hypotheses;
  BleuOptions options;
};

std::string python_list(const Seq& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

// CASE as Python: corpus_bleu(refs, hyps, weights=..., smoothing_function=...).
std::string python_call(const BleuCase& c) {
  std::ostringstream os;
  os.precision(17);
  os << "corpus_bleu([";
  for (const auto& refs : c.references) {
    os << "[";
    for (const Seq& r : refs) os << python_list(r) << ",";
    os << "],";
  }
  os << "], [";
  for (const Seq& h : c.hypotheses) os << python_list(h) << ",";
  os << "], weights=(";
  for (double w : c.options.weights) os << w << ",";
  os << "), smoothing_function="
     << (c.options.smoothing == BleuSmoothing::method1 ? "SmoothingFunction().method1" : "SmoothingFunction().method0")
     << ")";
  return os.str();
}

// Random sequences over a vocabulary of 6 ids, so that n-grams of every order match now and then.
Seq random_sequence(std::mt19937& rng, int max_length) {
  Seq s(std::uniform_int_distribution<int>(0, max_length)(rng));
  for (int32_t& id : s) id = std::uniform_int_distribution<int32_t>(0, 5)(rng);
  return s;
}

std::vector<BleuCase> bleu_cases() {
  std::vector<BleuCase> cases;
  const Seq a{1, 2, 3, 4, 5, 6, 7, 8}, b{1, 2, 3, 4, 9, 6, 7, 8};
  cases.push_back({{{a}}, {a}, {}});                               // perfect: 1
  cases.push_back({{{a}}, {b}, {}});                               // one substitution
  cases.push_back({{{a}}, {{1, 2, 3}}, {}});                       // shorter than 4: brevity, smoothing
  cases.push_back({{{a}}, {{}}, {}});                              // empty hypothesis: 0
  cases.push_back({{{a}, {b}}, {{}, b}, {}});                      // an empty one among others
  cases.push_back({{{a, b, {1, 2}}}, {{1, 2, 3, 4, 9}}, {}});      // several references, closest length
  cases.push_back({{{{1, 2, 3, 4}, {1, 2, 3, 4, 5, 6}}}, {{1, 2, 3, 4, 5}}, {}});  // a tie: the shorter
  cases.push_back({{{a}}, {{1, 2, 3, 4, 5, 6, 7, 8, 8, 8, 8}}, {}});  // longer than the reference: no penalty
  cases.push_back({{{a}}, {{9, 9, 9, 9}}, {}});                    // no unigram match: 0
  cases.push_back({{{{1, 1, 1, 1}}}, {{1, 1, 1, 1, 1, 1}}, {}});   // clipped counts
  cases.push_back({{{a}}, {b}, {{0.5, 0.5}, BleuSmoothing::method1, 0.1}});
  cases.push_back({{{a}}, {{1, 2, 9, 4}}, {{0.25, 0.25, 0.25, 0.25}, BleuSmoothing::none, 0.1}});
  std::mt19937 rng(20240611);
  const std::vector<std::vector<double>> weights{{0.25, 0.25, 0.25, 0.25}, {0.5, 0.5}, {1.0 / 3, 1.0 / 3, 1.0 / 3},
                                                 {0.1, 0.2, 0.3, 0.4}, {1.0}};
  for (int k = 0; k < 60; ++k) {
    BleuCase c;
    const int n = std::uniform_int_distribution<int>(1, 25)(rng);
    for (int i = 0; i < n; ++i) {
      std::vector<Seq> refs(std::uniform_int_distribution<int>(1, 3)(rng));
      for (Seq& r : refs) r = random_sequence(rng, 14);
      c.references.push_back(refs);
      // Some hypotheses copy a reference with changes, so that long n-grams match too.
      Seq h = std::uniform_int_distribution<int>(0, 2)(rng) == 0 ? random_sequence(rng, 14) : refs[0];
      if (!h.empty() && std::uniform_int_distribution<int>(0, 1)(rng)) h[h.size() / 2] = 7;
      if (std::uniform_int_distribution<int>(0, 4)(rng) == 0) h.resize(h.size() / 3);
      c.hypotheses.push_back(h);
    }
    c.options.weights = weights[k % weights.size()];
    c.options.smoothing = k % 7 == 6 ? BleuSmoothing::none : BleuSmoothing::method1;
    cases.push_back(c);
  }
  return cases;
}

}  // namespace

TEST_CASE("corpus_bleu equals NLTK's corpus_bleu", "[nltk]") {
  const std::string python = chainer::testing::find_python("nltk");
  SKIP_UNLESS(!python.empty(), "no python3 with nltk (Debian's package python3-nltk)");
  const std::vector<BleuCase> cases = bleu_cases();
  const fs::path script = fs::temp_directory_path() / ("chainer_test_bleu_" + std::to_string(::getpid()) + ".py");
  {
    std::ofstream out(script);
    out << "import warnings\nwarnings.simplefilter('ignore')\n"
           "from nltk.translate.bleu_score import corpus_bleu, SmoothingFunction\n";
    for (const BleuCase& c : cases) out << "print(repr(float(" << python_call(c) << ")))\n";
  }
  int status = 0;
  const std::string output = chainer::testing::run_python(python, script.string(), status);
  fs::remove(script);
  INFO(output.substr(0, 2000));
  REQUIRE(status == 0);
  std::istringstream lines(output);
  std::string line;
  for (const BleuCase& c : cases) {
    REQUIRE(std::getline(lines, line));
    const double expected = std::strtod(line.c_str(), nullptr);
    INFO(python_call(c));
    CHECK(std::fabs(corpus_bleu(c.references, c.hypotheses, c.options) - expected) <= 1e-12);
  }
}

TEST_CASE("corpus_bleu on values computed by hand") {
  const Seq a{1, 2, 3, 4, 5, 6, 7, 8};
  CHECK(corpus_bleu({{a}}, {a}) == 1.0);
  CHECK(corpus_bleu({{a}}, {{}}) == 0.0);
  // One substitution in the middle: precisions 7/8, 5/7, 3/6, 1/5, no brevity penalty.
  const double expected = std::exp(0.25 * (std::log(7.0 / 8) + std::log(5.0 / 7) + std::log(3.0 / 6) + std::log(1.0 / 5)));
  CHECK(corpus_bleu({{a}}, {{1, 2, 3, 4, 9, 6, 7, 8}}) == Approx(expected).epsilon(1e-14));
  // Three tokens of eight: every precision of orders 1-3 is 1, order 4 is smoothed to 0.1 / 1,
  // and the brevity penalty is exp(1 - 8/3).
  CHECK(corpus_bleu({{a}}, {{1, 2, 3}}) == Approx(std::exp(1 - 8.0 / 3) * std::pow(0.1, 0.25)).epsilon(1e-14));
}

TEST_CASE("BleuStatistics of parts merge into the corpus's") {
  const std::vector<std::vector<Seq>> refs{{{1, 2, 3, 4, 5}}, {{2, 3, 4}, {2, 3}}, {{5, 5, 5, 1, 2, 3}}};
  const std::vector<Seq> hyps{{1, 2, 3, 5}, {2, 3, 4, 4}, {5, 5, 1, 2}};
  BleuStatistics first, second;
  first.add(refs[0], hyps[0]);
  second.add(refs[1], hyps[1]);
  second.add(refs[2], hyps[2]);
  first.merge(second);
  CHECK(first.score() == corpus_bleu(refs, hyps));
  CHECK(first.hypothesis_length == 12);
  CHECK(first.reference_length == 5 + 3 + 6);
}

TEST_CASE("corpus_bleu refuses what NLTK cannot score") {
  CHECK_THROWS_WITH(corpus_bleu({{{1}}}, {{1}, {2}}), Contains("corpus_bleu: 2 hypotheses and 1 lists of references"));
  CHECK_THROWS_WITH(corpus_bleu({{}}, {{1}}), Contains("has no reference"));
  BleuStatistics statistics(2);
  CHECK_THROWS_WITH(statistics.score(), Contains("4 weights for statistics of 2 n-gram orders"));
  CHECK_THROWS_AS(BleuStatistics(0), chainer::Error);
  // NLTK raises ZeroDivisionError on an empty corpus (Fraction(0, 0)).
  CHECK_THROWS_WITH(corpus_bleu({}, {}), Contains("BleuStatistics::score: no hypothesis was added"));
  CHECK_THROWS_WITH(statistics.merge(BleuStatistics(3)), Contains("statistics of 3 n-gram orders added to 2"));
}

TEST_CASE("edit_distance counts substitutions, insertions and deletions") {
  // kitten -> sitting: two substitutions and an insertion.
  const Seq kitten{'k', 'i', 't', 't', 'e', 'n'}, sitting{'s', 'i', 't', 't', 'i', 'n', 'g'};
  CHECK(edit_distance(kitten, sitting) == 3);
  CHECK(edit_distance(sitting, kitten) == 3);
  CHECK(edit_distance({}, {}) == 0);
  CHECK(edit_distance({}, {1, 2, 3}) == 3);
  CHECK(edit_distance({1, 2, 3}, {}) == 3);
  CHECK(edit_distance({1, 2, 3}, {1, 2, 3}) == 0);
  CHECK(edit_distance({1, 2, 3, 4}, {2, 3, 4, 1}) == 2);  // a rotation: one deletion, one insertion
  CHECK(edit_distance({1, 2}, {3, 4}) == 2);
}

TEST_CASE("corpus_error_rate sums edits over reference lengths") {
  // Edits 0, 1 (substitution), 2 (two deletions), 3 (three insertions into an empty reference).
  const std::vector<Seq> refs{{1, 2, 3}, {4, 5, 6, 7}, {1, 2}, {}};
  const std::vector<Seq> hyps{{1, 2, 3}, {4, 9, 6, 7}, {}, {5, 5, 5}};
  const ErrorRateStatistics s = corpus_error_rate(refs, hyps);
  CHECK(s.edits == 6);
  CHECK(s.reference_length == 9);
  CHECK(s.token_error_rate() == 6.0 / 9.0);
  CHECK(s.sequences == 4);
  CHECK(s.wrong_sequences == 3);
  CHECK(s.sequence_error_rate() == 0.75);
  ErrorRateStatistics parts = corpus_error_rate({refs[0], refs[1]}, {hyps[0], hyps[1]});
  parts.merge(corpus_error_rate({refs[2], refs[3]}, {hyps[2], hyps[3]}));
  CHECK(parts.edits == s.edits);
  CHECK(parts.token_error_rate() == s.token_error_rate());
  CHECK_THROWS_WITH(corpus_error_rate({{1}}, {}), Contains("corpus_error_rate: 0 hypotheses and 1 references"));
  CHECK_THROWS_WITH(corpus_error_rate({{}}, {{}}).token_error_rate(), Contains("hold no token"));
  CHECK_THROWS_WITH(ErrorRateStatistics().sequence_error_rate(), Contains("no sequence was added"));
}
