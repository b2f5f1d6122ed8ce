// ChainerMN's seq2seq_mp1.py in C++: the seq2seq model cut between exactly two processes (model
// parallel; apps/seq2seq_model.h): the embeddings of the sources and the encoder LSTM on rank 0,
// the target embeddings, the decoder LSTM and the output layer on rank 1. The encoder's final
// states go to the decoder, and their gradients come back, through
// create_multi_node_n_step_rnn. Rank 0 reads the data and both ranks hold it, iterating the
// same batches; each rank trains its own parameters with its own Adam. Rank 1 holds the loss, so
// it computes BLEU and writes the log, the report and the translations.
//   mpiexec -n 2 build/apps/seq2seq_mp1 [--data bible|cmudict] [-b 64] [-e 15] [-u 1024] [-l 3]
#include <iostream>
#include <string>

#include "seq2seq_common.h"
#include "seq2seq_model.h"

namespace S = apps::seq2seq;
using chainer::Error;

namespace {

const std::string kUsage = std::string(R"(usage: mpiexec -n 2 seq2seq_mp1 [options]
Trains seq2seq.py's LSTM encoder-decoder split across exactly two processes (model parallel:
the encoder on rank 0, the decoder on rank 1) on the Bible or CMUdict, and reports BLEU.
)") + S::usage(false);

int run(int argc, char** argv) {
  S::Options o = S::parse(argc, argv, kUsage, false);
  o.report_columns = {"iteration", "main/loss", "main/perp", "validation/main/bleu"};
  if (o.cmudict()) o.report_columns.insert(o.report_columns.end(), {"validation/main/per", "validation/main/wer"});
  o.report_rank = 1;
  auto comm = chainermn::create_communicator("naive");
  if (comm->size() != 2)
    throw Error(chainer::str("seq2seq_mp1 runs on exactly 2 processes (mpiexec -n 2: the encoder on rank 0, the "
                             "decoder on rank 1), got ", comm->size()));
  const bool encoder_rank = comm->rank() == 0;
  const chainer::Device device = apps::choose_device(o.gpu, *comm);
  apps::set_compute(o);

  apps::set_stage("reading the data");
  chainer::datasets::SequencePairData data;
  if (encoder_rank) {
    std::cout << "# Num process (COMM_WORLD): 2 (model parallel: the encoder on rank 0, the decoder on rank 1)"
              << "\n# unit: " << o.unit << "\n# layer: " << o.layer << "\n# Minibatch-size: " << o.batchsize
              << "\n# epoch: " << o.epoch << "\n# device: " << device.str() << "\n"
              << std::flush;
    data = S::read_data(o);
    if (!o.dump_ids.empty()) S::dump_ids(data, o.dump_ids);
  }
  data = S::bcast_data(data, *comm);
  auto train = S::to_dataset(data.train);
  auto validation = S::to_dataset(data.validation);
  apps::check_batch("-b/--batchsize", o.batchsize, int64_t(train->size()), int64_t(train->size()), 1);

  apps::set_stage("building the model");
  chainer::random::seed(uint64_t(o.seed) + uint64_t(comm->rank()));
  std::shared_ptr<S::Encoder> encoder;
  std::shared_ptr<S::Decoder> decoder;
  std::shared_ptr<chainer::Chain> model;
  if (encoder_rank) model = encoder = std::make_shared<S::Encoder>(comm, o.layer, int64_t(data.source_vocab.size()), o.unit);
  else model = decoder = std::make_shared<S::Decoder>(comm, o.layer, int64_t(data.target_vocab.size()), o.unit);
  model->to_device(device);
  auto optimizer = std::make_shared<chainer::optimizers::Adam>();
  optimizer->setup(model);
  apps::set_precision(*optimizer, o, /*scale_loss=*/false);  // the loss lives on one rank, or hooks reduce

  // Both ranks draw the same batches: the encoder's sources and the decoder's targets pair up.
  auto train_iter = chainermn::create_synchronized_iterator(
      std::make_shared<chainer::iterators::SerialIterator>(train, o.batchsize, true, true, uint64_t(o.seed)), comm);
  auto tokens = std::make_shared<int64_t>(0);
  auto updater = std::make_shared<chainer::training::StandardUpdater>(
      train_iter, optimizer, S::sequence_converter(),
      [encoder, decoder, tokens](const chainer::dataset::ConvertedBatch& batch) {
        if (encoder) {
          for (const auto& x : batch.list("xs")) *tokens += x.numel();
          return encoder->loss(batch.list("xs"));  // the delegate: its backward receives the states' gradients
        }
        for (const auto& y : batch.list("ys")) *tokens += y.numel() + 1;
        return decoder->loss(batch.list("ys"));
      },
      apps::kEagerSteps);
  const int64_t max_length = o.max_length;
  const S::Translate translate = [encoder, decoder, max_length](const std::vector<chainer::Tensor>& xs) {
    if (encoder) {
      encoder->translate(xs);
      return std::vector<std::vector<int32_t>>{};
    }
    return decoder->translate(int64_t(xs.size()), max_length);
  };
  // Both ranks evaluate the same batches (the encoder's translate meets the decoder's); the
  // decoder's BLEU sums, added over the two ranks, are the whole corpus's.
  auto validation_iter = std::make_shared<chainer::iterators::SerialIterator>(validation, 100, false, false);
  auto evaluator = std::make_shared<S::BleuEvaluator>(validation_iter, model, translate, comm, o.cmudict());
  apps::train(updater, evaluator, o, *comm, false, {}, nullptr, [&](chainer::training::Trainer& trainer) {
    if (o.translations > 0)
      trainer.extend(S::print_translations(data, o.translations, translate, !encoder_rank));
    if (o.timing) S::add_token_timing(trainer, tokens, comm, !encoder_rank);
  });
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return apps::app_main("seq2seq_mp1", argc, argv, run); }
