#include "distributed/iterators/synchronized_iterator.h"

#include <string>
#include <utility>

#include "core/util/random.h"
#include "datasets/iterators/multiprocess_iterator.h"
#include "datasets/iterators/serial_iterator.h"

namespace chainermn {

using chainer::Error;
using chainer::str;
using chainer::iterators::Iterator;
using chainer::iterators::MultiprocessIterator;
using chainer::iterators::SerialIterator;

namespace {

// The dataset ACTUAL iterates, or null when its order cannot be reseeded.
chainer::datasets::DatasetPtr reseedable_dataset(const Iterator* actual) {
  if (auto* s = dynamic_cast<const SerialIterator*>(actual)) return s->dataset();
  if (auto* m = dynamic_cast<const MultiprocessIterator*>(actual)) return m->dataset();
  return nullptr;
}

void reseed(Iterator& actual, uint64_t seed) {
  if (auto* s = dynamic_cast<SerialIterator*>(&actual)) return s->reseed(seed);
  auto* m = dynamic_cast<MultiprocessIterator*>(&actual);
  CHAINER_ASSERT(m, "create_synchronized_iterator: an iterator that reseedable_dataset accepted cannot be reseeded");
  m->reseed(seed);
}

}  // namespace

std::shared_ptr<Iterator> create_synchronized_iterator(std::shared_ptr<Iterator> actual,
                                                       std::shared_ptr<Communicator> comm) {
  if (!comm) throw Error("create_synchronized_iterator: the communicator is null");
  // Every rank says what is wrong with its iterator (or nothing), its dataset's length and a
  // seed; one allgather lets every rank reach the same verdict and take rank 0's seed.
  const chainer::datasets::DatasetPtr dataset = reseedable_dataset(actual.get());
  std::string problem;
  if (!actual) problem = "the iterator is null";
  else if (!dataset)
    problem = "its iterator is neither a SerialIterator nor a MultiprocessIterator, whose orders come from a seed";
  using Report = std::pair<std::string, std::pair<uint64_t, uint64_t>>;  // (problem, (seed, dataset length))
  const uint64_t seed = chainer::random::default_generator().next_u64();
  const std::vector<Report> all = comm->allgather_obj(Report{problem, {seed, dataset ? dataset->size() : 0}});

  std::string errors;
  for (size_t r = 0; r < all.size(); ++r)
    if (!all[r].first.empty()) errors += str(errors.empty() ? "" : "; ", "rank ", r, ": ", all[r].first);
  if (!errors.empty()) throw Error(str("create_synchronized_iterator: ", errors));
  for (size_t r = 1; r < all.size(); ++r)
    if (all[r].second.second != all[0].second.second)
      throw Error(str("create_synchronized_iterator: the datasets differ in length (rank 0: ", all[0].second.second,
                      " examples, rank ", r, ": ", all[r].second.second,
                      " examples); the ranks can only share an order over datasets of one length"));
  reseed(*actual, all[0].second.first);
  return actual;
}

}  // namespace chainermn
