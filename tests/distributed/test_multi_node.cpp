// The multi-node layer above the communicator: scatter_dataset / scatter_index, the multi-node
// optimizer (broadcast semantics, the bucketed reducer, equivalence with one big batch) and the
// multi-node evaluators. Run under mpiexec with 1 to 4 processes; every rank runs the same test
// cases in the same order. Checks between collectives use CHECK (never REQUIRE), so one rank's
// failure cannot leave the others waiting in a collective.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/ops/ops.h"
#include "core/ops/update_ops.h"
#include "distributed/runtime/mpi_check.h"
#include "core/util/random.h"
#include "dataset_files.h"
#include "datasets/dataset_description.h"
#include "datasets/image_dataset.h"
#include "datasets/image_io.h"
#include "datasets/preprocessed_image_dataset.h"
#include "datasets/iterators/serial_iterator.h"
#include "datasets/sub_dataset.h"
#include "datasets/tuple_dataset.h"
#include "distributed/communicators/communicator.h"
#include "distributed/extensions/generic_multi_node_evaluator.h"
#include "distributed/reducer/gradient_reducer.h"
#include "distributed/extensions/multi_node_evaluator.h"
#include "distributed/runtime/mpi_runtime.h"
#include "distributed/optimizers/multi_node_optimizer.h"
#include "distributed/datasets/scatter_dataset.h"
#include "distributed/runtime/shared_segment.h"
#include "nn/functions.h"
#include "nn/links/classifier.h"
#include "nn/links/linear.h"
#include "nn/optimizer_hooks.h"
#include "nn/optimizers/adam.h"
#include "nn/optimizers/momentum_sgd.h"
#include "nn/optimizers/rmsprop_graves.h"
#include "nn/optimizers/sgd.h"
#include "nn/optimizers/smorms3.h"
#include "training/extensions/evaluator.h"
#include "training/extensions/log_report.h"
#include "training/trainer.h"
#include "training/updater.h"

using namespace chainer;
namespace F = chainer::functions;
namespace L = chainer::links;
namespace E = chainer::training::extensions;
namespace mn = chainermn;

// CAPTURE prints a reduction by its name.
namespace Catch {
template <>
struct StringMaker<chainermn::Reduction> {
  static std::string convert(chainermn::Reduction r) { return chainermn::reduction_name(r); }
};
}  // namespace Catch

namespace {

std::shared_ptr<mn::Communicator> world(const std::string& name = "naive") { return mn::create_communicator(name); }

// Several ranks, all on one host: where the reducer averages through shared memory and the
// ranks share the update (never across hosts).
bool all_on_one_host() {
  auto comm = world();
  return comm->size() > 1 && comm->intra_size() == comm->size();
}

// ---------------------------------------------------------------------------------------------
// Datasets

// N examples: x = (i, 10 i + 0.5) float32, t = i int32, so every row names its example.
std::shared_ptr<const datasets::TupleDataset> numbered(int64_t n) {
  std::vector<float> x;
  std::vector<int32_t> t;
  for (int64_t i = 0; i < n; ++i) {
    x.push_back(float(i));
    x.push_back(float(10 * i) + 0.5f);
    t.push_back(int32_t(i));
  }
  return std::make_shared<datasets::TupleDataset>(
      std::vector<Tensor>{Tensor::from_vector(x, {n, 2}), Tensor::from_vector(t, {n})});
}

// A dataset with only get_example (the default get_batch stacks examples).
struct PlainDataset : datasets::Dataset {
  int64_t n;
  explicit PlainDataset(int64_t n_) : n(n_) {}
  size_t size() const override { return size_t(n); }
  datasets::Example get_example(size_t i) const override {
    check_index(i);
    return {Tensor::from_vector(std::vector<float>{float(i), float(10 * i) + 0.5f}),
            Tensor::scalar(double(i), DType::Int32)};
  }
};

// The ids (t field) of this rank's share, after checking that every row is consistent.
std::vector<int64_t> ids_of(const datasets::Dataset& d, bool& consistent) {
  std::vector<int64_t> ids;
  consistent = true;
  if (d.size() == 0) return ids;
  std::vector<size_t> all(d.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  std::vector<Tensor> b = d.get_batch(all);
  const auto x = b[0].to_vector<float>();
  const auto t = b[1].to_vector<int32_t>();
  for (size_t i = 0; i < t.size(); ++i) {
    consistent = consistent && x[2 * i] == float(t[i]) && x[2 * i + 1] == float(10 * t[i]) + 0.5f;
    ids.push_back(t[i]);
  }
  return ids;
}

// ---------------------------------------------------------------------------------------------
// Models

// Two Linear layers. With REVERSED names the first layer sorts last ("z1" before "a2" in the
// forward pass), so backward finishes the gradients in namedparams order, the opposite of the
// reducer's plan: every bucket becomes ready before the one it has to wait for.
struct MLP : Chain {
  std::shared_ptr<L::Linear> first, second;
  MLP(int64_t in, int64_t hidden, int64_t out, bool reversed = false, bool lazy = false) {
    first = add_link(reversed ? "z1" : "l1",
                     lazy ? std::make_shared<L::Linear>(hidden) : std::make_shared<L::Linear>(in, hidden));
    second = add_link(reversed ? "a2" : "l2", std::make_shared<L::Linear>(hidden, out));
  }
  Variable forward(const Variable& x) override { return (*second)(F::relu((*first)(x))); }
};

constexpr int64_t kIn = 6, kHidden = 10, kClasses = 3;

std::shared_ptr<L::Classifier> make_model(uint64_t seed, bool reversed = false, bool lazy = false) {
  random::seed(seed);
  return std::make_shared<L::Classifier>(std::make_shared<MLP>(kIn, kHidden, kClasses, reversed, lazy));
}

struct Data {
  Tensor x, t;
};
Data make_data(int64_t n, uint64_t seed = 42) {
  Generator gen(seed);
  Data d;
  d.x = random::normal({n, kIn}, 0.0, 1.0, DType::Float32, &gen);
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& v : t) v = int32_t(gen.below(kClasses));
  d.t = Tensor::from_vector(t);
  return d;
}
std::vector<Variable> rows(const Data& d, int64_t start, int64_t len) {
  return {Variable(d.x.narrow(0, start, len).contiguous()), Variable(d.t.narrow(0, start, len).contiguous())};
}

std::shared_ptr<Optimizer> make_actual(const std::string& kind) {
  if (kind == "adam") return std::make_shared<optimizers::Adam>(0.01);
  if (kind == "momentum") return std::make_shared<optimizers::MomentumSGD>(0.1, 0.9);
  // Three states each; SMORMS3's "mem" starts at 1, not 0.
  if (kind == "amsgrad") return std::make_shared<optimizers::Adam>(0.01, 0.9, 0.999, 1e-8, 1.0, 0.0, true);
  if (kind == "smorms3") return std::make_shared<optimizers::SMORMS3>(0.01);
  if (kind == "rmsprop_graves") return std::make_shared<optimizers::RMSpropGraves>(0.01);
  if (kind == "sgd") return std::make_shared<optimizers::SGD>(1.0);
  throw InternalError("make_actual: unknown optimizer " + kind);
}
void add_test_hook(Optimizer& opt, const std::string& hook) {
  if (hook == "weight_decay") opt.add_hook(std::make_shared<optimizer_hooks::WeightDecay>(0.01));
  if (hook == "clipping") opt.add_hook(std::make_shared<optimizer_hooks::GradientClipping>(0.05));
}

// max over parameters of ||a - b|| / ||b|| (Euclidean norms).
double max_relative_difference(const Link& a, const Link& b) {
  const auto pa = a.namedparams(), pb = b.namedparams();
  if (pa.size() != pb.size()) return INFINITY;
  double worst = 0;
  for (size_t i = 0; i < pa.size(); ++i) {
    if (pa[i].first != pb[i].first) return INFINITY;
    const auto va = pa[i].second.data().to_vector<double>(), vb = pb[i].second.data().to_vector<double>();
    if (va.size() != vb.size()) return INFINITY;
    double diff = 0, norm = 0;
    for (size_t j = 0; j < va.size(); ++j) {
      diff += (va[j] - vb[j]) * (va[j] - vb[j]);
      norm += vb[j] * vb[j];
    }
    worst = std::max(worst, std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30));
  }
  return worst;
}

// Whether every parameter equals rank 0's bit for bit (collective).
bool params_equal_to_rank0(const mn::Communicator& comm, const Link& link) {
  bool same = true;
  for (const auto& [name, p] : link.namedparams()) {
    if (!p.data().defined()) continue;
    const Tensor ref = comm.bcast(p.data(), 0);
    same = same && ref.to_vector<double>() == p.data().to_vector<double>();
  }
  return same;
}

}  // namespace

// =============================================================================================
// scatter_index / scatter_dataset

TEST_CASE("multi_node: scatter_index_table is ChainerMN's table") {
  using Table = std::vector<std::pair<int64_t, int64_t>>;
  CHECK(mn::scatter_index_table(10, 4) == Table{{0, 3}, {2, 5}, {5, 8}, {7, 10}});
  CHECK(mn::scatter_index_table(10, 4, false) == Table{{0, 3}, {3, 6}, {6, 8}, {8, 10}});
  CHECK(mn::scatter_index_table(1, 3) == Table{{0, 1}, {0, 1}, {0, 1}});
  CHECK(mn::scatter_index_table(1, 3, false) == Table{{0, 1}, {1, 1}, {1, 1}});
  CHECK(mn::scatter_index_table(0, 2) == Table{{0, 0}, {0, 0}});
  for (int size = 1; size <= 7; ++size) {
    for (int64_t n : {0, 1, 2, 3, 5, 7, 13, 64, 99}) {
      const auto eq = mn::scatter_index_table(n, size, true);
      const int64_t len = (n + size - 1) / size;
      std::vector<int> covered(size_t(n), 0);
      for (const auto& [b, e] : eq) {
        CHECK(e - b == len);
        CHECK(b >= 0);
        CHECK(e <= n);
        for (int64_t j = b; j < e; ++j) covered[size_t(j)]++;
      }
      CHECK(n <= len * size);
      CHECK(len * size < n + size);
      CHECK(std::count(covered.begin(), covered.end(), 0) == 0);

      const auto part = mn::scatter_index_table(n, size, false);
      int64_t expect = 0;
      for (size_t i = 0; i < part.size(); ++i) {
        CHECK(part[i].first == expect);
        CHECK(part[i].second - part[i].first == n / size + (int64_t(i) < n % size ? 1 : 0));
        expect = part[i].second;
      }
      CHECK(expect == n);
    }
  }
  CHECK_THROWS_AS(mn::scatter_index_table(-1, 2), Error);
  CHECK_THROWS_AS(mn::scatter_index_table(3, 0), Error);
}

TEST_CASE("multi_node: scatter_index gives each rank its row of the root's table") {
  auto comm = world();
  const int n = comm->size();
  for (int root = 0; root < n; ++root)
    for (bool force : {true, false})
      for (int64_t total : {int64_t(0), int64_t(1), int64_t(n), int64_t(5 * n - 1), int64_t(37)}) {
        // Only the root's count matters.
        const auto mine = mn::scatter_index(comm->rank() == root ? total : -7, comm, root, force);
        CHECK(mine == mn::scatter_index_table(total, n, force)[size_t(comm->rank())]);
      }
  // A bad count on the root fails on every rank; a bad root fails before communicating.
  CHECK_THROWS_AS(mn::scatter_index(comm->rank() == 0 ? -1 : 5, comm, 0), Error);
  CHECK_THROWS_AS(mn::scatter_index(5, comm, n), Error);
}

TEST_CASE("multi_node: scatter_dataset splits the root's examples evenly and loses none") {
  auto comm = world();
  const int n = comm->size(), rank = comm->rank();
  for (int64_t total : {int64_t(0), int64_t(1), int64_t(n), int64_t(5 * n - 1)})
    for (int root = 0; root < n; ++root)
      for (bool shuffle : {false, true})
        for (bool force : {true, false}) {
          CAPTURE(total, root, shuffle, force, n);
          auto original = numbered(total);
          auto mine = mn::scatter_dataset(rank == root ? original : nullptr, comm, root, shuffle, 123, force);
          CHECK(mine != nullptr);  // every rank gets a dataset (or every rank would have thrown)
          if (!mine) mine = numbered(0);  // keeps the collectives below in step
          // The root's share is a view of its dataset; the others' a TupleDataset of their rows.
          // Either way the fields keep their shapes and dtypes, even when empty.
          if (rank == root) CHECK(std::dynamic_pointer_cast<const datasets::SubDataset>(mine) != nullptr);
          else CHECK(std::dynamic_pointer_cast<const datasets::TupleDataset>(mine) != nullptr);
          std::vector<size_t> all(mine->size());
          for (size_t i = 0; i < all.size(); ++i) all[i] = i;
          const std::vector<Tensor> fields = mine->get_batch(all);
          CHECK(fields.size() == 2);
          if (fields.size() == 2) {
            CHECK(fields[0].shape() == Shape{int64_t(mine->size()), 2});
            CHECK(fields[0].dtype() == DType::Float32);
            CHECK(fields[1].shape() == Shape{int64_t(mine->size())});
            CHECK(fields[1].dtype() == DType::Int32);
          }
          bool consistent = false;
          const std::vector<int64_t> ids = ids_of(*mine, consistent);
          CHECK(consistent);

          // Lengths: equal and N <= len * size < N + size; or a partition.
          const auto lens = comm->allgather(Tensor::from_vector(std::vector<int64_t>{int64_t(mine->size())}));
          int64_t sum = 0;
          for (const Tensor& l : lens) {
            sum += l.item<int64_t>();
            if (force) CHECK(l.item<int64_t>() == int64_t(mine->size()));
          }
          if (force) {
            CHECK(total <= sum);
            CHECK(sum < total + n);
          } else {
            CHECK(sum == total);
          }

          // This rank's examples are the table's rows of the (permuted) order.
          const auto [b, e] = mn::scatter_index_table(total, n, force)[size_t(rank)];
          std::vector<int64_t> order = shuffle ? Generator(123).permutation(total) : std::vector<int64_t>{};
          std::vector<int64_t> expect;
          for (int64_t j = b; j < e; ++j) expect.push_back(shuffle ? order[size_t(j)] : j);
          CHECK(ids == expect);

          // The union over all ranks is the original set.
          const auto gathered = comm->gather(Tensor::from_vector(ids, {int64_t(ids.size())}), 0);
          if (rank == 0) {
            std::multiset<int64_t> all;
            for (const Tensor& g : gathered)
              for (int64_t v : g.to_vector<int64_t>()) all.insert(v);
            std::set<int64_t> distinct(all.begin(), all.end());
            std::set<int64_t> want;
            for (int64_t i = 0; i < total; ++i) want.insert(i);
            CHECK(distinct == want);
            if (!force) CHECK(all.size() == size_t(total));  // no example twice
          }
        }
}

TEST_CASE("multi_node: share_of_dataset takes, without communication, the share scatter_dataset sends; share_indices names it") {
  auto comm = world();
  const int n = comm->size(), rank = comm->rank();
  for (int64_t total : {int64_t(0), int64_t(1), int64_t(5 * n - 1)})
    for (bool shuffle : {false, true})
      for (bool force : {true, false}) {
        CAPTURE(total, shuffle, force, n);
        auto everywhere = numbered(total);  // every rank holds the same examples
        bool consistent = false;
        const std::vector<int64_t> scattered =
            ids_of(*mn::scatter_dataset(rank == 0 ? everywhere : nullptr, comm, 0, shuffle, 77, force), consistent);
        auto share = mn::share_of_dataset(everywhere, *comm, shuffle, 77, force);
        CHECK(std::dynamic_pointer_cast<const datasets::SubDataset>(share) != nullptr);  // a view, not a copy
        CHECK(ids_of(*share, consistent) == scattered);
        CHECK(mn::share_indices(total, n, rank, shuffle, 77, force) == scattered);  // example j is dataset[ids[j]]
      }
  CHECK(mn::share_indices(10, 4, 1) == std::vector<int64_t>{2, 3, 4});
  CHECK(mn::share_indices(10, 4, 3, false, 0, false) == std::vector<int64_t>{8, 9});
  CHECK_THROWS_WITH(mn::share_indices(10, 4, 4), "share_indices: rank 4 is not a rank of a communicator of size 4");
  CHECK_THROWS_WITH(mn::share_of_dataset(nullptr, *comm), Catch::Contains("share_of_dataset: the dataset is null"));
}

TEST_CASE("multi_node: scatter_dataset takes any dataset and reports the root's errors everywhere") {
  auto comm = world();
  const int n = comm->size(), rank = comm->rank();
  // A shuffled SubDataset view, and a dataset without get_batch of its own.
  const int64_t total = 3 * n + 1;
  auto view = std::make_shared<datasets::SubDataset>(numbered(total), 0, size_t(total), Generator(5).permutation(total));
  std::vector<datasets::DatasetPtr> inputs{view, std::make_shared<PlainDataset>(total)};
  for (const auto& input : inputs) {
    auto mine = mn::scatter_dataset(rank == 0 ? input : nullptr, comm);
    bool consistent = false;
    const auto ids = ids_of(*mine, consistent);
    CHECK(consistent);
    CHECK(mine->size() == size_t((total + n - 1) / n));
    const auto [b, e] = mn::scatter_index_table(total, n)[size_t(rank)];
    std::vector<int64_t> expect;
    for (int64_t j = b; j < e; ++j) {
      bool ok = false;
      expect.push_back(input == view ? ids_of(*std::make_shared<datasets::SubDataset>(view, size_t(j), size_t(j + 1)), ok)[0]
                                     : j);
    }
    CHECK(ids == expect);
  }
  // A null dataset on the root: every rank throws (nobody is left waiting).
  CHECK_THROWS_AS(mn::scatter_dataset(nullptr, comm), Error);
  // The root's dataset only matters on the root.
  auto mine = mn::scatter_dataset(rank == n - 1 ? datasets::DatasetPtr(numbered(2)) : nullptr, comm, n - 1);
  CHECK(mine->size() == size_t((2 + n - 1) / n));
  CHECK_THROWS_AS(mn::scatter_dataset(numbered(2), comm, n), Error);
  CHECK_THROWS_AS(mn::scatter_dataset(numbered(2), comm, -1), Error);
}

TEST_CASE("multi_node: scatter_dataset sends a share of image files as its paths; each rank decodes its own") {
  auto comm = world();
  const int n = comm->size(), rank = comm->rank();
  // The files, at one path every rank can read (one host here; on several, NFS or a copy on each).
  std::optional<testing::TempDir> dir;
  if (rank == 0) dir.emplace();
  const std::string root = comm->bcast_obj(rank == 0 ? dir->path.string() : std::string());
  const int64_t total = 3 * n + 1;
  std::vector<datasets::LabeledImageDataset::Pair> pairs;
  for (int64_t i = 0; i < total; ++i) {
    const std::string name = "img" + std::to_string(i) + ".png";
    if (rank == 0) datasets::write_png(root + "/" + name, Tensor::full({1, 6, 6}, double(10 * i), DType::UInt8));
    pairs.emplace_back(name, i);
  }
  comm->allgather_bytes("");  // the files are written before any rank reads them
  auto labeled = std::make_shared<datasets::LabeledImageDataset>(pairs, root);
  const Tensor mean = Tensor::zeros({1, 6, 6});
  for (bool shuffle : {false, true}) {
    CAPTURE(shuffle, n);
    const auto [b, e] = mn::scatter_index_table(total, n)[size_t(rank)];
    const std::vector<int64_t> order = shuffle ? Generator(9).permutation(total) : std::vector<int64_t>{};
    auto id = [&](int64_t j) { return shuffle ? order[size_t(j)] : j; };

    // A LabeledImageDataset: the other ranks receive a LabeledImageDataset of their pairs.
    auto mine = mn::scatter_dataset(rank == 0 ? labeled : nullptr, comm, 0, shuffle, 9);
    if (rank != 0) {
      auto received = std::dynamic_pointer_cast<const datasets::LabeledImageDataset>(mine);
      CHECK(received != nullptr);
      if (received) {
        std::vector<datasets::LabeledImageDataset::Pair> expect;
        for (int64_t j = b; j < e; ++j) expect.push_back(pairs[size_t(id(j))]);
        CHECK(received->pairs() == expect);
        CHECK(received->root() == root);
      }
    }
    REQUIRE(mine->size() == size_t(e - b));
    for (int64_t j = b; j < e; ++j) {
      const datasets::Example ex = mine->get_example(size_t(j - b));
      CHECK(ex[1].item<int32_t>() == id(j));
      CHECK(ex[0].to_vector<float>() == std::vector<float>(36, float(10 * id(j))));
    }

    // The example's PreprocessedImageDataset: each scattered example is cropped as the same read of
    // it on one process would be.
    auto preprocessed = std::make_shared<datasets::PreprocessedImageDataset>(labeled, mean, 3, true, 5);
    const datasets::PreprocessedImageDataset one_process(labeled, mean, 3, true, 5);
    auto cropped = mn::scatter_dataset(rank == 0 ? preprocessed : nullptr, comm, 0, shuffle, 9);
    if (rank != 0) CHECK(std::dynamic_pointer_cast<const datasets::PreprocessedImageDataset>(cropped) != nullptr);
    for (int64_t j = b; j < e; ++j)
      for (uint64_t draw = 0; draw < 3; ++draw)
        CHECK(cropped->get_example(size_t(j - b))[0].to_vector<float>() ==
              one_process.example_at(size_t(id(j)), draw)[0].to_vector<float>());
  }

  // A kind the workers cannot build (registered on the root alone): every rank throws, naming it.
  class RootOnly : public datasets::Dataset {
   public:
    size_t size() const override { return 8; }
    datasets::Example get_example(size_t) const override { return {Tensor::zeros({1})}; }
    std::optional<std::string> describe(const std::vector<size_t>&) const override {
      return datasets::start_description("test.RootOnly").take();
    }
  };
  if (n > 1)
    CHECK_THROWS_WITH(mn::scatter_dataset(rank == 0 ? std::make_shared<RootOnly>() : nullptr, comm),
                      Catch::Contains("rank 1 cannot build its share") && Catch::Contains("'test.RootOnly'"));
  comm->allgather_bytes("");  // the files outlive every rank's reads
}

TEST_CASE("multi_node: create_empty_dataset has as many examples as its dataset, with no fields") {
  for (const datasets::DatasetPtr& d : std::vector<datasets::DatasetPtr>{
           numbered(5), numbered(0), std::make_shared<datasets::SubDataset>(numbered(5), 1, 3),
           std::make_shared<PlainDataset>(4)}) {
    auto empty = mn::create_empty_dataset(d);
    CHECK(empty->size() == d->size());
    for (size_t i = 0; i < empty->size(); ++i) CHECK(empty->get_example(i).empty());
    CHECK_THROWS_WITH(empty->get_example(d->size()), Catch::Contains(str(d->size())));
    // An iterator over it yields the same batches as over the data, of examples without fields.
    if (d->size() == 0) continue;
    iterators::SerialIterator it(empty, 2, /*repeat=*/false, /*shuffle=*/false);
    std::vector<size_t> sizes;
    while (it.has_next()) {
      const auto batch = it.next();
      for (const auto& example : batch) CHECK(example.empty());
      sizes.push_back(batch.size());
    }
    CHECK(sizes.size() == (d->size() + 1) / 2);
    CHECK(sizes.back() == (d->size() % 2 ? 1 : 2));
  }
  CHECK_THROWS_AS(mn::create_empty_dataset(nullptr), Error);
  // By size, for a process that never holds the data.
  CHECK(mn::create_empty_dataset(int64_t(7))->size() == 7);
  CHECK(mn::create_empty_dataset(int64_t(7))->get_example(6).empty());
  CHECK_THROWS_WITH(mn::create_empty_dataset(int64_t(-1)), Catch::Contains("got -1"));
}

TEST_CASE("multi_node: create_empty_dataset_from_root gives the root its dataset and the others its length") {
  auto comm = world();
  const int n = comm->size(), rank = comm->rank();
  for (int root = 0; root < n; ++root) {
    const datasets::DatasetPtr data = numbered(5 + root);
    // The other ranks pass nothing, or a dataset of their own, which is ignored.
    const datasets::DatasetPtr mine = mn::create_empty_dataset_from_root(rank == root ? data : rank % 2 ? numbered(2) : nullptr,
                                                                         *comm, root);
    if (rank == root) {
      CHECK(mine == data);
    } else {
      CHECK(mine->size() == size_t(5 + root));
      CHECK(mine->get_example(size_t(4 + root)).empty());
    }
  }
  // A null dataset on the root, or a bad root: every rank throws alike.
  CHECK_THROWS_WITH(mn::create_empty_dataset_from_root(nullptr, *comm, n - 1), Catch::Contains("root rank " + str(n - 1) + " is null"));
  CHECK_THROWS_AS(mn::create_empty_dataset_from_root(numbered(2), *comm, n), Error);
}

TEST_CASE("multi_node: each process's default generator starts from its rank, so unseeded dropout masks differ") {
  auto comm = world();
  CHECK(random::default_seed() == uint64_t(comm->rank()));
  // A fresh generator as the default one starts: every rank's first dropout mask, gathered.
  Generator fresh(random::default_seed());
  const Tensor mask = ops::dropout_mask({64}, 0.5, DType::Float32, Device::cpu(), fresh);
  const auto masks = comm->allgather_obj(mask.to_vector<float>());
  for (int r = 1; r < comm->size(); ++r) CHECK(masks[size_t(r)] != masks[0]);
}

TEST_CASE("multi_node: rank_suffix names the rank and the process count, nothing for one process") {
  auto comm = world();
  CHECK(mn::rank_suffix(*comm) == (comm->size() == 1 ? "" : str(".rank", comm->rank(), "-of-", comm->size())));
}

// =============================================================================================
// The multi-node optimizer

TEST_CASE("multi_node: the first update only broadcasts rank 0's parameters (t stays 0)") {
  for (const mn::Reduction reduction : {mn::Reduction::Bucketed, mn::Reduction::Communicator}) {
    CAPTURE(reduction);
    auto comm = world();
    const int rank = comm->rank();
    auto model = make_model(100 + uint64_t(rank));  // different on every rank
    mn::MultiNodeOptimizerOptions options;
    options.reduction = reduction;
    auto opt = mn::create_multi_node_optimizer(std::make_shared<optimizers::Adam>(), comm, options);
    opt->setup(model);
    CHECK(&opt->target() == model.get());
    const Data data = make_data(8);
    auto loss = [&] { return model->forward_args(rows(data, 0, 8))[0]; };
    opt->update(loss);
    CHECK(opt->t() == 0);
    CHECK(params_equal_to_rank0(*comm, *model));
    const auto reference = make_model(100);  // rank 0's initial parameters
    CHECK(max_relative_difference(*model, *reference) == 0.0);

    opt->update(loss);
    CHECK(opt->t() == 1);
    // The same averaged gradient everywhere: the parameters stay (nearly) equal.
    const auto p = model->namedparams();
    for (const auto& [name, v] : p) {
      const Tensor ref = comm->bcast(v.data(), 0);
      const auto a = ref.to_vector<double>(), b = v.data().to_vector<double>();
      double diff = 0;
      for (size_t i = 0; i < a.size(); ++i) diff = std::max(diff, std::abs(a[i] - b[i]));
      CHECK(diff < 1e-6);
    }
    CHECK(dynamic_cast<mn::MultiNodeOptimizer&>(*opt).broadcast_count() == 1);
  }
}

TEST_CASE("multi_node: a link added later, or initialized lazily, is broadcast before it is trained") {
  auto comm = world();
  const int rank = comm->rank();
  mn::MultiNodeOptimizerOptions options;
  options.reducer.first_bucket_bytes = 64;  // several buckets, so some are in flight when the change is seen
  options.reducer.bucket_bytes = 128;
  auto opt = mn::create_multi_node_optimizer(std::make_shared<optimizers::Adam>(), comm, options);
  auto& mno = dynamic_cast<mn::MultiNodeOptimizer&>(*opt);
  // Input size inferred at the first forward: W does not exist yet.
  auto model = make_model(200 + uint64_t(rank), false, /*lazy=*/true);
  opt->setup(model);
  const Data data = make_data(6);
  auto loss = [&] { return model->forward_args(rows(data, 0, 6))[0]; };

  opt->update();  // no gradients: broadcasts b of l1 and the whole l2 (W of l1 does not exist)
  CHECK(opt->t() == 0);
  CHECK(model->has_uninitialized_params());
  opt->update(loss);  // initializes W (differently on every rank) during forward: broadcast again
  CHECK(opt->t() == 0);
  CHECK(mno.broadcast_count() == 2);
  CHECK_FALSE(model->has_uninitialized_params());
  CHECK(params_equal_to_rank0(*comm, *model));
  opt->update(loss);
  CHECK(opt->t() == 1);

  // A link added later: its parameters are broadcast at the next update, which does not step.
  auto& mlp = dynamic_cast<MLP&>(model->predictor());
  random::seed(300 + uint64_t(rank));
  mlp.add_link("extra", std::make_shared<L::Linear>(3, 2));
  opt->update(loss);
  CHECK(opt->t() == 1);
  CHECK(mno.broadcast_count() == 3);
  CHECK(params_equal_to_rank0(*comm, *model));
  opt->update(loss);  // "extra" gets no gradient: zero-filled, no hang
  CHECK(opt->t() == 2);
  CHECK(mno.reducer() != nullptr);
  if (mno.reducer()) {
    size_t planned = 0;
    for (const auto& bucket : mno.reducer()->bucket_names()) planned += bucket.size();
    CHECK(planned == model->namedparams().size());
  }
}

namespace {
// One Linear applied twice, registered under two names ("a", "b") when TIED: weight tying.
struct Twice : Chain {
  std::shared_ptr<L::Linear> lin;
  explicit Twice(bool tied) {
    random::seed(11);  // the same start on every rank and for both models
    lin = add_link("a", std::make_shared<L::Linear>(kIn, kIn));
    if (tied) add_link("b", lin);
  }
  Variable forward(const Variable& x) override { return (*lin)(F::tanh((*lin)(x))); }
};
}  // namespace

TEST_CASE("multi_node: a tied parameter is reduced and stepped once per update, as the untied model") {
  auto comm = world();
  for (const mn::Reduction reduction : {mn::Reduction::Bucketed, mn::Reduction::Communicator}) {
    CAPTURE(reduction);
    mn::MultiNodeOptimizerOptions options;
    options.reduction = reduction;
    auto tied = std::make_shared<Twice>(true), plain = std::make_shared<Twice>(false);
    auto tied_opt = mn::create_multi_node_optimizer(std::make_shared<optimizers::MomentumSGD>(0.1, 0.9), comm, options);
    auto plain_opt = mn::create_multi_node_optimizer(std::make_shared<optimizers::MomentumSGD>(0.1, 0.9), comm, options);
    tied_opt->setup(tied);
    plain_opt->setup(plain);
    const Data data = make_data(4, 50 + uint64_t(comm->rank()));  // other gradients on every rank
    const Variable x(data.x);
    for (int step = 0; step < 4; ++step) {
      tied_opt->update([&] { return F::sum((*tied)(x)); });
      plain_opt->update([&] { return F::sum((*plain)(x)); });
    }
    CHECK(tied_opt->t() == 3);  // the first update broadcasts
    CHECK(max_relative_difference(*tied->lin, *plain->lin) == 0.0);
    auto& mno = dynamic_cast<mn::MultiNodeOptimizer&>(*tied_opt);
    if (reduction == mn::Reduction::Bucketed && mno.reducer()) {
      std::vector<std::string> planned;
      for (const auto& bucket : mno.reducer()->bucket_names()) planned.insert(planned.end(), bucket.begin(), bucket.end());
      std::sort(planned.begin(), planned.end());
      CHECK(planned == std::vector<std::string>{"/a/W", "/a/b"});
    }
  }
}

TEST_CASE("multi_node: the multi-node optimizer behaves as the actual one (hooks, epochs, snapshots)") {
  auto comm = world();
  auto actual = std::make_shared<optimizers::Adam>();
  auto opt = mn::create_multi_node_optimizer(actual, comm);
  auto model = make_model(7);
  opt->setup(model);
  CHECK(&actual->target() == model.get());
  opt->add_hook(std::make_shared<optimizer_hooks::WeightDecay>(0.1));
  CHECK_THROWS_AS(actual->add_hook(std::make_shared<optimizer_hooks::WeightDecay>(0.1)), Error);  // it went there
  const Data data = make_data(4);
  for (int i = 0; i < 3; ++i) opt->update([&] { return model->forward_args(rows(data, 0, 4))[0]; });
  opt->new_epoch();
  CHECK(opt->t() == 2);
  CHECK(actual->t() == 2);
  CHECK(opt->state("/predictor/l1/W").count("m") == 1);  // the actual optimizer's state
  CHECK(&opt->state("/predictor/l1/W") == &actual->state("/predictor/l1/W"));
  CHECK(opt->epoch() == 1);
  CHECK(actual->epoch() == 1);
  // The snapshot of the wrapper is the actual optimizer's, entry for entry.
  Serializer a = Serializer::writer(), b = Serializer::writer();
  opt->serialize(a);
  actual->serialize(b);
  CHECK(a.entries().size() == b.entries().size());
  bool same = a.entries().size() == b.entries().size();
  for (const auto& [key, t] : b.entries()) {
    auto it = a.entries().find(key);
    same = same && it != a.entries().end() && it->second.to_vector<double>() == t.to_vector<double>();
  }
  CHECK(same);
  CHECK(a.entries().count("t") == 1);
  CHECK(a.entries().count("predictor/l1/W/m") == 1);
  // Loading goes to the actual optimizer as well.
  auto actual2 = std::make_shared<optimizers::Adam>();
  auto opt2 = mn::create_multi_node_optimizer(actual2, comm);
  opt2->setup(make_model(7));
  Serializer r = Serializer::reader(a.entries());
  opt2->serialize(r);
  CHECK(opt2->t() == 2);
  CHECK(actual2->state("/predictor/l1/W").count("m") == 1);
  // A restored optimizer steps at its next update (no broadcast-only step), so a resumed run
  // continues exactly as an uninterrupted one.
  {
    auto model3 = make_model(7);
    auto opt3 = mn::create_multi_node_optimizer(std::make_shared<optimizers::Adam>(), comm);
    opt3->setup(model3);
    Serializer r3 = Serializer::reader(a.entries());
    opt3->serialize(r3);
    const Data data3 = make_data(8);
    opt3->update([&] { return model3->forward_args(rows(data3, 0, 8))[0]; });
    CHECK(opt3->t() == 3);
    CHECK(dynamic_cast<mn::MultiNodeOptimizer&>(*opt3).broadcast_count() == 0);
  }

  // An optimizer that was set up before being wrapped keeps its target.
  auto pre = std::make_shared<optimizers::SGD>();
  pre->setup(model);
  CHECK(&mn::create_multi_node_optimizer(pre, comm)->target() == model.get());

  // Double buffering works on any averaging communicator (ChainerMN's needs pure_nccl);
  // tests/distributed/test_double_buffering.cpp has its behaviour.
  CHECK(dynamic_cast<mn::MultiNodeOptimizer&>(*mn::create_multi_node_optimizer(std::make_shared<optimizers::SGD>(), comm, true))
            .options()
            .double_buffering);
  // A reduction is named as reduction_name writes it; another name is refused, and named.
  for (const mn::Reduction r : {mn::Reduction::Bucketed, mn::Reduction::Communicator})
    CHECK(mn::parse_reduction(mn::reduction_name(r)) == r);
  CHECK(std::string(mn::reduction_name(mn::Reduction::Bucketed)) == "bucketed");
  CHECK(std::string(mn::reduction_name(mn::Reduction::Communicator)) == "communicator");
  CHECK_THROWS_AS(mn::parse_reduction("ring"), Error);
  CHECK_THROWS_WITH(mn::parse_reduction("ring"), "reduction must be bucketed or communicator, got 'ring'");
  CHECK_THROWS_WITH(mn::parse_reduction("Bucketed", "--reduction"),
                    "--reduction must be bucketed or communicator, got 'Bucketed'");
  CHECK_THROWS_AS(mn::create_multi_node_optimizer(nullptr, comm), Error);
  CHECK_THROWS_AS(mn::create_multi_node_optimizer(std::make_shared<optimizers::SGD>(), nullptr), Error);
}

TEST_CASE("multi_node: gradients set by hand are averaged, missing ones count as zeros") {
  // SGD with lr 1 turns the averaged gradient into the parameter change. With zero_fill, l1/b
  // has no gradient on rank 0 only (it counts as zeros there); without it, on no rank (ChainerMN
  // then requires every rank to agree), and it is left alone.
  constexpr mn::Reduction kBucketed = mn::Reduction::Bucketed, kCommunicator = mn::Reduction::Communicator;
  struct Case {
    std::string comm;
    mn::Reduction reduction;
    bool zero_fill;
  };
  for (const Case& c : {Case{"naive", kCommunicator, true}, Case{"flat", kCommunicator, true},
                        Case{"naive", kBucketed, true}, Case{"flat", kBucketed, true},
                        Case{"naive", kCommunicator, false}, Case{"flat", kCommunicator, false},
                        Case{"naive", kBucketed, false}}) {
    CAPTURE(c.comm, c.reduction, c.zero_fill);
    auto comm = world(c.comm);
    const int n = comm->size(), rank = comm->rank();
    mn::MultiNodeOptimizerOptions options;
    options.reduction = c.reduction;
    options.reducer.zero_fill = c.zero_fill;
    options.reducer.first_bucket_bytes = 40;
    options.reducer.bucket_bytes = 100;
    auto opt = mn::create_multi_node_optimizer(std::make_shared<optimizers::SGD>(1.0), comm, options);
    auto model = make_model(1);
    opt->setup(model);
    opt->update();
    std::map<std::string, std::vector<double>> before;
    for (const auto& [name, p] : model->namedparams()) before[name] = p.data().to_vector<double>();
    for (auto& [name, p] : model->namedparams()) {
      if (name == "/predictor/l1/b" && (rank == 0 || !c.zero_fill)) continue;  // no gradient
      p.set_grad(Tensor::full(p.shape(), double(rank + 1)));
    }
    opt->update();
    CHECK(opt->t() == 1);
    const double mean_all = double(n + 1) / 2.0;                        // (1 + ... + n) / n
    const double mean_missing = (double(n) * (n + 1) / 2.0 - 1.0) / n;  // rank 0 counts as 0
    for (const auto& [name, p] : model->namedparams()) {
      const auto now = p.data().to_vector<double>();
      const double expect = name != "/predictor/l1/b" ? mean_all : c.zero_fill ? mean_missing : 0.0;
      double worst = 0;
      for (size_t i = 0; i < now.size(); ++i) worst = std::max(worst, std::abs(before[name][i] - now[i] - expect));
      CHECK(worst < 1e-5);
    }
  }
}

TEST_CASE("multi_node: debug mode checks the multi-node optimizer's bucketed reduction too") {
  // The same two checks as Communicator::multi_node_mean_grad's, around the reducer's finalize():
  // gradients that differ across ranks (here one missing on the last rank, without zero_fill,
  // which would otherwise let that rank skip the parameter and drift apart), and a non-finite
  // mean. Gradients come from a real backward, so buckets are already in flight (MPI) or packed
  // (shared memory) when the check runs; afterwards the optimizer still trains consistently.
  for (bool shared_memory : {true, false}) {
    CAPTURE(shared_memory);
    auto comm = world("naive");
    comm->set_debug(true);
    const int n = comm->size(), rank = comm->rank();
    mn::MultiNodeOptimizerOptions options;
    options.reducer.zero_fill = false;
    options.reducer.shared_memory = shared_memory;
    options.reducer.first_bucket_bytes = 40;
    options.reducer.bucket_bytes = 100;
    auto opt = mn::create_multi_node_optimizer(std::make_shared<optimizers::SGD>(0.1), comm, options);
    auto model = make_model(3);
    opt->setup(model);
    const Data data = make_data(4);
    auto backward = [&](const Data& d) {
      model->cleargrads();
      model->forward_args(rows(d, 0, 4))[0].backward();
    };
    opt->update();  // the first update only broadcasts
    if (n > 1) {
      backward(data);
      if (rank == n - 1)
        for (auto& [name, p] : model->namedparams())
          if (name == "/predictor/l1/b") p.cleargrad();
      CHECK_THROWS_WITH(opt->update(), Catch::Contains("multi-node optimizer (debug mode)") &&
                                           Catch::Contains("parameter /predictor/l1/b differs across ranks") &&
                                           Catch::Contains(str("no gradient on rank ", n - 1)));
    }
    Data poisoned = make_data(4);
    if (rank == 0) poisoned.x.data<float>()[1] = std::numeric_limits<float>::quiet_NaN();
    backward(poisoned);
    CHECK_THROWS_WITH(opt->update(), Catch::Contains("multi-node optimizer: parameters diverged") &&
                                         Catch::Contains("/predictor/l1/W"));
    CHECK(opt->t() == 0);  // neither failed update stepped
    backward(data);
    CHECK_NOTHROW(opt->update());
    CHECK(opt->t() == 1);
    CHECK(params_equal_to_rank0(*comm, *model));
    // Without debug mode nobody looks (and the NaN goes into the parameters).
    comm->set_debug(false);
    backward(poisoned);
    CHECK_NOTHROW(opt->update());
  }
}

namespace {

struct Variant {
  std::string comm = "naive";
  mn::Reduction reduction = mn::Reduction::Bucketed;
  // The bucket sizes; shared_memory: the reducer may use a shared segment (all ranks on this host).
  mn::GradientReducerOptions reducer;
  std::string optimizer = "adam";
  std::string hook;
  bool reversed = false;    // backward finishes buckets in the opposite order of the plan
  bool manual = false;      // the caller runs backward and then update()
  // Gradient accumulation: MICRO backward passes on consecutive parts of the rank's batch before
  // each update, each loss scaled by its part's share of the batch.
  enum class Accumulate {
    None,
    Unannounced,     // by hand, no guard: the reducer redoes the started buckets at the update
    NoSync,          // by hand, all passes but the last inside the optimizer's no_sync()
    PassesPerStep,   // by hand, MultiNodeOptimizerOptions::backward_passes_per_step = MICRO
    Updater,         // StandardUpdater with UpdaterOptions::micro_batches = MICRO
  };
  Accumulate accumulate = Accumulate::None;
  int micro = 2;
  bool shard_update = true;  // the ranks may share the parameters and step a share each
  std::optional<DType> grad_dtype;  // CommunicatorOptions::allreduce_grad_dtype
  double tolerance = 1e-5;          // of the largest relative difference of a parameter
  double min_difference = 0.0;      // the wire's roundoff must show (the cast happened)
};

struct Outcome {
  double difference = INFINITY;
  int64_t t = -1;
  mn::GradientReducer::Stats stats;
  size_t buckets = 0;
  size_t params = 0;
  bool shared_update = false;
};

// N workers with B examples each for K iterations versus one process with N * B examples: the
// worker takes its slice of every big batch. The reference starts from rank 0's initial
// parameters, which the multi-node optimizer broadcasts at its first update.
Outcome equivalence(const Variant& v, int64_t b = 4, int k = 4) {
  mn::CommunicatorOptions comm_options;
  comm_options.allreduce_grad_dtype = v.grad_dtype;
  auto comm = mn::create_communicator(v.comm, MPI_COMM_WORLD, comm_options);
  const int n = comm->size(), rank = comm->rank();
  const Data data = make_data(int64_t(n) * b * k);

  mn::MultiNodeOptimizerOptions options;
  options.reduction = v.reduction;
  options.reducer = v.reducer;
  options.shard_update = v.shard_update;
  using A = Variant::Accumulate;
  if (v.accumulate == A::PassesPerStep) options.backward_passes_per_step = v.micro;
  auto opt = mn::create_multi_node_optimizer(make_actual(v.optimizer), comm, options);
  add_test_hook(*opt, v.hook);
  auto model = make_model(1000 + uint64_t(rank), v.reversed);
  opt->setup(model);
  opt->update();  // the broadcast

  if (v.accumulate == A::Updater) {
    // This rank's batches, one after another, unshuffled.
    std::vector<Tensor> xs, ts;
    for (int it = 0; it < k; ++it) {
      const auto part = rows(data, int64_t(it) * n * b + int64_t(rank) * b, b);
      xs.push_back(part[0].data());
      ts.push_back(part[1].data());
    }
    auto mine = std::make_shared<datasets::TupleDataset>(std::vector<Tensor>{ops::concat(xs, 0), ops::concat(ts, 0)});
    training::UpdaterOptions updater_options;
    updater_options.micro_batches = v.micro;
    training::StandardUpdater updater(std::make_shared<iterators::SerialIterator>(mine, b, true, false), opt, nullptr,
                                      updater_options);
    for (int it = 0; it < k; ++it) updater.update();
  }
  for (int it = 0; it < k && v.accumulate != A::Updater; ++it) {
    const int64_t start = int64_t(it) * n * b + int64_t(rank) * b;
    if (v.accumulate != A::None) {
      model->cleargrads();
      const int64_t part = b / v.micro;
      std::optional<Optimizer::NoSync> local;
      if (v.accumulate == A::NoSync) local.emplace(opt->no_sync());
      for (int i = 0; i < v.micro; ++i) {
        Variable loss = model->forward_args(rows(data, start + i * part, part))[0];
        if (i + 1 == v.micro) local.reset();
        F::mul(loss, 1.0 / v.micro).backward();
      }
      opt->update();
    } else if (v.manual) {
      model->cleargrads();
      model->forward_args(rows(data, start, b))[0].backward();
      opt->update();
    } else {
      opt->update([&] { return model->forward_args(rows(data, start, b))[0]; });
    }
  }

  auto ref_opt = make_actual(v.optimizer);
  add_test_hook(*ref_opt, v.hook);
  auto reference = make_model(1000, v.reversed);
  ref_opt->setup(reference);
  for (int it = 0; it < k; ++it)
    ref_opt->update([&] { return reference->forward_args(rows(data, int64_t(it) * n * b, int64_t(n) * b))[0]; });

  Outcome out;
  out.difference = max_relative_difference(*model, *reference);
  out.t = opt->t();
  const auto& mno = dynamic_cast<mn::MultiNodeOptimizer&>(*opt);
  out.shared_update = mno.shares_update();
  if (mno.reducer()) {
    out.stats = mno.reducer()->stats();
    out.buckets = mno.reducer()->bucket_names().size();
  }
  out.params = model->namedparams().size();
  return out;
}

}  // namespace

TEST_CASE("multi_node: N workers with batch b equal one process with batch N*b") {
  std::vector<std::pair<std::string, Variant>> cases;
  for (const std::string optimizer : {"adam", "momentum"}) {
    Variant naive;
    naive.reduction = mn::Reduction::Communicator;
    naive.optimizer = optimizer;
    cases.emplace_back("naive/" + optimizer, naive);
    // Every communicator that averages CPU tensors (single_node and two_dimensional where the
    // placement suits them), at update time as ChainerMN does.
    auto comm = world();
    const std::map<std::string, int> per_host = mn::processes_per_host(comm->host_names());
    bool even = true;
    for (const auto& [h, count] : per_host) even = even && count == per_host.begin()->second;
    for (const std::string name : {"naive", "flat", "hierarchical", "two_dimensional", "single_node"}) {
      if ((name == "two_dimensional" && !even) || (name == "single_node" && comm->inter_size() > 1)) continue;
      Variant composed = naive;
      composed.comm = name;
      if (name != "naive") cases.emplace_back(name + "/" + optimizer, composed);
      // The bucketed reduction handing its buckets to this communicator's own algorithm
      // (Communicator::start_sum) instead of the shared segment, several buckets per step.
      Variant via = composed;
      via.reduction = mn::Reduction::Bucketed;
      via.reducer.shared_memory = false;
      via.shard_update = false;
      via.reducer.first_bucket_bytes = 64;
      via.reducer.bucket_bytes = 200;
      cases.emplace_back("bucketed-via-" + name + "/" + optimizer, via);
      // Gradients averaged in float16 and bfloat16 (allreduce_grad_dtype): each mean is off by
      // up to the number of ranks times the wire's unit roundoff (2^-11, 2^-8) of the gradients'
      // size, more relative to a mean that cancels. Measured after the 4 steps: 0.2 to 2.1 times
      // size x unit roundoff for 1 to 4 ranks (the most with 3, momentum, whose biases start at
      // 0); allowed: 8 times.
      for (const auto& [wire, roundoff] : {std::pair{DType::Float16, 0x1p-11}, std::pair{DType::BFloat16, 0x1p-8}}) {
        Variant cast = composed;
        cast.grad_dtype = wire;
        cast.tolerance = 8 * comm->size() * roundoff;
        cases.emplace_back(name + "/" + optimizer + "/" + dtype_name(wire) + " on the wire", cast);
        // The bucketed reduction carries its buckets in the wire dtype too: with several ranks
        // the roundoff shows (at least 0.2 times size x unit roundoff was measured above).
        Variant cast_via = via;
        cast_via.grad_dtype = wire;
        cast_via.tolerance = cast.tolerance;
        cast_via.min_difference = comm->size() > 1 ? 0.02 * comm->size() * roundoff : 0.0;
        cases.emplace_back("bucketed-via-" + name + "/" + optimizer + "/" + dtype_name(wire) + " on the wire", cast_via);
      }
    }
    Variant bucketed;
    bucketed.optimizer = optimizer;
    cases.emplace_back("bucketed/" + optimizer, bucketed);
    Variant small = bucketed;
    small.reducer.first_bucket_bytes = 64;
    small.reducer.bucket_bytes = 200;
    cases.emplace_back("bucketed-small/" + optimizer, small);
    // Gradient accumulation announced to the reducer: 2 (or 4) micro-batches of a rank's batch
    // of 4 equal that batch, reduced once per update. Through shared memory (gradients packed
    // from their hooks) and through messages, several buckets.
    using A = Variant::Accumulate;
    for (const auto& [name, how] : {std::pair{"no_sync", A::NoSync}, std::pair{"passes_per_step", A::PassesPerStep},
                                    std::pair{"updater", A::Updater}}) {
      Variant acc = bucketed;
      acc.accumulate = how;
      cases.emplace_back(std::string("bucketed-") + name + "/" + optimizer, acc);
      acc = small;
      acc.accumulate = how;
      acc.reducer.shared_memory = false;
      acc.micro = 4;
      cases.emplace_back(std::string("bucketed-small-mpi-") + name + "-4/" + optimizer, acc);
    }
    // The updater splitting a batch of 4 in 3 (2, 1, 1) over the communicator's own reduction.
    Variant uneven = naive;
    uneven.accumulate = A::Updater;
    uneven.micro = 3;
    cases.emplace_back("naive-updater-3/" + optimizer, uneven);
  }
  Variant over_mpi;  // the MPI path on one host too, each rank stepping all parameters
  over_mpi.reducer.shared_memory = false;
  over_mpi.shard_update = false;
  cases.emplace_back("bucketed-mpi/adam", over_mpi);
  over_mpi.reducer.first_bucket_bytes = 64;
  over_mpi.reducer.bucket_bytes = 200;
  over_mpi.hook = "weight_decay";
  cases.emplace_back("bucketed-small-mpi/adam+weight_decay", over_mpi);
  Variant v;
  v.reducer.first_bucket_bytes = 64;
  v.reducer.bucket_bytes = 200;
  v.reversed = true;
  cases.emplace_back("bucketed-small-out-of-order/adam", v);
  v.reversed = false;
  v.manual = true;
  cases.emplace_back("bucketed-small-manual-backward/adam", v);
  v.manual = false;
  v.accumulate = Variant::Accumulate::Unannounced;
  cases.emplace_back("bucketed-small-accumulate-unannounced/adam", v);
  v.accumulate = Variant::Accumulate::None;
  v.comm = "flat";
  v.hook = "weight_decay";
  cases.emplace_back("bucketed-small/adam+weight_decay", v);
  v.hook = "clipping";
  cases.emplace_back("bucketed-small/adam+clipping", v);
  // Rules with three state tensors, stepped in shares on one host.
  for (const std::string optimizer : {"amsgrad", "smorms3", "rmsprop_graves"}) {
    Variant three;
    three.optimizer = optimizer;
    cases.emplace_back("bucketed/" + optimizer, three);
  }
  Variant wd;
  wd.reduction = mn::Reduction::Communicator;
  wd.optimizer = "momentum";
  wd.hook = "weight_decay";
  cases.emplace_back("naive/momentum+weight_decay", wd);
  wd.hook = "clipping";
  cases.emplace_back("naive/momentum+clipping", wd);

  for (const auto& [label, variant] : cases) {
    CAPTURE(label);
    const Outcome out = equivalence(variant);
    if (std::getenv("MN_VERBOSE"))  // the measured differences and reducer counters
      std::fprintf(stderr, "[rank %d] %-38s relative difference %.3g, buckets %zu: from hooks %lld, at update %lld, "
                   "waited %lld, restarts %lld\n", chainermn::world_rank(), label.c_str(), out.difference, out.buckets,
                   (long long)out.stats.buckets_from_hooks, (long long)out.stats.buckets_at_finalize,
                   (long long)out.stats.waited_for_earlier, (long long)out.stats.restarts);
    CHECK(out.t == 4);
    CHECK(out.difference < variant.tolerance);
    CHECK(out.difference >= variant.min_difference);
    CHECK(out.shared_update == (variant.shard_update && all_on_one_host()));
    if (variant.reduction == mn::Reduction::Bucketed) {
      CHECK(out.stats.steps == 4);
      // The first bucket is 64 bytes: several buckets. The default plan has one.
      if (variant.reducer.first_bucket_bytes == 64) CHECK(out.buckets >= 3);
      else CHECK(out.buckets == 1);
      // Every backward finishes all gradients, so every bucket started during backward (with
      // accumulation, during the last pass: each update reduced once, nothing thrown away)...
      if (variant.accumulate != Variant::Accumulate::Unannounced) {
        CHECK(out.stats.buckets_from_hooks == int64_t(4 * out.buckets));
        CHECK(out.stats.buckets_at_finalize == 0);
        CHECK(out.stats.restarts == 0);
        CHECK(out.stats.buckets_discarded == 0);
        const int64_t deferred_passes = variant.accumulate == Variant::Accumulate::None ? 0 : variant.micro - 1;
        CHECK(out.stats.deferred_grads == int64_t(4 * out.params) * deferred_passes);
      } else {
        // ...except that an unannounced second backward redoes them all at the update.
        CHECK(out.stats.restarts == 4);
        CHECK(out.stats.buckets_discarded == int64_t(4 * out.buckets));
        CHECK(out.stats.buckets_at_finalize == int64_t(4 * out.buckets));
      }
      if (variant.reversed) CHECK(out.stats.waited_for_earlier > 0);
      // Ranks all on one host average through shared memory unless it is turned off; across
      // hosts (simulated ones, tests/distributed/simhosts.sh) never.
      const bool shm = variant.reducer.shared_memory && all_on_one_host();
      CHECK(out.stats.shared_memory_steps == (shm ? 4 : 0));
      CHECK(out.stats.held_fallbacks == 0);
    }
  }
}

namespace {

// The gradients, by name, that MODEL's parameters would get from averaging over the ranks the
// sum of backward passes on each rank's batches PASSES (batch i of rank r: rows 12 r + 4 i, 4),
// each loss times SCALE, computed here on one copy of MODEL's current parameters.
std::map<std::string, std::vector<double>> expected_mean(const Link& model, const Data& data, int n,
                                                         const std::vector<int>& passes, double scale = 1.0) {
  auto ref = make_model(7);
  const auto from = model.namedparams();
  auto to = ref->namedparams();
  for (size_t i = 0; i < from.size(); ++i) to[i].second.set_data(from[i].second.data().clone());
  ref->cleargrads();
  for (int r = 0; r < n; ++r)
    for (int i : passes) (ref->forward_args(rows(data, 12 * r + 4 * i, 4))[0] * scale).backward();
  std::map<std::string, std::vector<double>> out;
  for (const auto& [name, p] : ref->namedparams()) {
    out[name] = p.grad().to_vector<double>();
    for (double& g : out[name]) g /= n;
  }
  return out;
}

// max over parameters of max |grad - expected| / max |expected|.
double grad_difference(const Link& model, const std::map<std::string, std::vector<double>>& expected) {
  double worst = 0;
  for (const auto& [name, p] : model.namedparams()) {
    if (!p.grad().defined() || !expected.count(name)) return INFINITY;
    const auto g = p.grad().to_vector<double>();
    const auto& e = expected.at(name);
    if (g.size() != e.size()) return INFINITY;
    double diff = 0, scale = 1e-30;
    for (size_t i = 0; i < g.size(); ++i) {
      diff = std::max(diff, std::abs(g[i] - e[i]));
      scale = std::max(scale, std::abs(e[i]));
    }
    worst = std::max(worst, diff / scale);
  }
  return worst;
}

}  // namespace

TEST_CASE("multi_node: no_sync: passes inside it start nothing, the first pass after it reduces their sum") {
  auto comm = world();
  const int n = comm->size(), rank = comm->rank();
  const Data data = make_data(int64_t(n) * 12);
  mn::MultiNodeOptimizerOptions options;
  options.reducer.first_bucket_bytes = 64;  // several buckets
  options.reducer.bucket_bytes = 200;
  auto opt = mn::create_multi_node_optimizer(make_actual("sgd"), comm, options);
  auto model = make_model(1000 + uint64_t(rank));
  opt->setup(model);
  opt->update();  // the broadcast
  const mn::GradientReducer& reducer = *dynamic_cast<mn::MultiNodeOptimizer&>(*opt).reducer();
  const auto stats = [&] { return reducer.stats(); };
  const int64_t buckets = int64_t(reducer.bucket_names().size()), params = int64_t(model->namedparams().size());
  CHECK(buckets >= 3);
  auto pass = [&](int i) { model->forward_args(rows(data, 12 * rank + 4 * i, 4))[0].backward(); };

  SECTION("two passes inside, one after: one reduction during the last pass") {
    // Three micro-batches of 4, each loss divided by 3: the update of the batch of 12 (docs/tutorial.md).
    const int k = 3;
    const auto expected = expected_mean(*model, data, n, {0, 1, 2}, 1.0 / k);
    std::vector<std::vector<Variable>> micro_batch;
    for (int i = 0; i < k; ++i) micro_batch.push_back(rows(data, 12 * rank + 4 * i, 4));
    const auto loss_of = [&](const std::vector<Variable>& x) { return model->forward_args(x)[0] / double(k); };
    const auto& optimizer = opt;
    // [no-sync]
    model->cleargrads();
    {
      auto local = optimizer->no_sync();  // these backward passes only add up their gradients
      for (int i = 0; i + 1 < k; ++i) loss_of(micro_batch[i]).backward();
    }
    loss_of(micro_batch[k - 1]).backward();  // the averaging of the sum starts during this one
    optimizer->update();                     // one step, with the mean over the ranks of the sum
    // [end]
    CHECK(reducer.backward_sync());
    // Nothing started before the last pass (a bucket started earlier would have been redone).
    CHECK(stats().deferred_grads == 2 * params);
    CHECK(stats().buckets_from_hooks == buckets);
    CHECK(stats().steps == 1);
    CHECK(stats().buckets_at_finalize == 0);
    CHECK(stats().restarts == 0);
    CHECK(stats().buckets_discarded == 0);
    CHECK(grad_difference(*model, expected) < 1e-5);
    CHECK(params_equal_to_rank0(*comm, *model));
  }
  SECTION("update() inside no_sync still reduces the sum, at the update") {
    const auto expected = expected_mean(*model, data, n, {0, 1});
    model->cleargrads();
    {
      auto local = opt->no_sync();
      CHECK_FALSE(reducer.backward_sync());
      pass(0);
      pass(1);
      opt->update();
    }
    CHECK(stats().buckets_from_hooks == 0);
    CHECK(stats().buckets_at_finalize == buckets);
    CHECK(stats().restarts == 0);
    CHECK(grad_difference(*model, expected) < 1e-5);
    CHECK(params_equal_to_rank0(*comm, *model));
  }
  SECTION("a pass inside no_sync after the buckets started is still summed: they are redone") {
    const auto expected = expected_mean(*model, data, n, {0, 1});
    model->cleargrads();
    pass(0);
    {
      auto local = opt->no_sync();
      pass(1);
    }
    opt->update();
    CHECK(stats().restarts == 1);
    CHECK(stats().buckets_discarded == buckets);
    CHECK(grad_difference(*model, expected) < 1e-5);
    CHECK(params_equal_to_rank0(*comm, *model));
  }
}

TEST_CASE("multi_node: backward_passes_per_step: buckets start in the k-th pass; fewer passes reduce at the update") {
  auto comm = world();
  const int n = comm->size(), rank = comm->rank();
  const Data data = make_data(int64_t(n) * 12);
  mn::MultiNodeOptimizerOptions options;
  options.reducer.first_bucket_bytes = 64;
  options.reducer.bucket_bytes = 200;
  options.backward_passes_per_step = 3;
  auto opt = mn::create_multi_node_optimizer(make_actual("sgd"), comm, options);
  auto model = make_model(1000 + uint64_t(rank));
  opt->setup(model);
  opt->update();  // the broadcast
  const mn::GradientReducer& reducer = *dynamic_cast<mn::MultiNodeOptimizer&>(*opt).reducer();
  CHECK(reducer.options().backward_passes_per_step == 3);
  const int64_t buckets = int64_t(reducer.bucket_names().size());
  auto pass = [&](int i) { model->forward_args(rows(data, 12 * rank + 4 * i, 4))[0].backward(); };

  auto expected = expected_mean(*model, data, n, {0, 1, 2});
  model->cleargrads();
  pass(0);
  pass(1);
  CHECK(reducer.stats().buckets_from_hooks == 0);
  pass(2);
  CHECK(reducer.stats().buckets_from_hooks == buckets);
  opt->update();
  CHECK(reducer.stats().buckets_at_finalize == 0);
  CHECK(reducer.stats().restarts == 0);
  CHECK(grad_difference(*model, expected) < 1e-5);
  // Two passes, then the update: all buckets start there, with the sum of the two.
  expected = expected_mean(*model, data, n, {0, 1});
  model->cleargrads();
  pass(0);
  pass(1);
  opt->update();
  CHECK(reducer.stats().buckets_from_hooks == buckets);
  CHECK(reducer.stats().buckets_at_finalize == buckets);
  CHECK(reducer.stats().restarts == 0);
  CHECK(grad_difference(*model, expected) < 1e-5);
  CHECK(params_equal_to_rank0(*comm, *model));
}

TEST_CASE("multi_node: backward_passes_per_step below 1, or set twice differently, is refused") {
  auto comm = world();
  mn::MultiNodeOptimizerOptions options;
  options.backward_passes_per_step = 0;
  CHECK_THROWS_WITH(mn::create_multi_node_optimizer(make_actual("sgd"), comm, options),
                    Catch::Contains("create_multi_node_optimizer: backward_passes_per_step must be at least 1, got 0"));
  options.backward_passes_per_step = 2;
  options.reducer.backward_passes_per_step = 3;
  CHECK_THROWS_WITH(mn::create_multi_node_optimizer(make_actual("sgd"), comm, options),
                    Catch::Contains("create_multi_node_optimizer: reducer.backward_passes_per_step is 3 but "
                                    "backward_passes_per_step is 2; set backward_passes_per_step only"));
  mn::GradientReducerOptions reducer_options;
  reducer_options.backward_passes_per_step = -1;
  CHECK_THROWS_WITH(mn::GradientReducer(comm, reducer_options),
                    Catch::Contains("GradientReducer: backward_passes_per_step must be at least 1, got -1"));
}

namespace {

// Whether A's and B's parameters and the state of their actual optimizers are equal bit for bit.
bool same_params_and_state(const Link& a, const Optimizer& opt_a, const Link& b, const Optimizer& opt_b) {
  const auto pa = a.namedparams(), pb = b.namedparams();
  bool same = pa.size() == pb.size();
  for (size_t i = 0; same && i < pa.size(); ++i) {
    same = pa[i].first == pb[i].first &&
           pa[i].second.data().to_vector<double>() == pb[i].second.data().to_vector<double>();
    const TensorMap &sa = opt_a.state(pa[i].first), &sb = opt_b.state(pb[i].first);
    same = same && sa.size() == sb.size();
    for (const auto& [key, t] : sb)
      same = same && sa.count(key) && sa.at(key).to_vector<double>() == t.to_vector<double>();
  }
  return same;
}

// An optimizer whose step is not elementwise (it scales by the gradient's norm, as LARS does).
struct NormScaledSGD : Optimizer {
  void update_one(Variable& param, TensorMap&) override {
    ops::axpy_(param.data(), -0.1 / (1e-12 + std::sqrt(ops::sum_of_squares(param.grad()))), param.grad());
  }
  std::vector<std::string> state_names() const override { return {}; }
};

struct WholePartition : UpdatePartition {
  void before_steps(bool) override {}
  std::pair<int64_t, int64_t> prepare(const std::string&, Variable& p, TensorMap&, const std::vector<std::string>&) override {
    return {0, p.numel()};
  }
  bool holds(const Tensor&) const override { return false; }
};

void barrier(const mn::Communicator& comm) { CHAINERMN_MPI_CHECK(MPI_Barrier(comm.mpi_comm())); }

}  // namespace

TEST_CASE("multi_node: on one host the ranks share the parameters and state and each step a share") {
  // (Across hosts each rank steps everything: the same code path checks that the results agree.)
  auto comm = world();
  const int n = comm->size(), rank = comm->rank();
  const bool shared = all_on_one_host();
  constexpr int64_t b = 5;
  const Data data = make_data(int64_t(n) * b * 6);
  auto batch = [&](int it) { return rows(data, (int64_t(it) * n + rank) * b, b); };
  for (const std::string kind : {"adam", "momentum", "sgd", "amsgrad", "smorms3"}) {
    for (const std::string hook : {"", "weight_decay"}) {
      CAPTURE(kind, hook);
      // The same training with and without the shared update.
      mn::MultiNodeOptimizerOptions unshared_options;
      unshared_options.shard_update = false;
      auto actual = make_actual(kind), actual_ref = make_actual(kind);
      auto opt = mn::create_multi_node_optimizer(actual, comm);
      auto ref = mn::create_multi_node_optimizer(actual_ref, comm, unshared_options);
      add_test_hook(*opt, hook);
      add_test_hook(*ref, hook);
      auto model = make_model(31 + uint64_t(rank)), model_ref = make_model(31 + uint64_t(rank));
      opt->setup(model);
      ref->setup(model_ref);
      for (int it = 0; it < 4; ++it) {
        opt->update([&] { return model->forward_args(batch(it))[0]; });
        ref->update([&] { return model_ref->forward_args(batch(it))[0]; });
      }
      auto& mno = dynamic_cast<mn::MultiNodeOptimizer&>(*opt);
      CHECK(mno.shares_update() == shared);
      CHECK_FALSE(dynamic_cast<mn::MultiNodeOptimizer&>(*ref).shares_update());
      CHECK(opt->t() == 3);
      // Bit for bit the unshared result, and every rank sees all of the state.
      CHECK(same_params_and_state(*model, *actual, *model_ref, *actual_ref));
      CHECK(params_equal_to_rank0(*comm, *model));

      // Every rank's snapshot is complete: a fresh model and optimizer restored from it continue
      // exactly as the uninterrupted run.
      Serializer model_snapshot = Serializer::writer(), opt_snapshot = Serializer::writer();
      model->serialize(model_snapshot);
      opt->serialize(opt_snapshot);
      auto actual2 = make_actual(kind);
      auto opt2 = mn::create_multi_node_optimizer(actual2, comm);
      add_test_hook(*opt2, hook);
      auto model2 = make_model(77);
      opt2->setup(model2);
      Serializer r1 = Serializer::reader(model_snapshot.entries()), r2 = Serializer::reader(opt_snapshot.entries());
      model2->serialize(r1);
      opt2->serialize(r2);
      for (int it = 4; it < 6; ++it) {
        opt->update([&] { return model->forward_args(batch(it))[0]; });
        opt2->update([&] { return model2->forward_args(batch(it))[0]; });
        ref->update([&] { return model_ref->forward_args(batch(it))[0]; });
      }
      CHECK(dynamic_cast<mn::MultiNodeOptimizer&>(*opt2).broadcast_count() == 0);
      CHECK(dynamic_cast<mn::MultiNodeOptimizer&>(*opt2).shares_update() == shared);
      CHECK(same_params_and_state(*model2, *actual2, *model_ref, *actual_ref));
      CHECK(same_params_and_state(*model, *actual, *model_ref, *actual_ref));

      // A parameter replaced by hand on every rank is taken into the shared copy at the next update.
      Variable w = model->namedparams()[0].second, w_ref = model_ref->namedparams()[0].second;
      w.set_data(ops::mul_scalar(w.data(), 0.5));
      w_ref.set_data(ops::mul_scalar(w_ref.data(), 0.5));
      opt->update([&] { return model->forward_args(batch(0))[0]; });
      ref->update([&] { return model_ref->forward_args(batch(0))[0]; });
      CHECK(same_params_and_state(*model, *actual, *model_ref, *actual_ref));

      // One copy for all ranks while the optimizer lives, private copies after.
      const auto cell = [&] { return w.data().to_vector<double>()[0]; };
      const double before = cell();
      barrier(*comm);
      if (rank == 0) w.data().data<float>()[0] = 123.f;
      barrier(*comm);
      CHECK(cell() == (shared || rank == 0 ? 123.0 : before));
      if (shared) CHECK((actual->update_partition() && actual->update_partition()->holds(w.data())));
      opt.reset();
      CHECK_FALSE(actual->update_partition());
      barrier(*comm);
      if (rank == 0) w.data().data<float>()[0] = -1.f;
      barrier(*comm);
      CHECK(cell() == (rank == 0 ? -1.0 : (shared ? 123.0 : before)));
    }
  }
  // An optimizer whose step is not elementwise steps every parameter on every rank, as before.
  auto actual = std::make_shared<NormScaledSGD>();
  CHECK_THROWS_AS(actual->set_update_partition(std::make_shared<WholePartition>()), Error);
  auto opt = mn::create_multi_node_optimizer(actual, comm);
  auto model = make_model(5 + uint64_t(rank));
  opt->setup(model);
  for (int it = 0; it < 3; ++it) opt->update([&] { return model->forward_args(batch(it))[0]; });
  CHECK_FALSE(dynamic_cast<mn::MultiNodeOptimizer&>(*opt).shares_update());
  CHECK(opt->t() == 2);
  CHECK(params_equal_to_rank0(*comm, *model));
}

TEST_CASE("multi_node: share_of splits an array into cache-line aligned, balanced, covering shares") {
  // The reducer sums and the shared update steps these shares; a rank steps right after summing
  // its own, so both must use exactly this split.
  for (const size_t item : {size_t(4), size_t(8)}) {
    const int64_t line = int64_t(64 / item);
    for (const int64_t numel : {0, 1, 10, 15, 16, 17, 100, 1000, 784000}) {
      for (int size = 1; size <= 5; ++size) {
        CAPTURE(item, numel, size);
        int64_t expected_first = 0;
        for (int r = 0; r < size; ++r) {
          const auto [first, last] = mn::share_of(numel, item, r, size);
          CHECK(first == expected_first);
          CHECK(first <= last);
          CHECK(first % line == 0);
          CHECK(last - first <= numel / size + line);  // balanced up to a cache line
          expected_first = last;
        }
        CHECK(expected_first == numel);
      }
    }
  }
}

TEST_CASE("multi_node: a shared segment is one memory for every rank, or null for all") {
  const int rank = chainermn::world_rank(), n = chainermn::world_size();
  auto segment = mn::SharedSegment::create(MPI_COMM_WORLD, 4096);
  REQUIRE(segment);
  auto* values = reinterpret_cast<int*>(segment->data());
  values[16 * rank] = 100 + rank;  // one cache line each
  MPI_Barrier(MPI_COMM_WORLD);
  for (int j = 0; j < n; ++j) CHECK(values[16 * j] == 100 + j);
  MPI_Barrier(MPI_COMM_WORLD);
  // More than /dev/shm can hold: no rank gets a segment, none hangs, nothing is left behind.
  CHECK_FALSE(mn::SharedSegment::create(MPI_COMM_WORLD, size_t(1) << 50));
  int root_pid = int(getpid());  // segment names carry rank 0's pid (other jobs may run beside)
  MPI_Bcast(&root_pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  const std::string ours = "chainermn-" + std::to_string(root_pid) + "-";
  size_t leftovers = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm"))
    leftovers += entry.path().filename().string().rfind(ours, 0) == 0;
  CHECK(leftovers == 0);
}

TEST_CASE("multi_node: a segment name left by a dead job is removed by the next create") {
  const int rank = chainermn::world_rank();
  MPI_Barrier(MPI_COMM_WORLD);  // the test before scans /dev/shm for names of rank 0's pid
  std::string dead_name, live_name;
  if (rank == 0) {
    long pid_max = 0;  // no process has a pid above the kernel's limit
    std::ifstream("/proc/sys/kernel/pid_max") >> pid_max;
    REQUIRE(pid_max > 0);
    dead_name = "/chainermn-" + std::to_string(pid_max + 1) + "-7";
    live_name = "/chainermn-" + std::to_string(getppid()) + "-7";  // the launcher: alive
    for (const std::string& name : {dead_name, live_name}) {
      const int fd = shm_open(name.c_str(), O_CREAT | O_RDWR, 0600);
      REQUIRE(fd >= 0);
      close(fd);
    }
  }
  REQUIRE(mn::SharedSegment::create(MPI_COMM_WORLD, 4096));
  if (rank == 0) {
    CHECK_FALSE(std::filesystem::exists("/dev/shm" + dead_name));
    CHECK(std::filesystem::exists("/dev/shm" + live_name));
    shm_unlink(live_name.c_str());
  }
}

TEST_CASE("multi_node: the reducer alone: plan, hooks and detach") {
  auto comm = world();
  auto model = make_model(3);
  mn::GradientReducerOptions options;
  options.first_bucket_bytes = 4 * kClasses;  // exactly l2/b
  options.bucket_bytes = 4 * kHidden * kClasses;
  mn::GradientReducer reducer(comm, options);
  reducer.attach(*model);
  CHECK(reducer.attached());
  CHECK(reducer.matches(*model));
  CHECK(reducer.uses_shared_memory() == all_on_one_host());
  // Reverse namedparams order: l2/b, l2/W, l1/b, l1/W; the first bucket holds l2/b only.
  const auto names = reducer.bucket_names();
  CHECK(names.size() == 4);
  if (names.size() == 4) {
    CHECK(names[0] == std::vector<std::string>{"/predictor/l2/b"});
    CHECK(names[1] == std::vector<std::string>{"/predictor/l2/W"});
    CHECK(names[2] == std::vector<std::string>{"/predictor/l1/b"});
    CHECK(names[3] == std::vector<std::string>{"/predictor/l1/W"});
  }
  CHECK(!reducer.matches(*make_model(3)));  // other variables

  // Hooks fire during backward; finalize averages (all ranks hold the same data here).
  const Data data = make_data(4);
  model->cleargrads();
  model->forward_args(rows(data, 0, 4))[0].backward();
  std::map<std::string, std::vector<double>> local;
  for (const auto& [name, p] : model->namedparams()) local[name] = p.grad().to_vector<double>();
  CHECK(reducer.stats().buckets_from_hooks == int64_t(names.size()));
  reducer.finalize();
  for (const auto& [name, p] : model->namedparams()) {
    const auto g = p.grad().to_vector<double>();
    double worst = 0;
    for (size_t i = 0; i < g.size(); ++i) worst = std::max(worst, std::abs(g[i] - local[name][i]));
    CHECK(worst < 1e-6);
  }
  // The averaged gradients are views of the bucket buffers. A view still held when the next
  // step packs must keep its values: that step reduces into a fresh buffer instead.
  {
    const Tensor held = model->namedparams().front().second.grad();
    const std::vector<double> held_values = held.to_vector<double>();
    const Data other = make_data(4, 7);
    model->cleargrads();
    model->forward_args(rows(other, 0, 4))[0].backward();
    reducer.finalize();
    CHECK(reducer.stats().held_fallbacks == (reducer.uses_shared_memory() ? 1 : 0));
    CHECK(held.to_vector<double>() == held_values);
    CHECK(model->namedparams().front().second.grad().to_vector<double>() != held_values);
  }
  // Detached, the hooks are gone.
  size_t hooks_before = 0, hooks_after = 0;
  for (const auto& [name, p] : model->namedparams()) hooks_before += p.node()->grad_hooks.size();
  reducer.detach();
  for (const auto& [name, p] : model->namedparams()) hooks_after += p.node()->grad_hooks.size();
  CHECK(hooks_before == model->namedparams().size());
  CHECK(hooks_after == 0);
  CHECK_FALSE(reducer.attached());
  CHECK_THROWS_AS(reducer.finalize(), Error);
  // A backward whose buckets are in flight when the reducer goes away: completed, no hang.
  {
    mn::GradientReducer r2(comm, options);
    r2.attach(*model);
    model->cleargrads();
    model->forward_args(rows(data, 0, 4))[0].backward();
  }
  size_t hooks_left = 0;
  for (const auto& [name, p] : model->namedparams()) hooks_left += p.node()->grad_hooks.size();
  CHECK(hooks_left == 0);
}

// =============================================================================================
// Evaluators

namespace {
// Rank r holds 4 r + 3 examples: r + 1 batches of 4 (the last one of 3). x = 100 r + i.
std::shared_ptr<const datasets::TupleDataset> rank_data(int r) {
  const int64_t count = 4 * r + 3;
  std::vector<float> x;
  for (int64_t i = 0; i < count; ++i) x.push_back(float(100 * r + i));
  return std::make_shared<datasets::TupleDataset>(std::vector<Tensor>{Tensor::from_vector(x, {count, 1})});
}
// The local means an Evaluator reports on rank r: the mean of per-batch means of x, and r.
std::pair<double, int64_t> local_mean(int r) {
  const int64_t count = 4 * r + 3;
  double sum_of_means = 0;
  int batches = 0;
  for (int64_t start = 0; start < count; start += 4, ++batches) {
    const int64_t end = std::min(count, start + 4);
    double s = 0;
    for (int64_t i = start; i < end; ++i) s += double(100 * r + i);
    sum_of_means += s / double(end - start);
  }
  return {sum_of_means / batches, count};
}

struct Probe : Link {
  Variable forward(const Variable& x) override {
    const auto v = x.data().to_vector<double>();
    double s = 0;
    for (double e : v) s += e;
    report({{"mean", s / double(v.size())}}, this);
    return x;
  }
};
}  // namespace

TEST_CASE("multi_node: the multi-node evaluator weights every rank by its number of examples") {
  auto comm = world();
  const int n = comm->size(), rank = comm->rank();
  auto target = std::make_shared<Probe>();
  auto iter = std::make_shared<iterators::SerialIterator>(rank_data(rank), 4, false, false);
  auto evaluator = std::make_shared<E::Evaluator>(iter, target, [&](const std::vector<Variable>& arrays) {
    target->forward(arrays[0]);
    report({{"rank", double(rank)}}, target.get());
  });
  auto multi = mn::create_multi_node_evaluator(evaluator, comm);
  CHECK(multi->default_name() == "validation");
  CHECK(multi->priority() == training::PRIORITY_WRITER);
  double weighted = 0, weighted_rank = 0;
  int64_t total = 0;
  for (int r = 0; r < n; ++r) {
    const auto [mean, count] = local_mean(r);
    weighted += mean * double(count);
    weighted_rank += double(r) * double(count);
    total += count;
  }
  for (int repeat = 0; repeat < 2; ++repeat) {
    const Observation result = multi->evaluate();
    CHECK(evaluator->last_example_count() == 4 * rank + 3);
    CHECK(multi->last_example_count() == total);
    CHECK(result.count("validation/main/mean") == 1);
    CHECK(result.count("validation/main/rank") == 1);
    if (result.count("validation/main/mean") && result.count("validation/main/rank")) {
      CHECK(result.at("validation/main/mean") == Approx(weighted / double(total)).epsilon(1e-12));
      CHECK(result.at("validation/main/rank") == Approx(weighted_rank / double(total)).epsilon(1e-12));
    }
  }
}

namespace {
// calc_local: (sum of x, examples); aggregate: the exact mean over every example of every rank.
struct ExactMean : mn::GenericMultiNodeEvaluator {
  using GenericMultiNodeEvaluator::GenericMultiNodeEvaluator;
  int aggregate_calls = 0;
  size_t results_seen = 0;

 protected:
  BatchResult calc_local(const std::vector<Variable>& arrays) override {
    const auto v = arrays[0].data().to_vector<double>();
    double s = 0;
    for (double e : v) s += e;
    return {{{"sum", s}, {"n", double(v.size())}}, {}};
  }
  Observation aggregate(const std::vector<BatchResult>& results) override {
    ++aggregate_calls;
    results_seen = results.size();
    double s = 0, n = 0;
    for (const auto& r : results) {
      s += r.values.at("sum");
      n += r.values.at("n");
    }
    return {{"mean", s / n}, {"batches", double(results.size())}};
  }
};
}  // namespace

TEST_CASE("multi_node: the generic multi-node evaluator aggregates uneven ranks without deadlock") {
  auto comm = world();
  const int n = comm->size(), rank = comm->rank();
  double sum = 0, count = 0, batches = 0;
  for (int r = 0; r < n; ++r) {
    const int64_t c = 4 * r + 3;
    for (int64_t i = 0; i < c; ++i) sum += double(100 * r + i);
    count += double(c);
    batches += r + 1;
  }
  for (int root = 0; root < n; ++root) {
    auto iter = std::make_shared<iterators::SerialIterator>(rank_data(rank), 4, false, false);
    ExactMean evaluator(comm, iter, std::make_shared<Probe>(), root);
    const Observation result = evaluator.evaluate();
    CHECK(evaluator.last_local_batches() == rank + 1);
    CHECK(result.at("mean") == Approx(sum / count).epsilon(1e-12));
    CHECK(result.at("batches") == batches);
    CHECK(evaluator.aggregate_calls == (rank == root ? 1 : 0));
    if (rank == root) CHECK(evaluator.results_seen == size_t(batches));
  }
  // The defaults: the target's reports per batch, averaged over every batch of every rank.
  auto iter = std::make_shared<iterators::SerialIterator>(rank_data(rank), 4, false, false);
  mn::GenericMultiNodeEvaluator plain(comm, iter, std::make_shared<Probe>());
  const Observation result = plain.evaluate();
  double sum_of_means = 0;
  for (int r = 0; r < n; ++r) sum_of_means += local_mean(r).first * (r + 1);
  CHECK(result.count("validation/main/mean") == 1);
  if (result.count("validation/main/mean"))
    CHECK(result.at("validation/main/mean") == Approx(sum_of_means / batches).epsilon(1e-12));

  // A failure on one rank becomes an exception on every rank.
  struct Failing : mn::GenericMultiNodeEvaluator {
    using GenericMultiNodeEvaluator::GenericMultiNodeEvaluator;

   protected:
    BatchResult calc_local(const std::vector<Variable>&) override {
      if (communicator().rank() == communicator().size() - 1) throw Error("boom");
      return {{{"x", 1.0}}, {}};
    }
  };
  auto iter2 = std::make_shared<iterators::SerialIterator>(rank_data(rank), 4, false, false);
  Failing failing(comm, iter2, std::make_shared<Probe>());
  CHECK_THROWS_WITH(failing.evaluate(), Catch::Contains("boom"));
}

namespace {
// 23 examples: x = i, true class i % 3; the model predicts class (i / 3) % 3.
constexpr int64_t kClassified = 23;
int32_t true_class(int64_t i) { return int32_t(i % 3); }
int32_t predicted_class(int64_t i) { return int32_t((i / 3) % 3); }

// Scores (N, 3), highest at predicted_class(x).
struct Scorer : Link {
  Variable forward(const Variable& x) override {
    const auto v = x.data().to_vector<double>();
    std::vector<float> scores;
    for (double e : v)
      for (int c = 0; c < 3; ++c) scores.push_back(c == predicted_class(int64_t(e)) ? 1.f : 0.f);
    return Variable(Tensor::from_vector(scores, {int64_t(v.size()), 3}));
  }
};

// Rank r's contiguous share of the 23 examples, (x, true class): ranks 0 .. m-1 (m = max(1,
// size - 1)) get shares growing with r, and the last rank none when there are several.
std::shared_ptr<const datasets::TupleDataset> classified_share(int rank, int size) {
  const int64_t m = std::max(size - 1, 1);
  auto bound = [&](int64_t r) {
    r = std::min(r, m);
    return r * (r + 1) * kClassified / (m * (m + 1));
  };
  std::vector<float> x;
  std::vector<int32_t> t;
  for (int64_t i = bound(rank); i < bound(rank + 1); ++i) {
    x.push_back(float(i));
    t.push_back(true_class(i));
  }
  const int64_t count = int64_t(t.size());
  return std::make_shared<datasets::TupleDataset>(
      std::vector<Tensor>{Tensor::from_vector(x, {count, 1}), Tensor::from_vector(t, {count})});
}

// Precision and recall of class 0 over the whole set, which no mean of per-batch numbers gives:
// calc_local returns each example's predicted and true class, aggregate counts over all of them.
struct ClassZeroPrecision : mn::GenericMultiNodeEvaluator {
  using GenericMultiNodeEvaluator::GenericMultiNodeEvaluator;
  std::vector<int32_t> labels_seen;  // on the root: every true class, in the order aggregate got them

 protected:
  BatchResult calc_local(const std::vector<Variable>& arrays) override {
    const Tensor scores = target().forward(arrays[0]).data();
    const Tensor labels = arrays[1].data();
    return {{{"examples", double(labels.size(0))}}, {{"pred", ops::argmax(scores, 1)}, {"label", labels}}};
  }
  Observation aggregate(const std::vector<BatchResult>& results) override {
    const Tensor pred = concat_arrays(results, "pred"), label = concat_arrays(results, "label");
    const std::vector<int32_t> p = pred.to_vector<int32_t>();
    labels_seen = label.to_vector<int32_t>();
    if (pred.dtype() != DType::Int32 || p.size() != labels_seen.size()) throw Error("pred and label do not match");
    double tp = 0, fp = 0, fn = 0, examples = 0;
    for (size_t i = 0; i < p.size(); ++i) {
      tp += p[i] == 0 && labels_seen[i] == 0;
      fp += p[i] == 0 && labels_seen[i] != 0;
      fn += p[i] != 0 && labels_seen[i] == 0;
    }
    for (const BatchResult& r : results) examples += r.values.at("examples");
    return {{"precision", tp / (tp + fp)}, {"recall", tp / (tp + fn)}, {"examples", examples}};
  }
};
}  // namespace

TEST_CASE("multi_node: the generic multi-node evaluator aggregates per-example arrays (precision)") {
  auto comm = world();
  const int n = comm->size(), rank = comm->rank();
  // The same quantities over the full data in one process.
  double tp = 0, fp = 0, fn = 0;
  std::vector<int32_t> all_labels;
  for (int64_t i = 0; i < kClassified; ++i) {
    tp += predicted_class(i) == 0 && true_class(i) == 0;
    fp += predicted_class(i) == 0 && true_class(i) != 0;
    fn += predicted_class(i) != 0 && true_class(i) == 0;
    all_labels.push_back(true_class(i));
  }
  CHECK(tp / (tp + fp) == Approx(1.0 / 3));  // class 0 is predicted for 0-2, 9-11, 18-20
  CHECK(tp / (tp + fn) == Approx(3.0 / 8));
  const auto share = classified_share(rank, n);
  const int64_t local = int64_t(share->size());
  if (n > 1 && rank == n - 1) CHECK(local == 0);
  CHECK(comm->allreduce(Tensor::scalar(double(local), DType::Float64)).item<double>() == kClassified);
  for (int root = 0; root < n; ++root) {
    auto iter = std::make_shared<iterators::SerialIterator>(share, 4, false, false);
    ClassZeroPrecision evaluator(comm, iter, std::make_shared<Scorer>(), root);
    const Observation result = evaluator.evaluate();
    CHECK(evaluator.last_local_batches() == (local + 3) / 4);
    CHECK(result.count("precision") == 1);
    CHECK(result.count("recall") == 1);
    CHECK(result.count("examples") == 1);
    if (result.count("precision") && result.count("recall") && result.count("examples")) {
      CHECK(result.at("precision") == Approx(tp / (tp + fp)).epsilon(1e-12));
      CHECK(result.at("recall") == Approx(tp / (tp + fn)).epsilon(1e-12));
      CHECK(result.at("examples") == kClassified);
    }
    // The root got every example, in rank order; the other ranks ran no aggregate.
    if (rank == root)
      CHECK(evaluator.labels_seen == all_labels);
    else
      CHECK(evaluator.labels_seen.empty());
  }
  // An aggregate that throws on the root throws on every rank.
  struct AggregateFails : ClassZeroPrecision {
    using ClassZeroPrecision::ClassZeroPrecision;

   protected:
    Observation aggregate(const std::vector<BatchResult>& results) override {
      if (concat_arrays(results, "no such key").defined()) return {};
      throw Error("no arrays under that key");
    }
  };
  AggregateFails failing(comm, std::make_shared<iterators::SerialIterator>(share, 4, false, false),
                         std::make_shared<Scorer>(), n - 1);
  CHECK_THROWS_WITH(failing.evaluate(), Catch::Contains("no arrays under that key"));
}

// =============================================================================================
// Everything together in a Trainer

TEST_CASE("multi_node: a trainer with scattered data, the multi-node optimizer and evaluator") {
  auto comm = world("flat");
  const int n = comm->size(), rank = comm->rank();
  datasets::DatasetPtr train_all, test_all;
  if (rank == 0) {
    const Data d = make_data(12 * n + 5, 9);
    train_all = std::make_shared<datasets::TupleDataset>(std::vector<Tensor>{d.x, d.t});
    const Data e = make_data(7 * n + 2, 10);
    test_all = std::make_shared<datasets::TupleDataset>(std::vector<Tensor>{e.x, e.t});
  }
  auto train = mn::scatter_dataset(train_all, comm, 0, /*shuffle=*/true, 7);
  auto test = mn::scatter_dataset(test_all, comm, 0, false, 0, /*force_equal_length=*/false);

  auto model = make_model(50 + uint64_t(rank));
  auto opt = mn::create_multi_node_optimizer(std::make_shared<optimizers::Adam>(0.01), comm);
  opt->setup(model);
  auto iter = std::make_shared<iterators::SerialIterator>(train, 4, true, true, uint64_t(rank));
  auto updater = std::make_shared<training::StandardUpdater>(iter, opt);
  const auto out = std::filesystem::temp_directory_path() / ("chainermn_test_multi_node_" + std::to_string(::getpid()));
  training::Trainer trainer(updater, training::IntervalTrigger(2, training::Unit::Epoch), out.string());
  auto evaluator = std::make_shared<E::Evaluator>(std::make_shared<iterators::SerialIterator>(test, 5, false, false), model);
  auto multi = mn::create_multi_node_evaluator(evaluator, comm);
  trainer.extend(multi);
  auto log = std::make_shared<E::LogReport>();
  trainer.extend(log);
  trainer.run();
  std::filesystem::remove_all(out);

  // Every rank ran the same iterations; the first one only broadcast.
  const int64_t per_epoch = (int64_t(train->size()) + 3) / 4;
  CHECK(opt->t() == updater->iteration() - 1);
  CHECK(updater->iteration() >= 2 * per_epoch - 1);
  // The replicas agree, and so do the reported validation values.
  for (const auto& [name, p] : model->namedparams()) {
    const auto ref = comm->bcast(p.data(), 0).to_vector<double>(), mine = p.data().to_vector<double>();
    double worst = 0;
    for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::abs(ref[i] - mine[i]));
    CHECK(worst < 1e-5);
  }
  CHECK(log->log().size() == 2);
  const Observation last = log->log().empty() ? Observation{} : log->log().back();
  CHECK(last.count("validation/main/loss") == 1);
  const double loss = last.count("validation/main/loss") ? last.at("validation/main/loss").value() : NAN;
  CHECK(std::isfinite(loss));
  const double root_loss = comm->bcast(Tensor::scalar(loss, DType::Float64), 0).item<double>();
  CHECK(loss == root_loss);
  CHECK(multi->last_example_count() == 7 * n + 2);
}

// =============================================================================================
// On split communicators: even and odd ranks (Communicator::split) work apart, each half as if
// it were the whole job.

TEST_CASE("multi_node: scatter_dataset over a split scatters each half's own root's data") {
  // Each half's root (its first member) holds 11 + color examples numbered from 1000 color.
  auto comm = world();
  const int rank = comm->rank(), color = rank % 2;
  auto half = comm->split(color, rank);
  CHECK(half != nullptr);
  if (!half) return;
  const int64_t n = 11 + color, first = 1000 * color;
  datasets::DatasetPtr mine;
  if (half->rank() == 0) {
    std::vector<float> x;
    std::vector<int32_t> t;
    for (int64_t id = first; id < first + n; ++id) {
      x.push_back(float(id));
      x.push_back(float(10 * id) + 0.5f);
      t.push_back(int32_t(id));
    }
    mine = std::make_shared<datasets::TupleDataset>(
        std::vector<Tensor>{Tensor::from_vector(x, {n, 2}), Tensor::from_vector(t, {n})});
  }
  auto share = mn::scatter_dataset(mine, half, 0, /*shuffle=*/true, 5);
  bool consistent = false;
  const std::vector<int64_t> ids = ids_of(*share, consistent);
  CHECK(consistent);
  CHECK(int64_t(share->size()) == (n + half->size() - 1) / half->size());
  std::set<int64_t> covered, expected;
  for (const auto& theirs : half->allgather_obj(ids)) covered.insert(theirs.begin(), theirs.end());
  for (int64_t id = first; id < first + n; ++id) expected.insert(id);
  CHECK(covered == expected);
}

TEST_CASE("multi_node: the multi-node optimizer on a split averages within each half only") {
  // Each half starts from its first member's parameters (world rank COLOR's) and, with SGD at
  // lr 1, changes them by the mean of its own members' gradients (rank + 1 on each rank).
  constexpr mn::Reduction kBucketed = mn::Reduction::Bucketed, kCommunicator = mn::Reduction::Communicator;
  struct Case {
    std::string comm;
    mn::Reduction reduction;
    bool shared_memory;
  };
  for (const Case& c : {Case{"naive", kCommunicator, true}, Case{"flat", kCommunicator, true},
                        Case{"naive", kBucketed, true}, Case{"flat", kBucketed, false},
                        Case{"hierarchical", kBucketed, true}}) {
    CAPTURE(c.comm, c.reduction, c.shared_memory);
    auto comm = world(c.comm);
    const int rank = comm->rank(), size = comm->size(), color = rank % 2;
    auto half = comm->split(color, rank);
    CHECK(half != nullptr);
    if (!half) continue;
    mn::MultiNodeOptimizerOptions options;
    options.reduction = c.reduction;
    options.reducer.shared_memory = c.shared_memory;
    options.reducer.first_bucket_bytes = 40;
    options.reducer.bucket_bytes = 100;
    auto opt = mn::create_multi_node_optimizer(std::make_shared<optimizers::SGD>(1.0), half, options);
    auto model = make_model(100 + uint64_t(rank));
    opt->setup(model);
    opt->update();
    CHECK(max_relative_difference(*model, *make_model(100 + uint64_t(color))) == 0.0);
    std::map<std::string, std::vector<double>> before;
    for (auto& [name, p] : model->namedparams()) {
      before[name] = p.data().to_vector<double>();
      p.set_grad(Tensor::full(p.shape(), double(rank + 1)));
    }
    opt->update();
    CHECK(opt->t() == 1);
    // Two halves on one host: each shares its own parameters in memory of its own.
    if (c.reduction == mn::Reduction::Bucketed && c.shared_memory && half->size() > 1 && half->intra_size() == half->size())
      CHECK(dynamic_cast<mn::MultiNodeOptimizer&>(*opt).shares_update());
    double mean = 0;
    int members = 0;
    for (int r = color; r < size; r += 2, ++members) mean += double(r + 1);
    mean /= members;
    for (const auto& [name, p] : model->namedparams()) {
      const auto now = p.data().to_vector<double>();
      double worst = 0;
      for (size_t i = 0; i < now.size(); ++i) worst = std::max(worst, std::abs(before[name][i] - now[i] - mean));
      CHECK(worst < 1e-5);
    }
  }
}

TEST_CASE("multi_node: the multi-node evaluator over a split weights only its own half's ranks") {
  auto comm = world();
  const int rank = comm->rank(), size = comm->size(), color = rank % 2;
  auto half = comm->split(color, rank);
  CHECK(half != nullptr);
  if (!half) return;
  auto target = std::make_shared<Probe>();
  auto iter = std::make_shared<iterators::SerialIterator>(rank_data(rank), 4, false, false);
  auto evaluator = std::make_shared<E::Evaluator>(iter, target, [&](const std::vector<Variable>& arrays) {
    target->forward(arrays[0]);
    report({{"rank", double(rank)}}, target.get());
  });
  auto multi = mn::create_multi_node_evaluator(evaluator, half);
  double weighted = 0, weighted_rank = 0;
  int64_t total = 0;
  for (int r = color; r < size; r += 2) {
    const auto [mean, count] = local_mean(r);
    weighted += mean * double(count);
    weighted_rank += double(r) * double(count);
    total += count;
  }
  const Observation result = multi->evaluate();
  CHECK(multi->last_example_count() == total);
  CHECK(result.count("validation/main/mean") == 1);
  CHECK(result.count("validation/main/rank") == 1);
  if (result.count("validation/main/mean") && result.count("validation/main/rank")) {
    CHECK(result.at("validation/main/mean") == Approx(weighted / double(total)).epsilon(1e-12));
    CHECK(result.at("validation/main/rank") == Approx(weighted_rank / double(total)).epsilon(1e-12));
  }
}

TEST_CASE("multi_node: the multi-node optimizer reads and sets the actual optimizer's hyperparameters by name") {
  auto comm = world();
  auto actual = std::make_shared<optimizers::MomentumSGD>(0.1, 0.9);
  auto opt = mn::create_multi_node_optimizer(actual, comm);
  CHECK(opt->hyperparam_names() == std::vector<std::string>{"lr", "momentum"});
  opt->set_hyperparam("lr", 0.025);  // what ExponentialShift does to the updater's "main"
  CHECK(actual->lr == 0.025);
  CHECK(opt->hyperparam("lr") == 0.025);  // what observe_lr reads
  CHECK_THROWS_WITH(opt->hyperparam("alpha"), Catch::Contains("this optimizer has lr, momentum"));
}
