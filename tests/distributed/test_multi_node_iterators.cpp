// ChainerMN's iterators under mpiexec -n 1..4: the multi-node iterator (the master's batches and
// epochs on every rank, stopping together, snapshots, errors) and the synchronized iterator (one
// order on every rank), on the world and on split communicators. Every rank runs the same test
// cases in the same order; checks between collectives use CHECK, never REQUIRE.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "core/io/npz.h"
#include "core/io/serializer.h"
#include "datasets/iterators/multiprocess_iterator.h"
#include "datasets/iterators/serial_iterator.h"
#include "datasets/tuple_dataset.h"
#include "distributed/communicators/communicator.h"
#include "distributed/iterators/multi_node_iterator.h"
#include "distributed/iterators/synchronized_iterator.h"
#include "distributed/datasets/scatter_dataset.h"

using namespace chainer;
using iterators::Iterator;
using iterators::StopIteration;
namespace mn = chainermn;

namespace {

std::shared_ptr<mn::Communicator> world(const std::string& name = "naive") { return mn::create_communicator(name); }

// N examples numbered FIRST, FIRST + 1, ...: x = (id, 10 id + 0.5) float32, t = id int32.
datasets::DatasetPtr numbered(int64_t n, int64_t first = 0) {
  std::vector<float> x;
  std::vector<int32_t> t;
  for (int64_t i = first; i < first + n; ++i) {
    x.push_back(float(i));
    x.push_back(float(10 * i) + 0.5f);
    t.push_back(int32_t(i));
  }
  return std::make_shared<datasets::TupleDataset>(
      std::vector<Tensor>{Tensor::from_vector(x, {n, 2}), Tensor::from_vector(t, {n})});
}

// The ids of a batch of numbered examples; a row whose x does not match its id reads as -1.
std::vector<int64_t> ids_of(const std::vector<Tensor>& batch) {
  if (batch.size() != 2) return {-2};
  const auto x = batch[0].to_vector<float>();
  const auto t = batch[1].to_vector<int32_t>();
  std::vector<int64_t> ids;
  for (size_t i = 0; i < t.size(); ++i)
    ids.push_back(x.size() == 2 * t.size() && x[2 * i] == float(t[i]) && x[2 * i + 1] == float(10 * t[i]) + 0.5f
                      ? t[i]
                      : -1);
  return ids;
}
std::vector<int64_t> ids_of(const std::vector<datasets::Example>& examples) {
  std::vector<int64_t> ids;
  for (const datasets::Example& e : examples) {
    const std::vector<int64_t> one = ids_of(std::vector<Tensor>{e.at(0).reshape({1, 2}), e.at(1).reshape({1})});
    ids.insert(ids.end(), one.begin(), one.end());
  }
  return ids;
}

// What an iterator says about where it is, as numbers (previous_epoch_detail: -1 for none).
std::vector<double> state_of(const Iterator& it) {
  return {double(it.epoch()),          it.epoch_detail(),        it.previous_epoch_detail().value_or(-1.0),
          double(it.is_new_epoch()),   double(it.current_position()), double(it.has_next()),
          double(it.batch_size())};
}

std::shared_ptr<Iterator> make_iterator(bool multiprocess, const datasets::DatasetPtr& data, int64_t batch_size,
                                        bool repeat, uint64_t seed) {
  if (multiprocess) return std::make_shared<iterators::MultiprocessIterator>(data, batch_size, repeat, true, seed);
  return std::make_shared<iterators::SerialIterator>(data, batch_size, repeat, true, seed);
}

// The masters to try: the first rank and the last (the same rank in a job of one).
std::vector<int> masters(const mn::Communicator& comm) {
  return comm.size() == 1 ? std::vector<int>{0} : std::vector<int>{0, comm.size() - 1};
}

// Off the master the actual iterator is not consulted: rank by rank, none, one over other data
// (ids from 1000, another seed), or one over create_empty_dataset.
std::shared_ptr<Iterator> actual_off_master(int rank, const datasets::DatasetPtr& data, int64_t batch_size,
                                            bool repeat) {
  if (rank % 3 == 1) return nullptr;
  if (rank % 3 == 2) return make_iterator(false, numbered(int64_t(data->size()), 1000), batch_size, repeat, 99);
  return make_iterator(false, mn::create_empty_dataset(data), batch_size, repeat, 0);
}

}  // namespace

// =============================================================================================
// The multi-node iterator

TEST_CASE("multi_node_iterators: every rank gets the master's batches and epochs (batch 4 and 7, master first or last)") {
  // 25 examples, so epochs end inside a batch; three epochs, next() on every third call.
  auto comm = world();
  const int rank = comm->rank();
  const auto data = numbered(25);
  for (int64_t batch_size : {4, 7})
    for (int master : masters(*comm))
      for (bool multiprocess : {false, true}) {
        CAPTURE(batch_size, master, multiprocess);
        const auto actual = rank == master ? make_iterator(multiprocess, data, batch_size, true, 11)
                                           : actual_off_master(rank, data, batch_size, true);
        auto it = mn::create_multi_node_iterator(actual, comm, master);
        // What the master's iterator yields (a MultiprocessIterator's batches are a SerialIterator's).
        iterators::SerialIterator reference(data, batch_size, true, true, 11);
        CHECK(state_of(*it) == state_of(reference));
        std::vector<double> trace;
        int calls = 0;
        while (it->epoch() < 3 && calls < 100) {
          const std::vector<int64_t> got = calls % 3 == 2 ? ids_of(it->next()) : ids_of(it->next_batch());
          CHECK(got == ids_of(reference.next_batch()));
          CHECK(state_of(*it) == state_of(reference));
          if (rank == master) CHECK(state_of(*it) == state_of(*actual));
          trace.insert(trace.end(), got.begin(), got.end());
          const std::vector<double> state = state_of(*it);
          trace.insert(trace.end(), state.begin(), state.end());
          ++calls;
        }
        CHECK(calls == (3 * 25 + batch_size - 1) / batch_size);
        // Gathered: the same batches and states on every rank.
        const auto all = comm->allgather_obj(trace);
        for (size_t r = 0; r < all.size(); ++r) CHECK(all[r] == all[0]);
        it->finalize();
      }
}

TEST_CASE("multi_node_iterators: without repeat every rank stops on the same call") {
  // 25 examples in batches of 7: 7, 7, 7, 4, then StopIteration everywhere, decided locally.
  auto comm = world();
  const int rank = comm->rank();
  const auto data = numbered(25);
  for (int master : masters(*comm)) {
    CAPTURE(master);
    auto it = mn::create_multi_node_iterator(
        rank == master ? make_iterator(false, data, 7, false, 5) : actual_off_master(rank, data, 7, false), comm, master);
    std::vector<int64_t> sizes, seen;
    for (int i = 0; i < 4; ++i) {
      CHECK(it->has_next());
      const std::vector<int64_t> ids = ids_of(it->next_batch());
      sizes.push_back(int64_t(ids.size()));
      seen.insert(seen.end(), ids.begin(), ids.end());
    }
    CHECK(sizes == std::vector<int64_t>{7, 7, 7, 4});
    std::sort(seen.begin(), seen.end());
    std::vector<int64_t> all_ids(25);
    for (int64_t i = 0; i < 25; ++i) all_ids[size_t(i)] = i;
    CHECK(seen == all_ids);  // each example once
    CHECK(it->epoch() == 1);
    CHECK(it->is_new_epoch());
    CHECK_FALSE(it->has_next());
    if (!it->has_next()) {  // (a rank that went on would wait for a batch the master never sends)
      CHECK_THROWS_AS(it->next_batch(), StopIteration);
      CHECK_THROWS_WITH(it->next(), Catch::Contains("no more batches") && Catch::Contains("reset()"));
    }
    // reset() is collective and starts over; a loop that runs until StopIteration (as the
    // Evaluator's) ends on the same call everywhere.
    it->reset();
    CHECK(it->has_next());
    CHECK(it->epoch() == 0);
    CHECK_FALSE(it->previous_epoch_detail().has_value());
    int again = 0;
    for (;;) {
      try {
        it->next_batch();
      } catch (const StopIteration&) {
        break;
      }
      ++again;
    }
    CHECK(again == 4);
    const auto counts = comm->allgather_obj(std::vector<int64_t>{int64_t(sizes.size()), again, int64_t(it->has_next())});
    for (const auto& c : counts) CHECK(c == std::vector<int64_t>{4, 4, 0});
  }
}

TEST_CASE("multi_node_iterators: a snapshot taken mid-epoch resumes with the same batches on every rank") {
  // The master saves its actual iterator (order, generator), the others their mirrored state;
  // each rank writes and reads its own NPZ file, as snapshots do.
  auto comm = world();
  const int rank = comm->rank();
  const auto data = numbered(25);
  const auto path = std::filesystem::temp_directory_path() /
                    ("chainermn_test_multi_node_iterators_" + std::to_string(::getpid()) + ".npz");
  for (int master : masters(*comm)) {
    CAPTURE(master);
    const auto make = [&] {
      return mn::create_multi_node_iterator(rank == master ? make_iterator(false, data, 7, true, 3) : nullptr, comm,
                                            master);
    };
    auto it = make();
    for (int i = 0; i < 5; ++i) it->next_batch();  // 35 examples: epoch 1, position 10
    Serializer writer = Serializer::writer();
    it->serialize(writer);
    save_npz(path.string(), writer.entries());
    const std::vector<double> saved = state_of(*it);
    std::vector<std::vector<int64_t>> uninterrupted;
    for (int i = 0; i < 8; ++i) uninterrupted.push_back(ids_of(it->next_batch()));

    auto resumed = make();
    CHECK(resumed->epoch() == 0);
    Serializer reader = Serializer::reader(load_npz(path.string()));
    resumed->serialize(reader);
    CHECK(state_of(*resumed) == saved);
    CHECK(resumed->epoch() == 1);
    CHECK(resumed->current_position() == 10);
    std::vector<std::vector<int64_t>> continued;
    for (int i = 0; i < 8; ++i) continued.push_back(ids_of(resumed->next_batch()));
    CHECK(continued == uninterrupted);
    CHECK(state_of(*resumed) == state_of(*it));
    std::filesystem::remove(path);
  }
}

namespace {
// A dataset whose examples 6 and 9 cannot be read.
struct Unreadable : datasets::Dataset {
  size_t size() const override { return 10; }
  datasets::Example get_example(size_t i) const override {
    check_index(i);
    if (i == 6 || i == 9) throw Error(str("Unreadable: example ", i, " cannot be read"));
    return {Tensor::scalar(double(i), DType::Float32)};
  }
};
}  // namespace

TEST_CASE("multi_node_iterators: an error on the master is thrown on every rank") {
  // In order, in batches of 4: 0-3, then 4-7 (6 fails), then 8, 9, 0, 1 (9 fails).
  auto comm = world();
  const int rank = comm->rank();
  for (int master : masters(*comm)) {
    CAPTURE(master);
    auto source = std::make_shared<Unreadable>();
    auto it = mn::create_multi_node_iterator(
        rank == master ? std::make_shared<iterators::SerialIterator>(source, 4, true, false) : nullptr, comm, master);
    CHECK(it->next_batch().at(0).to_vector<float>() == std::vector<float>{0, 1, 2, 3});
    CHECK_THROWS_WITH(it->next_batch(), Catch::Contains("example 6 cannot be read"));
    const std::string where = rank == master ? "" : "on the master (rank " + std::to_string(master) + ")";
    CHECK_THROWS_WITH(it->next(), Catch::Contains(where) && Catch::Contains("example 9 cannot be read"));
  }
}

TEST_CASE("multi_node_iterators: a master outside the communicator, or without an iterator, is refused everywhere") {
  auto comm = world();
  const int size = comm->size();
  const auto data = numbered(5);
  const auto mine = std::make_shared<iterators::SerialIterator>(data, 2);
  for (int bad : {-1, size}) {
    CHECK_THROWS_WITH(mn::create_multi_node_iterator(mine, comm, bad),
                      Catch::Contains("create_multi_node_iterator: rank_master " + std::to_string(bad)) &&
                          Catch::Contains("[0, " + std::to_string(size) + ")"));
  }
  CHECK_THROWS_WITH(mn::create_multi_node_iterator(mine, nullptr), Catch::Contains("communicator is null"));
  // The master has no iterator: every rank hears of it (the others do not wait for batches).
  const int master = size - 1;
  CHECK_THROWS_WITH(mn::create_multi_node_iterator(comm->rank() == master ? nullptr : mine, comm, master),
                    Catch::Contains("master (rank " + std::to_string(master) + ")") &&
                        Catch::Contains("actual iterator is null"));
}

// =============================================================================================
// The synchronized iterator

TEST_CASE("multi_node_iterators: a synchronized iterator gives every rank one order; unsynchronized seeds do not") {
  // Each rank iterates its own data (ids from 1000 rank) with a seed of its own going in.
  auto comm = world();
  const int rank = comm->rank(), size = comm->size();
  const int64_t first = 1000 * rank;
  const auto data = numbered(25, first);
  // Two epochs of indices (id - first), after checking that every id is this rank's.
  const auto order_of = [&](Iterator& it) {
    std::vector<int64_t> order;
    for (int i = 0; i < 10; ++i)
      for (int64_t id : ids_of(it.next_batch())) order.push_back(id >= first && id < first + 25 ? id - first : -1);
    return order;
  };
  std::vector<int64_t> identity(25);
  for (int64_t i = 0; i < 25; ++i) identity[size_t(i)] = i;
  for (bool multiprocess : {false, true}) {
    CAPTURE(multiprocess);
    const auto plain = comm->allgather_obj(order_of(*make_iterator(multiprocess, data, 5, true, uint64_t(rank + 1))));
    if (size > 1) CHECK(plain[1] != plain[0]);  // what synchronizing prevents

    auto synced = mn::create_synchronized_iterator(make_iterator(multiprocess, data, 5, true, uint64_t(rank + 1)), comm);
    const std::vector<int64_t> order = order_of(*synced);
    const auto all = comm->allgather_obj(order);
    for (size_t r = 0; r < all.size(); ++r) CHECK(all[r] == all[0]);
    // Still shuffled, a fresh permutation every epoch.
    std::vector<int64_t> epoch1(order.begin(), order.begin() + 25), epoch2(order.begin() + 25, order.end());
    CHECK(epoch1 != identity);
    CHECK(epoch1 != epoch2);
    std::sort(epoch1.begin(), epoch1.end());
    std::sort(epoch2.begin(), epoch2.end());
    CHECK(epoch1 == identity);
    CHECK(epoch2 == identity);
    // reset() replays it.
    synced->reset();
    CHECK(order_of(*synced) == order);
    synced->finalize();
  }
}

TEST_CASE("multi_node_iterators: the synchronized iterator refuses what it cannot synchronize, on every rank") {
  auto comm = world();
  const int rank = comm->rank(), size = comm->size();
  const int last = size - 1;
  const auto data = numbered(25);
  // The last rank passes an iterator without a seed (a multi-node iterator; collective).
  auto multi = mn::create_multi_node_iterator(std::make_shared<iterators::SerialIterator>(data, 5), comm, 0);
  CHECK_THROWS_WITH(
      mn::create_synchronized_iterator(rank == last ? multi : std::make_shared<iterators::SerialIterator>(data, 5), comm),
      Catch::Contains("create_synchronized_iterator: rank " + std::to_string(last)) &&
          Catch::Contains("neither a SerialIterator nor a MultiprocessIterator"));
  CHECK_THROWS_WITH(mn::create_synchronized_iterator(nullptr, comm), Catch::Contains("rank 0: the iterator is null"));
  if (size > 1)
    CHECK_THROWS_WITH(
        mn::create_synchronized_iterator(
            std::make_shared<iterators::SerialIterator>(numbered(rank == last ? 26 : 25), 5), comm),
        Catch::Contains("differ in length") && Catch::Contains("rank " + std::to_string(last) + ": 26 examples"));
}

// =============================================================================================
// On split communicators

TEST_CASE("multi_node_iterators: on a split communicator each half follows its own master") {
  // Even and odd ranks; each half's master is its last member and iterates its own data (ids
  // from 1000 color). Between batches the parent communicator carries its own collectives.
  auto comm = world();
  const int rank = comm->rank(), size = comm->size(), color = rank % 2;
  auto half = comm->split(color, rank);
  CHECK(half != nullptr);
  if (!half) return;
  const int master = half->size() - 1;
  const auto data = numbered(25, 1000 * color);
  auto it = mn::create_multi_node_iterator(
      half->rank() == master ? make_iterator(false, data, 4, true, uint64_t(7 + color)) : nullptr, half, master);
  iterators::SerialIterator reference(data, 4, true, true, uint64_t(7 + color));
  for (int i = 0; i < 10; ++i) {
    CHECK(ids_of(it->next_batch()) == ids_of(reference.next_batch()));
    CHECK(state_of(*it) == state_of(reference));
    CHECK(comm->allreduce(Tensor::scalar(rank, DType::Int64)).item<int64_t>() == int64_t(size) * (size - 1) / 2);
  }
  // The synchronized iterator over a half: one order within it.
  auto synced = mn::create_synchronized_iterator(make_iterator(false, numbered(25), 5, true, uint64_t(rank)), half);
  std::vector<int64_t> order;
  for (int i = 0; i < 5; ++i) {
    const std::vector<int64_t> ids = ids_of(synced->next_batch());
    order.insert(order.end(), ids.begin(), ids.end());
  }
  const auto all = half->allgather_obj(order);
  for (size_t r = 0; r < all.size(); ++r) CHECK(all[r] == all[0]);
}
