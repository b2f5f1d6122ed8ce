// What the seq2seq examples share (apps/seq2seq, data parallel; apps/seq2seq_mp1, the encoder
// and the decoder on two processes): their options, the data (the parallel Bible or CMUdict as
// datasets of int32 id sequences, written out with --dump-ids), the converter of lists of
// sequences, the BLEU evaluator (with the error rates on CMUdict), the translations printed
// every epoch and the --timing lines. docs/seq2seq.md describes the data and the runs.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "app_common.h"

namespace apps::seq2seq {

// The options of both examples, with seq2seq.py's defaults (-b 64, -u 1024, 3 layers, 15 epochs).
struct Options : CommonOptions {
  Options() {
    batchsize = 64;
    epoch = 15;
    unit = 1024;
    data_set = Data::Other;
    plots = {{"loss.png", {"main/loss"}}, {"bleu.png", {"validation/main/bleu"}}};
  }
  int64_t layer = 3;
  std::string communicator;       // default: naive on CPUs, pure_nccl on GPUs
  std::string bible = "bible.tsv";  // --bible: sword_parallel_text's output, made when missing
  int64_t max_vocab = 40000;      // words per language besides <eos> and <unk> (the Bible)
  int64_t length_limit = 50;      // training pairs keep 1 to length_limit - 1 tokens a side
  int64_t max_length = 100;       // tokens a translation may have
  int64_t translations = 3;       // validation sentences translated and printed every epoch
  std::string dump_ids;           // --dump-ids DIR
  bool cmudict() const { return data == "cmudict"; }
};

// The options' lines of the usage text (after the app's own first lines).
std::string usage(bool data_parallel);
// Reads argv into an Options (the common options, then the examples'), and checks them.
Options parse(int argc, char** argv, const std::string& usage_text, bool data_parallel);

// The task --data names, as vocabularies and id sequences: training pairs filtered by
// --length-limit and cut to --limit (--train-size), validation pairs cut to --test-size. The
// Bible's TSV is made first when --bible names no file (see make_bible). Prints what it read.
chainer::datasets::SequencePairData read_data(const Options& o);
// Runs sword_parallel_text (beside this program, else on PATH) to write FILE; an error names
// --bible, the command and the packages it needs.
void make_bible(const std::string& file);
// ROOT's DATA on every rank of COMM (the model-parallel example reads on rank 0 only).
chainer::datasets::SequencePairData bcast_data(const chainer::datasets::SequencePairData& data,
                                               const chainermn::Communicator& comm);
// DIR/{train,validation}.{source,target}.txt (one sequence a line, ids separated by spaces) and
// DIR/vocab.{source,target}.txt (one token a line, line i is id i): exactly what is trained on.
void dump_ids(const chainer::datasets::SequencePairData& data, const std::string& dir);

// PAIRS as a dataset of examples (source ids, target ids), int32 vectors of their own lengths.
chainer::datasets::DatasetPtr to_dataset(const chainer::datasets::SequencePairs& pairs);
// seq2seq.py's convert: a batch of (source, target) examples as the fields "xs" and "ys", each a
// list of id vectors on the device (one copy per field to a GPU).
chainer::dataset::Converter sequence_converter();

// Greedy decoding of a batch of sources: the hypotheses without <eos>, one per source; empty
// on a rank that does not decode (the encoder's, in the model-parallel example).
using Translate = std::function<std::vector<std::vector<int32_t>>(const std::vector<chainer::Tensor>& xs)>;

// seq2seq.py's BleuEvaluator: translates the validation pairs of ITERATOR (batch by batch,
// with TRANSLATE) and reports the corpus BLEU as validation/main/bleu (NLTK's corpus_bleu with
// method1 smoothing, as the example's CalculateBleu), and with ERROR_RATES also the token and
// sequence error rates (validation/main/per and validation/main/wer: phonemes and words on
// CMUdict). The corpus sums of every rank of COMM are added before scoring (collective), so the
// score is the whole validation set's however it is split; every rank reports the same values.
class BleuEvaluator : public chainer::training::extensions::Evaluator {
 public:
  BleuEvaluator(std::shared_ptr<chainer::iterators::Iterator> iterator, std::shared_ptr<chainer::Link> target,
                Translate translate, std::shared_ptr<chainermn::Communicator> comm, bool error_rates);
  chainer::Observation evaluate() override;

 private:
  struct Sums;
  BleuEvaluator(std::shared_ptr<Sums> sums, std::shared_ptr<chainer::iterators::Iterator> iterator,
                std::shared_ptr<chainer::Link> target, const Translate& translate,
                std::shared_ptr<chainermn::Communicator> comm, bool error_rates);
  std::shared_ptr<Sums> sums_;
  std::shared_ptr<chainermn::Communicator> comm_;
  bool error_rates_;
};

// An extension, every epoch: translates the first SENTENCES validation pairs of DATA with
// TRANSLATE and prints source, result and reference (seq2seq.py's translate_one) where
// PRINT_HERE. Every rank that takes part in a translation must have it.
std::shared_ptr<chainer::training::Extension> print_translations(const chainer::datasets::SequencePairData& data,
                                                                 int64_t sentences, Translate translate,
                                                                 bool print_here);

// --timing: one JSON line per epoch where PRINT_HERE ({"epoch", "train_s", "tokens",
// "tokens_per_s", "peak_rss_mib"}): the seconds of the epoch's training steps (evaluation and
// snapshots excluded), the source and target tokens (with <eos>) all ranks of COMM trained on,
// counted into *TOKENS by the loss, and this process's peak RSS. Collective.
void add_token_timing(chainer::training::Trainer& trainer, std::shared_ptr<int64_t> tokens,
                      std::shared_ptr<chainermn::Communicator> comm, bool print_here);

// The words of IDS in VOCAB, separated by spaces.
std::string words(const std::vector<std::string>& vocab, const std::vector<int32_t>& ids);

}  // namespace apps::seq2seq
