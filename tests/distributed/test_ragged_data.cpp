// Ragged data across processes: scatter_dataset of examples of different shapes (each rank gets
// exactly the root's examples of its share, in closed form: share_indices), with shuffle and
// force_equal_length, through a ListDataset or a dataset whose get_batch cannot stack them; and
// the multi-node iterator handing such examples to every rank. Run under mpiexec with 1 to 4
// processes; checks between collectives use CHECK, so no rank is left waiting in a collective.
#include <catch2/catch.hpp>

#include "datasets/iterators/serial_iterator.h"
#include "datasets/list_dataset.h"
#include "datasets/sub_dataset.h"
#include "datasets/transform_dataset.h"
#include "distributed/communicators/communicator.h"
#include "distributed/datasets/scatter_dataset.h"
#include "distributed/iterators/multi_node_iterator.h"
#include "same_example.h"

using namespace chainer;
using chainer::datasets::Example;
using chainer::datasets::ListDataset;
namespace mn = chainermn;

using chainer::testing::same_example;

namespace {

// N examples of three fields whose shapes and dtypes vary with the index i:
// {ids (i % 4 + 1,) int32 = 100 i + k, features (i % 3, 2) float32 = i + 0.5 k, id () int64 = i}.
std::vector<Example> ragged_examples(int64_t n) {
  std::vector<Example> out;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int32_t> ids;
    for (int64_t k = 0; k <= i % 4; ++k) ids.push_back(int32_t(100 * i + k));
    std::vector<float> features;
    for (int64_t k = 0; k < 2 * (i % 3); ++k) features.push_back(float(i) + 0.5f * float(k));
    out.push_back({Tensor::from_vector(ids), Tensor::from_vector(features, {i % 3, 2}),
                   Tensor::scalar(double(i), DType::Int64)});
  }
  return out;
}

}  // namespace

TEST_CASE("ragged: scatter_dataset gives every rank exactly the root's examples of its share") {
  auto comm = mn::create_communicator("naive");
  const int n = comm->size(), rank = comm->rank();
  for (int64_t total : {int64_t(0), int64_t(1), int64_t(n), int64_t(5 * n - 1)})
    for (int root = 0; root < n; ++root)
      for (bool shuffle : {false, true})
        for (bool force : {true, false})
          for (bool transformed : {false, true}) {
            CAPTURE(total, root, shuffle, force, transformed, n);
            const std::vector<Example> all = ragged_examples(total);
            // A ListDataset travels as its examples; so does a dataset over one whose get_batch
            // cannot stack them (a TransformDataset, whatever its transform).
            datasets::DatasetPtr original = std::make_shared<ListDataset>(all);
            if (transformed)
              original = std::make_shared<datasets::TransformDataset>(original, [](const Example& e) { return e; });
            auto mine = mn::scatter_dataset(rank == root ? original : nullptr, comm, root, shuffle, 17, force);
            CHECK(mine != nullptr);
            if (!mine) continue;
            // The root keeps a view; a ListDataset's share is a ListDataset elsewhere (a share of
            // the transform whose examples happen to stack may travel as rows: the same examples).
            if (rank == root) CHECK(std::dynamic_pointer_cast<const datasets::SubDataset>(mine) != nullptr);
            else if (!transformed) CHECK(std::dynamic_pointer_cast<const ListDataset>(mine) != nullptr);
            // Closed form: example j of this rank's share is the root's example share_indices[j].
            const std::vector<int64_t> want = mn::share_indices(total, n, rank, shuffle, 17, force);
            CHECK(mine->size() == want.size());
            for (size_t j = 0; j < std::min(mine->size(), want.size()); ++j) {
              CAPTURE(j, want[j]);
              CHECK(same_example(mine->get_example(j), all[size_t(want[j])]));
            }
          }
}

TEST_CASE("ragged: a scattered share iterates with next() and its epochs cover the share") {
  auto comm = mn::create_communicator("naive");
  const int n = comm->size(), rank = comm->rank();
  const std::vector<Example> all = ragged_examples(4 * n + 1);
  auto mine = mn::scatter_dataset(rank == 0 ? std::make_shared<ListDataset>(all) : nullptr, comm, 0, true, 3);
  const std::vector<int64_t> want = mn::share_indices(int64_t(all.size()), n, rank, true, 3);
  iterators::SerialIterator it(mine, 2, false, false);
  std::vector<int64_t> seen;
  while (it.has_next())
    for (const Example& e : it.next()) seen.push_back(e.at(2).item<int64_t>());
  CHECK(seen == want);
}

TEST_CASE("ragged: the multi-node iterator hands the master's ragged examples to every rank") {
  auto comm = mn::create_communicator("naive");
  const std::vector<Example> all = ragged_examples(7);
  std::shared_ptr<iterators::Iterator> actual;
  if (comm->rank() == 0)
    actual = std::make_shared<iterators::SerialIterator>(std::make_shared<ListDataset>(all), 3, true, true, 11);
  iterators::SerialIterator reference(std::make_shared<ListDataset>(all), 3, true, true, 11);
  auto it = mn::create_multi_node_iterator(actual, comm, 0);
  for (int step = 0; step < 4; ++step) {
    const std::vector<Example> got = it->next(), want = reference.next();
    CHECK(got.size() == want.size());
    for (size_t j = 0; j < std::min(got.size(), want.size()); ++j) CHECK(same_example(got[j], want[j]));
    CHECK(it->epoch() == reference.epoch());
  }
}
