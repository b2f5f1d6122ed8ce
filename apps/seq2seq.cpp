// ChainerMN's seq2seq.py in C++: an LSTM encoder-decoder (apps/seq2seq_model.h) trained data
// parallel, each process on its share of the training pairs, gradients averaged over all by the
// multi-node optimizer; after every epoch the corpus BLEU of greedy translations of the
// validation pairs (each process translates its share; the corpus sums are added), and on rank 0
// a few translations, the log and the report of main/loss, main/perp and validation/main/bleu.
//   mpiexec -n 2 build/apps/seq2seq [--data bible|cmudict] [-b 64] [-e 15] [-u 1024] [-l 3]
//   build/apps/seq2seq --data cmudict --limit 2000 -u 32 -l 1 -e 2     # a small, fast run
// docs/seq2seq.md has the data, the commands and the results.
#include <iostream>
#include <string>

#include "seq2seq_common.h"
#include "seq2seq_model.h"

namespace E = chainer::training::extensions;
namespace S = apps::seq2seq;

namespace {

const std::string kUsage = std::string(R"(usage: [mpiexec -n N] seq2seq [options]
Trains seq2seq.py's LSTM encoder-decoder (data parallel: each process its share of the pairs)
on the Bible (English to Spanish) or CMUdict (spelling to phonemes), and reports BLEU.
)") + S::usage(true);

int run(int argc, char** argv) {
  S::Options o = S::parse(argc, argv, kUsage, true);
  o.report_columns = {"iteration", "main/loss", "main/perp", "validation/main/bleu"};
  if (o.cmudict()) o.report_columns.insert(o.report_columns.end(), {"validation/main/per", "validation/main/wer"});
  auto comm = apps::create_communicator(o.communicator, o.gpu);
  const bool root = comm->rank() == 0;
  const chainer::Device device = apps::choose_device(o.gpu, *comm);
  apps::set_compute(o);

  // Rank 0 reads the data; the vocabularies go to every rank, the pairs are scattered.
  apps::set_stage("reading the data");
  const std::string processes = apps::process_table(*comm);
  chainer::datasets::SequencePairData data;
  if (root) {
    std::cout << "# Num process (COMM_WORLD): " << comm->size() << "\n# processes: " << processes << "\n# Using "
              << comm->name() << " communicator\n# unit: " << o.unit << "\n# layer: " << o.layer
              << "\n# Minibatch-size: " << o.batchsize << "\n# epoch: " << o.epoch << "\n# device: " << device.str()
              << "\n# threads per process: " << chainer::num_threads() << "\n"
              << std::flush;
    data = S::read_data(o);
    if (!o.dump_ids.empty()) S::dump_ids(data, o.dump_ids);
  }
  data.source_vocab = comm->bcast_obj(data.source_vocab);
  data.target_vocab = comm->bcast_obj(data.target_vocab);
  const int64_t n_train = comm->bcast_obj<int64_t>(root ? int64_t(data.train.size()) : 0);
  auto train = chainermn::scatter_dataset(root ? S::to_dataset(data.train) : nullptr, comm, 0, true, uint64_t(o.seed));
  // Every validation pair counts once (the BLEU sums are added over the ranks).
  auto validation = chainermn::scatter_dataset(root ? S::to_dataset(data.validation) : nullptr, comm, 0, false, 0,
                                               /*force_equal_length=*/false);
  apps::check_batch("-b/--batchsize", o.batchsize, int64_t(train->size()), n_train, comm->size());

  apps::set_stage("building the model");
  // Dropout draws other masks on every rank; rank 0's initial parameters are broadcast to all.
  chainer::random::seed(uint64_t(o.seed) + uint64_t(comm->rank()));
  auto model = std::make_shared<S::Seq2seq>(o.layer, int64_t(data.source_vocab.size()),
                                            int64_t(data.target_vocab.size()), o.unit);
  model->to_device(device);
  auto optimizer = chainermn::create_multi_node_optimizer(std::make_shared<chainer::optimizers::Adam>(), comm);
  optimizer->setup(model);
  apps::set_precision(*optimizer, o);

  auto train_iter = std::make_shared<chainer::iterators::SerialIterator>(train, o.batchsize, true, true,
                                                                         uint64_t(o.seed) + uint64_t(comm->rank()));
  // Source and target tokens trained on, for --timing (the decoder's with <eos>).
  auto tokens = std::make_shared<int64_t>(0);
  auto updater = std::make_shared<chainer::training::StandardUpdater>(
      train_iter, optimizer, S::sequence_converter(), [model, tokens](const chainer::dataset::ConvertedBatch& batch) {
        for (const auto& x : batch.list("xs")) *tokens += x.numel();
        for (const auto& y : batch.list("ys")) *tokens += y.numel() + 1;
        return model->loss(batch.list("xs"), batch.list("ys"));
      });
  const int64_t max_length = o.max_length;
  const S::Translate translate = [model, max_length](const std::vector<chainer::Tensor>& xs) {
    return model->translate(xs, max_length);
  };
  // The example's BleuEvaluator translates 100 sentences at a time.
  auto validation_iter = std::make_shared<chainer::iterators::SerialIterator>(validation, 100, false, false);
  auto evaluator = chainermn::create_multi_node_evaluator(
      std::make_shared<S::BleuEvaluator>(validation_iter, model, translate, comm, o.cmudict()), comm);
  auto checkpointer = apps::make_checkpointer("seq2seq", o, comm);
  if (checkpointer) checkpointer->set_scatter(n_train, true, uint64_t(o.seed));
  apps::train(updater, evaluator, o, *comm, false, {}, checkpointer, [&](chainer::training::Trainer& trainer) {
    if (root && o.translations > 0) trainer.extend(S::print_translations(data, o.translations, translate, true));
    if (o.timing) S::add_token_timing(trainer, tokens, comm, root);
  });
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return apps::app_main("seq2seq", argc, argv, run); }
