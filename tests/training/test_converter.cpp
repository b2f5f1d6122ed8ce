// StandardUpdater and Evaluator with a converter (Chainer's converter=): a training loop over
// ragged data (sequences of different lengths) whose every step equals the same arithmetic done
// by hand, the evaluation of such data, and the errors of the converter path.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "datasets/concat_examples.h"
#include "datasets/converter.h"
#include "datasets/iterators/serial_iterator.h"
#include "datasets/list_dataset.h"
#include "datasets/tuple_dataset.h"
#include "nn/functions.h"
#include "nn/optimizers/sgd.h"
#include "training/training.h"

using namespace chainer;
using chainer::dataset::ConvertedBatch;
using chainer::datasets::Example;
using chainer::datasets::ListDataset;
namespace F = chainer::functions;
namespace E = chainer::training::extensions;
using Catch::Contains;
using chainer::optimizers::SGD;

namespace {

// Predicts each sequence's target as w * sum(sequence): one parameter, so every SGD step can be
// computed by hand.
class SequenceSum : public Link {
 public:
  explicit SequenceSum(double w) { w_ = add_param("w", Tensor::full({1}, w)); }
  // The mean squared error of w * sum(x_i) against t_i over the batch.
  Variable loss(const std::vector<Tensor>& xs, const Tensor& t) {
    std::vector<Variable> sums;
    for (const Tensor& x : xs) sums.push_back(F::reshape(F::sum(Variable(x)), {1}));
    const Variable s = F::concat(sums, 0);
    return F::mean_squared_error(F::broadcast_to(w_, {int64_t(xs.size())}) * s, Variable(t));
  }
  double w() const { return w_.data().item<float>(); }

 private:
  Variable w_;
};

// Sequence i has length i % 4 + 1 and values 0.1 (i + 1) k for k = 1.., its target is 0.3 i.
std::vector<Example> sequences(int64_t n) {
  std::vector<Example> out;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<float> x;
    for (int64_t k = 1; k <= i % 4 + 1; ++k) x.push_back(float(0.1 * double(i + 1) * double(k)));
    out.push_back({Tensor::from_vector(x), Tensor::scalar(0.3 * double(i))});
  }
  return out;
}

double sum_of(const Tensor& x) {
  double s = 0;
  for (float v : x.to_vector<float>()) s += v;
  return s;
}

// The seq2seq example's converter: the sequences as a list on the device, the targets stacked.
// (docs/tutorial.md quotes it.)
// [ragged-convert]
chainer::dataset::ConvertedBatch convert(const std::vector<chainer::datasets::Example>& batch, chainer::Device device) {
  std::vector<chainer::Tensor> xs;  // one sequence per example, each of its own length
  std::vector<chainer::datasets::Example> ts;
  for (const chainer::datasets::Example& e : batch) {
    xs.push_back(e.at(0));
    ts.push_back({e.at(1)});
  }
  return chainer::dataset::ConvertedBatch({{"xs", chainer::dataset::to_device(device, xs)},
                                           {"t", chainer::dataset::concat_examples(ts, device).at(0)}});
}
// [end]

}  // namespace

TEST_CASE("converter: a training loop over ragged data equals the same steps computed by hand") {
  const std::vector<Example> data = sequences(7);
  auto model = std::make_shared<SequenceSum>(0.5);
  auto sgd = std::make_shared<SGD>(0.05);
  sgd->setup(model);
  auto iter = std::make_shared<iterators::SerialIterator>(std::make_shared<ListDataset>(data), 3, true, false);
  std::vector<Device> devices_seen;
  auto updater = std::make_shared<training::StandardUpdater>(
      iter, sgd,
      [&](const std::vector<Example>& batch, Device device) {
        devices_seen.push_back(device);
        return convert(batch, device);
      },
      [&](const ConvertedBatch& in) { return model->loss(in.list("xs"), in.tensor("t")); });
  CHECK(updater->converter() != nullptr);

  // By hand: loss = mean_i (w s_i - t_i)^2, dloss/dw = mean_i 2 (w s_i - t_i) s_i, w -= lr dloss/dw,
  // over batches of 3 in order, wrapping around the 7 examples.
  double w = 0.5;
  size_t next = 0;
  for (int step = 0; step < 6; ++step) {
    double grad = 0;
    for (int j = 0; j < 3; ++j, next = (next + 1) % data.size()) {
      const double s = sum_of(data[next][0]), t = data[next][1].item<float>();
      grad += 2 * (w * s - t) * s / 3;
    }
    w -= 0.05 * grad;
    updater->update();
    CAPTURE(step);
    CHECK(model->w() == Approx(w).epsilon(1e-5));
  }
  CHECK(updater->iteration() == 6);
  CHECK(updater->epoch() == 2);  // 18 examples of 7: two epochs ended
  CHECK(devices_seen == std::vector<Device>(6, Device::cpu()));
  CHECK(updater->cuda_graph_step().captures() == 0);  // the converter path runs eagerly
}

TEST_CASE("converter: padded batches through concat_examples reach the target's forward_args") {
  // A target whose forward_args takes (x padded with 0, t): the loss is mean_i (w sum(x_i) - t_i)^2 again.
  struct Padded : SequenceSum {
    using SequenceSum::SequenceSum;
    std::vector<Variable> forward_args(const std::vector<Variable>& args) override {
      std::vector<Tensor> rows;
      for (int64_t i = 0; i < args.at(0).shape()[0]; ++i) rows.push_back(args[0].data()[i]);
      return {loss(rows, args.at(1).data())};
    }
  };
  const std::vector<Example> data = sequences(4);
  auto padded = std::make_shared<Padded>(0.5);
  auto by_list = std::make_shared<SequenceSum>(0.5);
  auto sgd_a = std::make_shared<SGD>(0.05), sgd_b = std::make_shared<SGD>(0.05);
  sgd_a->setup(padded);
  sgd_b->setup(by_list);
  auto dataset = std::make_shared<ListDataset>(data);
  training::StandardUpdater a(std::make_shared<iterators::SerialIterator>(dataset, 4, true, false), sgd_a,
                              [](const std::vector<Example>& b, Device d) { return dataset::concat_examples(b, d, 0); },
                              nullptr);
  training::StandardUpdater b(std::make_shared<iterators::SerialIterator>(dataset, 4, true, false), sgd_b, convert,
                              [&](const ConvertedBatch& in) { return by_list->loss(in.list("xs"), in.tensor("t")); });
  for (int step = 0; step < 3; ++step) {
    a.update();
    b.update();
  }
  CHECK(padded->w() == Approx(by_list->w()).epsilon(1e-6));  // padding with 0 leaves the sums as they are
  CHECK(padded->w() != 0.5);
}

TEST_CASE("converter: errors name the updater or evaluator and the field") {
  auto model = std::make_shared<SequenceSum>(0.5);
  auto sgd = std::make_shared<SGD>(0.05);
  sgd->setup(model);
  auto iter = std::make_shared<iterators::SerialIterator>(std::make_shared<ListDataset>(sequences(4)), 2);
  // A list field cannot go through the target's forward_args.
  training::StandardUpdater no_loss(iter, sgd, convert, nullptr);
  REQUIRE_THROWS_WITH(no_loss.update(), Contains("StandardUpdater: field 0 ('xs') of the converted batch is a list of "
                                                 "tensors, which the target's forward_args cannot take"));
  REQUIRE_THROWS_WITH(training::StandardUpdater(iter, sgd, dataset::Converter{}, nullptr),
                      Contains("StandardUpdater: the converter is null"));
  REQUIRE_THROWS_WITH(E::Evaluator(iter, model, dataset::Converter{}, nullptr),
                      Contains("Evaluator: the converter is null"));
  auto test_iter = std::make_shared<iterators::SerialIterator>(std::make_shared<ListDataset>(sequences(4)), 2, false);
  E::Evaluator evaluator(test_iter, model, convert, nullptr, "val");
  REQUIRE_THROWS_WITH(evaluator.evaluate(), Contains("Evaluator 'val': field 0 ('xs') of the converted batch is a list"));
  // Without a converter the default path stacks, and says why it cannot.
  training::StandardUpdater plain(iter, sgd);
  REQUIRE_THROWS_WITH(plain.update(), Contains("cannot be stacked") && Contains("converter"));
}

TEST_CASE("converter: Evaluator reports the mean of the per-batch losses over ragged data") {
  const std::vector<Example> data = sequences(5);
  auto model = std::make_shared<SequenceSum>(0.7);
  auto iter = std::make_shared<iterators::SerialIterator>(std::make_shared<ListDataset>(data), 2, false, false);
  E::Evaluator evaluator(iter, model, convert, [&](const ConvertedBatch& in) {
    report({{"loss", model->loss(in.list("xs"), in.tensor("t"))}}, model.get());
  });
  // By hand: batches {0, 1}, {2, 3}, {4}; each batch's mean squared error, then their mean.
  double total = 0;
  for (const std::vector<size_t>& batch : {std::vector<size_t>{0, 1}, {2, 3}, {4}}) {
    double mse = 0;
    for (size_t i : batch) {
      const double e = 0.7 * sum_of(data[i][0]) - data[i][1].item<float>();
      mse += e * e / double(batch.size());
    }
    total += mse / 3;
  }
  for (int run = 0; run < 2; ++run) {  // evaluate() resets the iterator: the same result again
    const Observation result = evaluator.evaluate();
    REQUIRE(result.count("validation/main/loss") == 1);
    CHECK(result.at("validation/main/loss").value() == Approx(total).epsilon(1e-5));
    CHECK(evaluator.last_example_count() == 5);
  }
}

TEST_CASE("converter: a Trainer runs the converter path with the Evaluator as an extension") {
  auto model = std::make_shared<SequenceSum>(0.0);
  auto sgd = std::make_shared<SGD>(0.05);
  sgd->setup(model);
  auto train = std::make_shared<ListDataset>(sequences(8));
  const auto loss = [&](const ConvertedBatch& in) { return model->loss(in.list("xs"), in.tensor("t")); };
  auto train_iter = std::make_shared<iterators::SerialIterator>(train, 4, true, true, 3);
  // [ragged-updater]
  auto updater = std::make_shared<chainer::training::StandardUpdater>(
      train_iter, sgd, convert, [&](const chainer::dataset::ConvertedBatch& in) {
        chainer::Variable l = model->loss(in.list("xs"), in.tensor("t"));  // xs: a list, t: one tensor
        chainer::report({{"loss", l}}, model.get());
        return l;
      });
  // [end]
  const auto out = std::filesystem::temp_directory_path() / ("chainer_test_converter_" + std::to_string(getpid()));
  training::Trainer trainer(updater, training::IntervalTrigger(5, training::Unit::Epoch), out.string());
  auto evaluator = std::make_shared<E::Evaluator>(std::make_shared<iterators::SerialIterator>(train, 3, false, false),
                                                  model, convert, [&](const ConvertedBatch& in) {
                                                    report({{"loss", loss(in)}}, model.get());
                                                  });
  trainer.extend(evaluator);
  const double before = evaluator->evaluate().at("validation/main/loss").value();
  trainer.run();
  CHECK(updater->iteration() == 10);
  CHECK(trainer.observation().count("validation/main/loss") == 1);
  CHECK(trainer.observation().at("validation/main/loss").value() < before / 2);  // it learned
  std::filesystem::remove_all(out);
}

TEST_CASE("converter: micro_batches converts each micro-batch's examples apart; the update is the whole batch's") {
  // Batches of 4 ragged sequences in 1 (the reference), 2 (2, 2) and 3 micro-batches (2, 1, 1).
  const auto dataset = std::make_shared<ListDataset>(sequences(8));
  std::vector<double> w;
  std::vector<std::vector<size_t>> converted;  // the batch size each converter call saw, per run
  for (int micro : {1, 2, 3}) {
    auto model = std::make_shared<SequenceSum>(0.5);
    auto sgd = std::make_shared<SGD>(0.05);
    sgd->setup(model);
    converted.emplace_back();
    training::UpdaterOptions options;
    options.micro_batches = micro;
    training::StandardUpdater updater(
        std::make_shared<iterators::SerialIterator>(dataset, 4, true, false), sgd,
        [&](const std::vector<Example>& b, Device d) {
          converted.back().push_back(b.size());
          return convert(b, d);
        },
        [&](const ConvertedBatch& in) { return model->loss(in.list("xs"), in.tensor("t")); }, options);
    for (int step = 0; step < 4; ++step) updater.update();
    CHECK(updater.epoch_detail() == 2.0);
    w.push_back(model->w());
  }
  CHECK(converted[0] == std::vector<size_t>(4, 4));
  CHECK(converted[1] == std::vector<size_t>{2, 2, 2, 2, 2, 2, 2, 2});
  CHECK(converted[2] == std::vector<size_t>{2, 1, 1, 2, 1, 1, 2, 1, 1, 2, 1, 1});
  CHECK(w[0] != 0.5);
  CHECK(w[1] == Approx(w[0]).epsilon(1e-6));
  CHECK(w[2] == Approx(w[0]).epsilon(1e-6));
}
