#include "seq2seq_common.h"

#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>

namespace apps::seq2seq {

using chainer::Error;
using chainer::str;
using chainer::Tensor;
namespace D = chainer::datasets;
namespace M = chainer::training::metrics;

std::string usage(bool data_parallel) {
  return str(R"(      --data TASK     bible (default): English to Spanish, the King James Version and the
                      Reina-Valera 1909 (Debian's sword-text-kjv, sword-text-sparv); cmudict:
                      spelling to phonemes, the CMU Pronouncing Dictionary (festlex-cmu),
                      also scored by phoneme and word error rates
      --bible FILE    the Bible's parallel text (default bible.tsv); when missing it is made
                      first by running sword_parallel_text --out FILE (about 5 s)
  -l, --layer N       LSTM layers of the encoder and of the decoder (default 3)
      --max-vocab N   words kept per language besides <eos> and <unk>, most frequent first
                      (default 40000; the Bible; CMUdict's letters and phonemes are all kept)
      --length-limit N  training pairs with 1 to N-1 tokens on each side (default 50)
      --limit N       train on the first N training pairs only (as --train-size N)
      --test-size N   score the first N validation pairs only (default: all)
      --max-length N  tokens a translation may have (default 100)
      --translations N  validation sentences translated and printed every epoch (default 3)
      --dump-ids DIR  write the id sequences trained and scored on and the vocabularies to DIR
                      ({train,validation}.{source,target}.txt, vocab.{source,target}.txt)
      --timing        also print, per epoch, a JSON line: train_s, tokens, tokens_per_s,
                      peak_rss_mib (and log train_time, peak_rss_mib)
)",
             data_parallel ? R"(  -c, --communicator NAME  naive (default on CPUs), flat, hierarchical, two_dimensional,
                      single_node, pure_nccl (default with --gpu), non_cuda_aware
)"
                           : "",
             common_usage(Options{}, {"--test-size", "--timing"}));
}

Options parse(int argc, char** argv, const std::string& usage_text, bool data_parallel) {
  Options o;
  for (Args args(argc, argv, usage_text.c_str()); args.next();) {
    if (args.is("-l", "--layer")) o.layer = args.integer(1, 64);
    else if (args.is(nullptr, "--bible")) o.bible = args.value();
    else if (args.is(nullptr, "--max-vocab")) o.max_vocab = args.integer(1);
    else if (args.is(nullptr, "--length-limit")) o.length_limit = args.integer(2);
    else if (args.is(nullptr, "--limit")) o.train_size = args.integer(1);
    else if (args.is(nullptr, "--max-length")) o.max_length = args.integer(1, 100000);
    else if (args.is(nullptr, "--translations")) o.translations = args.integer(0);
    else if (args.is(nullptr, "--dump-ids")) o.dump_ids = args.value();
    else if (data_parallel && args.is("-c", "--communicator")) o.communicator = args.value();
    else if (read_common_option(args, o)) continue;
    else args.unknown();
  }
  if (o.data.empty()) o.data = "bible";
  if (o.data != "bible" && o.data != "cmudict")
    throw Error(str("--data must be bible or cmudict, got '", o.data, "'"));
  if (o.checkpoint_interval > 0 && !data_parallel)
    throw Error("--checkpoint-interval is not offered by the model-parallel example; use -f and -r");
  return o;
}

void make_bible(const std::string& file) {
  std::filesystem::path program = "sword_parallel_text";
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && std::filesystem::exists(self.parent_path() / program)) program = self.parent_path() / program;
  auto quote = [](const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
  };
  const std::string command = str(quote(program.string()), " --out ", quote(file));
  std::cout << "# --bible " << file << " does not exist: making it with " << command << "\n" << std::flush;
  const int rc = std::system(command.c_str());
  if (rc != 0 || !std::filesystem::exists(file))
    throw Error(str("--bible ", file, ": the file is missing and '", command, "' failed (status ", rc,
                    "); sword_parallel_text is built where libsword-dev is installed, and needs the SWORD "
                    "modules of sword-text-kjv and sword-text-sparv (apt-get install libsword-dev "
                    "sword-text-kjv sword-text-sparv, then rebuild)"));
}

D::SequencePairData read_data(const Options& o) {
  D::SequencePairData data;
  if (o.cmudict()) {
    data = D::read_cmudict();
    data.train = D::filter_by_length(data.train, o.length_limit);
  } else {
    if (!std::filesystem::exists(o.bible)) make_bible(o.bible);
    D::ParallelTextOptions options;
    options.max_vocab = o.max_vocab;
    options.train_length_limit = o.length_limit;
    data = D::read_parallel_text(o.bible, options);
  }
  auto cut = [](D::SequencePairs& pairs, int64_t n, const char* option, const char* what) {
    if (n == 0) return;
    if (size_t(n) > pairs.size())
      throw Error(str(option, " ", n, " is more than the ", pairs.size(), " ", what, " pairs"));
    pairs.sources.resize(size_t(n));
    pairs.targets.resize(size_t(n));
    pairs.keys.resize(size_t(n));
  };
  cut(data.train, o.train_size, "--limit", "training");
  cut(data.validation, o.test_size, "--test-size", "validation");
  std::cout << "# data: " << (o.cmudict() ? "cmudict" : o.bible) << ": " << data.train.size() << " training, "
            << data.validation.size() << " validation pairs; vocabularies: " << data.source_vocab.size()
            << " source, " << data.target_vocab.size() << " target\n"
            << std::flush;
  return data;
}

D::SequencePairData bcast_data(const D::SequencePairData& data, const chainermn::Communicator& comm) {
  D::SequencePairData out;
  out.source_vocab = comm.bcast_obj(data.source_vocab);
  out.target_vocab = comm.bcast_obj(data.target_vocab);
  out.train.sources = comm.bcast_obj(data.train.sources);
  out.train.targets = comm.bcast_obj(data.train.targets);
  out.train.keys.resize(out.train.sources.size());
  out.validation.sources = comm.bcast_obj(data.validation.sources);
  out.validation.targets = comm.bcast_obj(data.validation.targets);
  out.validation.keys = comm.bcast_obj(data.validation.keys);
  return out;
}

void dump_ids(const D::SequencePairData& data, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(str("--dump-ids ", dir, ": cannot create the directory: ", ec.message()));
  auto open = [&dir](const std::string& name) {
    const std::string path = (std::filesystem::path(dir) / name).string();
    auto out = std::make_unique<std::ofstream>(path);
    if (!*out) throw Error(str("--dump-ids ", dir, ": cannot write ", path));
    return out;
  };
  auto sequences = [&open](const std::string& name, const std::vector<std::vector<int32_t>>& seqs) {
    auto out = open(name);
    for (const auto& s : seqs) {
      for (size_t i = 0; i < s.size(); ++i) *out << (i ? " " : "") << s[i];
      *out << "\n";
    }
  };
  auto vocab = [&open](const std::string& name, const std::vector<std::string>& tokens) {
    auto out = open(name);
    for (const auto& t : tokens) *out << t << "\n";
  };
  sequences("train.source.txt", data.train.sources);
  sequences("train.target.txt", data.train.targets);
  sequences("validation.source.txt", data.validation.sources);
  sequences("validation.target.txt", data.validation.targets);
  vocab("vocab.source.txt", data.source_vocab);
  vocab("vocab.target.txt", data.target_vocab);
}

D::DatasetPtr to_dataset(const D::SequencePairs& pairs) {
  std::vector<D::Example> examples;
  examples.reserve(pairs.size());
  for (size_t i = 0; i < pairs.size(); ++i)
    examples.push_back({Tensor::from_vector(pairs.sources[i]), Tensor::from_vector(pairs.targets[i])});
  return std::make_shared<D::ListDataset>(std::move(examples));
}

chainer::dataset::Converter sequence_converter() {
  return [](const std::vector<D::Example>& batch, chainer::Device device) {
    std::vector<Tensor> xs, ys;
    for (const D::Example& e : batch) {
      xs.push_back(e.at(0));
      ys.push_back(e.at(1));
    }
    using Field = chainer::dataset::ConvertedBatch::Field;
    return chainer::dataset::ConvertedBatch(std::vector<std::pair<std::string, Field>>{
        {"xs", chainer::dataset::to_device(device, xs)}, {"ys", chainer::dataset::to_device(device, ys)}});
  };
}

// The corpus sums of one evaluation.
struct BleuEvaluator::Sums {
  M::BleuStatistics bleu;
  M::ErrorRateStatistics errors;
};

BleuEvaluator::BleuEvaluator(std::shared_ptr<chainer::iterators::Iterator> iterator,
                             std::shared_ptr<chainer::Link> target, Translate translate,
                             std::shared_ptr<chainermn::Communicator> comm, bool error_rates)
    : BleuEvaluator(std::make_shared<Sums>(), std::move(iterator), std::move(target), translate, std::move(comm),
                    error_rates) {}

// The eval function scores each converted batch's hypotheses against its targets into SUMS.
BleuEvaluator::BleuEvaluator(std::shared_ptr<Sums> sums, std::shared_ptr<chainer::iterators::Iterator> iterator,
                             std::shared_ptr<chainer::Link> target, const Translate& translate,
                             std::shared_ptr<chainermn::Communicator> comm, bool error_rates)
    : Evaluator(std::move(iterator), std::move(target), sequence_converter(),
                [sums, translate](const chainer::dataset::ConvertedBatch& batch) {
                  const std::vector<std::vector<int32_t>> hypotheses = translate(batch.list("xs"));
                  if (hypotheses.empty()) return;  // a rank that does not decode
                  const std::vector<Tensor>& ys = batch.list("ys");
                  for (size_t i = 0; i < ys.size(); ++i) {
                    const std::vector<int32_t> reference = ys[i].to_vector<int32_t>();
                    sums->bleu.add({reference}, hypotheses.at(i));
                    sums->errors.add(reference, hypotheses.at(i));
                  }
                }),
      sums_(std::move(sums)),
      comm_(std::move(comm)),
      error_rates_(error_rates) {}

chainer::Observation BleuEvaluator::evaluate() {
  *sums_ = Sums{M::BleuStatistics(), M::ErrorRateStatistics()};
  Evaluator::evaluate();  // the translations; the eval function reports nothing itself
  // BLEU and the error rates are ratios of corpus sums: the ranks' sums are added, not their scores.
  M::BleuStatistics& b = sums_->bleu;
  M::ErrorRateStatistics& e = sums_->errors;
  std::vector<int64_t> all = b.matches;
  all.insert(all.end(), b.totals.begin(), b.totals.end());
  all.insert(all.end(), {b.hypothesis_length, b.reference_length, e.edits, e.reference_length, e.sequences,
                         e.wrong_sequences});
  if (comm_) all = comm_->allreduce_obj(all);
  const size_t n = b.matches.size();
  std::copy(all.begin(), all.begin() + long(n), b.matches.begin());
  std::copy(all.begin() + long(n), all.begin() + long(2 * n), b.totals.begin());
  b.hypothesis_length = all[2 * n];
  b.reference_length = all[2 * n + 1];
  e = {all[2 * n + 2], all[2 * n + 3], all[2 * n + 4], all[2 * n + 5]};
  if (e.sequences == 0) throw Error(str("BleuEvaluator: no validation pair was translated"));
  chainer::Observation observation{{name() + "/main/bleu", b.score()}};
  if (error_rates_) {
    observation[name() + "/main/per"] = e.token_error_rate();
    observation[name() + "/main/wer"] = e.sequence_error_rate();
  }
  return observation;
}

std::string words(const std::vector<std::string>& vocab, const std::vector<int32_t>& ids) {
  std::string out;
  for (int32_t id : ids) {
    if (!out.empty()) out += ' ';
    out += id >= 0 && size_t(id) < vocab.size() ? vocab[size_t(id)] : "<" + std::to_string(id) + ">";
  }
  return out;
}

std::shared_ptr<chainer::training::Extension> print_translations(const D::SequencePairData& data,
                                                                 int64_t sentences, Translate translate,
                                                                 bool print_here) {
  const size_t n = std::min(size_t(sentences), data.validation.size());
  std::vector<std::vector<int32_t>> sources(data.validation.sources.begin(), data.validation.sources.begin() + long(n));
  std::vector<std::vector<int32_t>> targets(data.validation.targets.begin(), data.validation.targets.begin() + long(n));
  chainer::training::MakeExtensionOptions options;
  options.trigger = {1, chainer::training::Unit::Epoch};
  options.default_name = "translations";
  return chainer::training::make_extension(
      [=, source_vocab = data.source_vocab, target_vocab = data.target_vocab](chainer::training::Trainer& trainer) {
        if (n == 0) return;
        chainer::Device device = trainer.updater().get_optimizer("main").target().device();
        std::vector<Tensor> xs;
        for (const auto& s : sources) xs.push_back(Tensor::from_vector(s));
        xs = chainer::dataset::to_device(device, xs);
        const std::vector<std::vector<int32_t>> ys = translate(xs);
        if (!print_here) return;
        for (size_t i = 0; i < n && i < ys.size(); ++i)
          std::cout << "# source : " << words(source_vocab, sources[i]) << "\n#  result : "
                    << words(target_vocab, ys[i]) << "\n#  expect : " << words(target_vocab, targets[i]) << "\n";
        std::cout << std::flush;
      },
      options);
}

void add_token_timing(chainer::training::Trainer& trainer, std::shared_ptr<int64_t> tokens,
                      std::shared_ptr<chainermn::Communicator> comm, bool print_here) {
  using clock = std::chrono::steady_clock;
  struct Start {
    clock::time_point time;
    int64_t tokens = 0;
  };
  auto start = std::make_shared<Start>();
  auto restart = [start, tokens](chainer::training::Trainer&) { *start = {clock::now(), *tokens}; };
  chainer::training::MakeExtensionOptions report;
  report.trigger = {1, chainer::training::Unit::Epoch};
  report.default_name = "token_timing";
  report.priority = chainer::training::PRIORITY_WRITER + 1;  // before the evaluator
  report.initializer = restart;
  trainer.extend(chainer::training::make_extension(
      [start, tokens, comm, print_here](chainer::training::Trainer& t) {
        if (t.updater().get_optimizer("main").target().device().is_cuda()) chainer::cuda::synchronize();
        const double seconds = std::chrono::duration<double>(clock::now() - start->time).count();
        const int64_t trained = comm->allreduce_obj(*tokens - start->tokens);
        rusage usage{};
        getrusage(RUSAGE_SELF, &usage);
        if (print_here)
          std::cout << str("{\"epoch\": ", t.updater().epoch(), ", \"train_s\": ", seconds, ", \"tokens\": ", trained,
                           ", \"tokens_per_s\": ", seconds > 0 ? double(trained) / seconds : 0.0,
                           ", \"peak_rss_mib\": ", double(usage.ru_maxrss) / 1024.0, "}\n")
                    << std::flush;
      },
      report));
  chainer::training::MakeExtensionOptions again;
  again.trigger = {1, chainer::training::Unit::Epoch};
  again.default_name = "token_timing_restart";
  again.priority = std::numeric_limits<int>::min();  // after every other extension
  trainer.extend(chainer::training::make_extension(restart, again));
}

}  // namespace apps::seq2seq
