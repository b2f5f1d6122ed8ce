// Training on a CUDA device: the caching allocator in a steady step, whole-step CUDA graphs
// against eager steps, resuming across devices, and a real MNIST epoch. Skipped (exit 77)
// without a device: tests/cuda_main.cpp.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "core/util/config.h"
#include "core/device/cuda.h"
#include "core/util/random.h"
#include "datasets/concat_examples.h"
#include "datasets/converter.h"
#include "datasets/mnist.h"
#include "datasets/iterators/serial_iterator.h"
#include "datasets/tuple_dataset.h"
#include "nn/functions.h"
#include "nn/links/classifier.h"
#include "nn/links/linear.h"
#include "nn/optimizer_hooks.h"
#include "nn/optimizers/adam.h"
#include "nn/sequential.h"
#include "training/training.h"

using namespace chainer;
namespace F = chainer::functions;
namespace L = chainer::links;

namespace {

const Device kGpu = Device::cuda(0);

// Features and labels a small MLP learns (the label is the group of features with the largest sum).
std::shared_ptr<const datasets::TupleDataset> make_dataset(int64_t n, uint64_t seed) {
  Generator gen(seed);
  Tensor x = random::normal({n, 12}, 0.0, 1.0, DType::Float32, &gen);
  const std::vector<float> xv = x.to_vector<float>();
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double s[3] = {0, 0, 0};
    for (int64_t j = 0; j < 12; ++j) s[j % 3] += xv[size_t(i * 12 + j)];
    t[size_t(i)] = int32_t(std::max_element(s, s + 3) - s);
  }
  return std::make_shared<datasets::TupleDataset>(std::vector<Tensor>{x, Tensor::from_vector(t)});
}

// Linear - ReLU - dropout (its own generator, so two models draw the same masks) - Linear. The
// input sizes are given, so the weights are drawn in the constructor, right after Run's seed: a
// lazy Linear would draw them at its first call from the global generator, which the first of
// two models to step would have advanced for the second.
struct Net : Chain {
  std::shared_ptr<L::Linear> l1, l2;
  Generator gen{5};
  Net() {
    l1 = add_link("l1", std::make_shared<L::Linear>(12, 32));
    l2 = add_link("l2", std::make_shared<L::Linear>(32, 3));
  }
  Variable forward(const Variable& x) override { return (*l2)(F::dropout(l1->forward_relu(x), 0.25, &gen)); }
};

struct Run {
  std::shared_ptr<L::Classifier> model;
  std::shared_ptr<optimizers::Adam> adam;
  std::shared_ptr<iterators::SerialIterator> iter;
  std::shared_ptr<training::StandardUpdater> updater;
  Run(datasets::DatasetPtr data, int64_t batch, Device device, bool graphs, bool clip = false, bool repeat = true,
      int micro_batches = 1) {
    random::seed(0);
    model = std::make_shared<L::Classifier>(std::make_shared<Net>());
    model->to_device(device);
    adam = std::make_shared<optimizers::Adam>();
    adam->setup(model);
    if (clip) adam->add_hook(std::make_shared<optimizer_hooks::GradientClipping>(0.5));
    iter = std::make_shared<iterators::SerialIterator>(data, batch, repeat, true, 3);
    updater = std::make_shared<training::StandardUpdater>(
        iter, adam, training::StandardUpdater::LossFunction{},
        training::UpdaterOptions{.device = std::nullopt, .cuda_graph = graphs, .micro_batches = micro_batches});
  }
  // One iteration; returns the reported loss (read on the host, outside the step).
  double step() {
    if (!iter->has_next()) iter->reset();  // a non-repeating iterator starts its epoch again
    Reporter reporter;
    reporter.add_observer("main", model.get());
    Observation observation;
    {
      Reporter::Scope scope(reporter, observation);
      updater->update();
    }
    return observation.at("main/loss").value();
  }
  std::vector<std::vector<float>> params() const {
    std::vector<std::vector<float>> out;
    for (const auto& [name, p] : model->namedparams()) out.push_back(p.data().to_vector<float>());
    return out;
  }
};

}  // namespace

TEST_CASE("a steady-state training step calls cudaMalloc zero times; empty_cache returns the cache") {
  {
    Run run(make_dataset(400, 1), 100, kGpu, /*graphs=*/false);
    for (int i = 0; i < 3; ++i) run.step();  // warm-up: parameters, optimizer state, handles
    const cuda::MemoryStats before = cuda::memory_stats();
    for (int i = 0; i < 12; ++i) run.step();
    const cuda::MemoryStats after = cuda::memory_stats();
    CHECK(after.device_mallocs == before.device_mallocs);
    CHECK(after.allocations > before.allocations);
    CHECK(after.cache_hits - before.cache_hits == after.allocations - before.allocations);
  }
  cuda::synchronize();
  const cuda::MemoryStats full = cuda::memory_stats();
  REQUIRE(full.cached_bytes > 0);
  cuda::empty_cache();
  const cuda::MemoryStats emptied = cuda::memory_stats();
  CHECK(emptied.reserved_bytes < full.reserved_bytes);
  CHECK(emptied.cached_bytes == 0);
  CHECK(emptied.device_frees > full.device_frees);
}

TEST_CASE("CUDA-graph steps equal eager steps bit for bit, through a smaller last batch") {
  for (bool clip : {false, true}) {
    INFO("GradientClipping " << clip);
    // 250 examples in batches of 100, not repeating (a repeating iterator fills the last batch
    // from the next epoch): every epoch ends with a batch of 50, a second graph.
    auto data = make_dataset(250, 2);
    Run eager(data, 100, kGpu, false, clip, false), graphed(data, 100, kGpu, true, clip, false);
    for (int i = 0; i < 50; ++i) {
      INFO("iteration " << i);
      const double le = eager.step(), lg = graphed.step();
      REQUIRE(le == lg);
      REQUIRE(eager.params() == graphed.params());
    }
    const training::CudaGraphStep& g = graphed.updater->cuda_graph_step();
    CHECK(g.enabled());
    CHECK(g.captures() == 2);  // the full batch and the last one
    CHECK(g.replays() > 35);
    CHECK(graphed.adam->t() == eager.adam->t());
    // The state the graph advanced is the optimizer's: Adam's moments match too.
    for (const auto& [name, p] : eager.model->namedparams())
      for (const auto& [key, t] : eager.adam->state(name))
        CHECK(t.to_vector<float>() == graphed.adam->state(name).at(key).to_vector<float>());
  }
}

TEST_CASE("CUDA-graph steps with micro_batches equal eager ones bit for bit; one graph holds the accumulated step") {
  // Batches of 100 in 3 micro-batches (34, 33, 33); the reported loss is their weighted mean,
  // computed on the device inside the graph and rewritten by every replay.
  auto data = make_dataset(400, 6);
  Run eager(data, 100, kGpu, false, false, true, 3), graphed(data, 100, kGpu, true, false, true, 3);
  for (int i = 0; i < 10; ++i) {
    INFO("iteration " << i);
    const double le = eager.step(), lg = graphed.step();
    REQUIRE(le == lg);
    REQUIRE(eager.params() == graphed.params());
  }
  const training::CudaGraphStep& g = graphed.updater->cuda_graph_step();
  CHECK(g.enabled());
  CHECK(g.captures() == 1);
  // Eager while Adam's state appears (steps 1 and 2: two signatures), captured at 3, replayed after.
  CHECK(g.replays() == 7);
  CHECK(graphed.adam->t() == 10);
  const cuda::LaunchCounts launched = cuda::launch_counts();
  graphed.step();
  CHECK(cuda::launch_counts().graphs - launched.graphs == 1);
}

TEST_CASE("graph replays allocate nothing and launch one graph per step") {
  Run run(make_dataset(400, 3), 100, kGpu, true);
  for (int i = 0; i < 6; ++i) run.step();
  REQUIRE(run.updater->cuda_graph_step().captures() == 1);
  const cuda::MemoryStats before = cuda::memory_stats();
  const cuda::LaunchCounts launched = cuda::launch_counts();
  for (int i = 0; i < 10; ++i) run.step();
  CHECK(cuda::memory_stats().device_mallocs == before.device_mallocs);
  CHECK(cuda::launch_counts().graphs - launched.graphs == 10);
}

TEST_CASE("a step that reads a value on the host runs eagerly, with the same results") {
  auto data = make_dataset(300, 4);
  Run eager(data, 100, kGpu, false), graphed(data, 100, kGpu, true);
  double seen = 0;
  auto reading = [&](Run& run) {
    return [&, model = run.model](const std::vector<Variable>& in) {
      Variable loss = model->forward_args(in)[0];
      seen += loss.item();  // a host read inside the step
      return loss;
    };
  };
  eager.updater = std::make_shared<training::StandardUpdater>(eager.iter, eager.adam, reading(eager),
                                                              training::UpdaterOptions{.device = std::nullopt, .cuda_graph = false});
  graphed.updater = std::make_shared<training::StandardUpdater>(graphed.iter, graphed.adam, reading(graphed),
                                                                training::UpdaterOptions{.device = std::nullopt, .cuda_graph = true});
  for (int i = 0; i < 8; ++i) REQUIRE(eager.step() == graphed.step());
  CHECK_FALSE(graphed.updater->cuda_graph_step().enabled());
  CHECK(graphed.updater->cuda_graph_step().captures() == 0);
  CHECK(eager.params() == graphed.params());
}

TEST_CASE("a run trained on the GPU resumes on the CPU, and the reverse") {
  auto data = make_dataset(300, 5);
  for (const auto& [first, second] : {std::pair{kGpu, Device::cpu()}, std::pair{Device::cpu(), kGpu}}) {
    INFO("from " << first.str() << " to " << second.str());
    Run straight(data, 100, first, true), resumed(data, 100, second, true);
    for (int i = 0; i < 7; ++i) straight.step();
    Serializer saved = Serializer::writer();
    straight.updater->serialize(saved);
    Serializer reader = Serializer::reader(saved.entries());
    resumed.updater->serialize(reader);
    for (const auto& [name, t] : saved.entries()) CHECK(t.device().is_cpu());  // snapshots are device-independent
    for (const auto& [name, p] : resumed.model->namedparams()) CHECK(p.data().device() == second);
    CHECK(resumed.adam->t() == 7);
    CHECK(resumed.iter->epoch_detail() == straight.iter->epoch_detail());
    // Dropout off from here (its generator is model state outside the snapshot), so both
    // continue from the same state; they differ only by float rounding across devices.
    config::TrainScope test_mode(false);
    for (int i = 0; i < 5; ++i) {
      INFO("step " << i << " after the resume");
      const double a = straight.step(), b = resumed.step();
      CHECK(b == Approx(a).epsilon(1e-4));
    }
    const auto pa = straight.params(), pb = resumed.params();
    for (size_t k = 0; k < pa.size(); ++k)
      for (size_t j = 0; j < pa[k].size(); ++j) REQUIRE(pb[k][j] == Approx(pa[k][j]).epsilon(1e-4).margin(1e-6));
  }
}

TEST_CASE("a Sequential moves to the GPU with its links and computes what it computes on the CPU") {
  random::seed(3);
  auto make = [] {
    return std::make_shared<Sequential>(std::make_shared<L::Linear>(12, 8), F::relu, std::make_shared<L::Linear>(8, 3));
  };
  auto cpu = make(), gpu = make();
  Serializer s = Serializer::writer();
  cpu->serialize(s);
  Serializer r = Serializer::reader(s.entries());
  gpu->serialize(r);
  gpu->to_gpu(0);
  for (const auto& [name, p] : gpu->namedparams()) CHECK(p.data().device() == kGpu);
  const Tensor x = random::normal({5, 12});
  const Variable yc = F::sum(cpu->forward(Variable(x))), yg = F::sum(gpu->forward(Variable(x.to(kGpu))));
  CHECK(yg.item() == Approx(yc.item()).epsilon(1e-5));
  yc.backward();
  yg.backward();
  const auto pc = cpu->namedparams(), pg = gpu->namedparams();
  for (size_t k = 0; k < pc.size(); ++k) {
    INFO(pc[k].first);
    const std::vector<float> gc = pc[k].second.grad().to_vector<float>(), gg = pg[k].second.grad().to_vector<float>();
    for (size_t j = 0; j < gc.size(); ++j) REQUIRE(gg[j] == Approx(gc[j]).epsilon(1e-4).margin(1e-6));
  }
}

TEST_CASE("ragged batches on the GPU: to_device of sequences and padded concat_examples equal the CPU's") {
  // Sentences of token ids and of features, uneven and unsorted (one empty), as a seq2seq batch.
  Generator gen(11);
  std::vector<Tensor> ids, feats;
  std::vector<datasets::Example> batch;
  for (int64_t n : {5, 1, 0, 7, 3}) {
    std::vector<int32_t> v(static_cast<size_t>(n));
    for (auto& t : v) t = int32_t(gen.below(100));
    ids.push_back(Tensor::from_vector(v));
    feats.push_back(random::normal({n, 4}, 0.0, 1.0, DType::Float32, &gen));
    batch.push_back({feats.back(), ids.back()});
  }
  const auto same = [](const std::vector<Tensor>& want, const std::vector<Tensor>& got, Device device) {
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      INFO("array " << i);
      CHECK(got[i].device() == device);
      CHECK(got[i].dtype() == want[i].dtype());
      CHECK(got[i].shape() == want[i].shape());
      const Tensor back = got[i].to(Device::cpu());
      if (want[i].dtype() == DType::Int32) CHECK(back.to_vector<int32_t>() == want[i].to_vector<int32_t>());
      else CHECK(back.to_vector<float>() == want[i].to_vector<float>());
    }
  };
  for (const auto* xs : {&ids, &feats}) {
    const std::vector<Tensor> on_gpu = dataset::to_device(kGpu, *xs);
    same(*xs, on_gpu, kGpu);
    same(*xs, dataset::to_device(Device::cpu(), on_gpu), Device::cpu());
    same(on_gpu, dataset::to_device(std::nullopt, on_gpu), kGpu);  // unset: left where they are
  }
  std::vector<Tensor> mixed{ids[0], feats[3], ids[4]};  // of two dtypes: each still arrives whole
  same(mixed, dataset::to_device(kGpu, mixed), kGpu);

  const dataset::Padding padding{0.0, -1.0};
  const std::vector<Tensor> want = dataset::concat_examples(batch, Device::cpu(), padding);
  same(want, dataset::concat_examples(batch, kGpu, padding), kGpu);
  CHECK(want[1].shape() == Shape{5, 7});
  std::vector<datasets::Example> batch_gpu;
  for (const auto& e : batch) batch_gpu.push_back({e[0].to(kGpu), e[1].to(kGpu)});
  same(want, dataset::concat_examples(batch_gpu, std::nullopt, padding), kGpu);  // padded on the GPU itself
}

TEST_CASE("the tutorial model learns MNIST on the GPU") {
  const char* dir = std::getenv("MNIST_DIR");
  REQUIRE(dir);
  auto [train, test] = datasets::get_mnist(dir);
  auto train_gpu = datasets::to_device(train, kGpu), test_gpu = datasets::to_device(test, kGpu);
  random::seed(0);
  struct MLP : Chain {
    std::shared_ptr<L::Linear> l1, l2, l3;
    MLP() {
      l1 = add_link("l1", std::make_shared<L::Linear>(1000));
      l2 = add_link("l2", std::make_shared<L::Linear>(1000));
      l3 = add_link("l3", std::make_shared<L::Linear>(10));
    }
    Variable forward(const Variable& x) override { return (*l3)(F::relu((*l2)(F::relu((*l1)(x))))); }
  };
  auto model = std::make_shared<L::Classifier>(std::make_shared<MLP>());
  model->to_gpu(0);
  auto adam = std::make_shared<optimizers::Adam>();
  adam->setup(model);
  auto updater = std::make_shared<training::StandardUpdater>(
      std::make_shared<iterators::SerialIterator>(train_gpu, 100, true, true, 0), adam);
  training::Trainer trainer(updater, {1, training::Unit::Epoch}, "result_cuda_mnist");
  auto evaluator = std::make_shared<training::extensions::Evaluator>(
      std::make_shared<iterators::SerialIterator>(test_gpu, 100, false, false), model);
  trainer.extend(evaluator);
  trainer.run();
  const Observation result = evaluator->evaluate();
  CHECK(result.at("validation/main/accuracy").value() > 0.95);
  CHECK(updater->cuda_graph_step().replays() > 500);
  CHECK(adam->t() == 600);
}
