#include "distributed/datasets/scatter_dataset.h"

#include <optional>
#include <string>

#include "core/util/random.h"
#include "datasets/dataset_description.h"
#include "datasets/list_dataset.h"
#include "datasets/sub_dataset.h"
#include "datasets/tuple_dataset.h"
#include "distributed/runtime/object_serialization.h"

namespace chainermn {

using chainer::Error;
using chainer::Tensor;
using chainer::datasets::DatasetPtr;
using chainer::datasets::Example;
using chainer::datasets::ListDataset;
using chainer::datasets::SubDataset;
using chainer::datasets::TupleDataset;

namespace {

constexpr int kScatterTag = 7301;

void check_root(int root, int size, const char* what) {
  if (root < 0 || root >= size)
    throw Error(chainer::str(what, ": root ", root, " is not a rank of a communicator of size ", size));
}

// SIZE examples without fields: what a pipeline stage with no inputs iterates over.
class EmptyExamples : public chainer::datasets::Dataset {
 public:
  explicit EmptyExamples(size_t size) : size_(size) {}
  size_t size() const override { return size_; }
  chainer::datasets::Example get_example(size_t i) const override {
    check_index(i);
    return {};
  }
  std::vector<Tensor> get_batch(const std::vector<size_t>& indices) const override {
    for (size_t i : indices) check_index(i);
    return {};
  }

 private:
  size_t size_;
};

// A worker's share: its rows, or N examples without fields where the dataset's have none
// (create_empty_dataset's, as a model-parallel stage without inputs scatters).
DatasetPtr share_of(std::vector<Tensor> rows, int64_t n) {
  if (rows.empty()) return std::make_shared<EmptyExamples>(size_t(n));
  return std::make_shared<TupleDataset>(std::move(rows));
}

// Zero-row tensors with the fields of DATASET (none for examples without fields).
std::vector<Tensor> empty_fields(const chainer::datasets::Dataset& dataset) {
  if (auto* tuple = dynamic_cast<const TupleDataset*>(&dataset)) {
    std::vector<Tensor> out;
    for (const Tensor& f : tuple->fields()) {
      chainer::Shape shape = f.shape();
      shape[0] = 0;
      out.push_back(Tensor::empty(shape, f.dtype()));
    }
    return out;
  }
  if (dynamic_cast<const EmptyExamples*>(&dataset)) return {};
  try {
    std::vector<Tensor> out = dataset.get_batch({});
    bool ok = !out.empty();
    for (const Tensor& t : out) ok = ok && t.defined() && t.ndim() >= 1 && t.size(0) == 0;
    if (ok) return out;
  } catch (const Error&) {
    // This kind of dataset cannot make an empty batch; look at an example instead.
  }
  if (dataset.size() == 0)
    throw Error("scatter_dataset: the dataset is empty and cannot make an empty batch, so the shapes of its "
                "fields are unknown");
  std::vector<Tensor> out;
  for (const Tensor& t : dataset.get_example(0)) {
    chainer::Shape shape{0};
    shape.insert(shape.end(), t.shape().begin(), t.shape().end());
    out.push_back(Tensor::empty(shape, t.dtype()));
  }

  return out;
}

// The examples INDICES of DATASET, as get_example gives them.
std::vector<Example> examples_of(const chainer::datasets::Dataset& dataset, const std::vector<size_t>& indices) {
  std::vector<Example> out;
  out.reserve(indices.size());
  for (size_t i : indices) out.push_back(dataset.get_example(i));
  return out;
}

}  // namespace

std::vector<std::pair<int64_t, int64_t>> scatter_index_table(int64_t n, int size, bool force_equal_length) {
  if (size <= 0) throw Error(chainer::str("scatter_index: the communicator size must be positive, got ", size));
  if (n < 0) throw Error(chainer::str("scatter_index: the number of samples must be non-negative, got ", n));
  std::vector<std::pair<int64_t, int64_t>> table;
  table.reserve(size_t(size));
  if (force_equal_length) {
    const int64_t len = (n + size - 1) / size;
    for (int i = 0; i < size; ++i) {
      // floor(n * i / size), without forming n * i.
      const int64_t b = (n / size) * i + (n % size) * i / size;
      table.emplace_back(b, b + len);
    }
  } else {
    int64_t b = 0;
    const int64_t threshold = n % size;
    for (int i = 0; i < size; ++i) {
      const int64_t stride = n / size + (i < threshold ? 1 : 0);
      table.emplace_back(b, b + stride);
      b += stride;
    }
  }
  return table;
}

std::pair<int64_t, int64_t> scatter_index(int64_t n_total_samples, const Communicator& comm, int root,
                                          bool force_equal_length) {
  check_root(root, comm.size(), "scatter_index");
  std::vector<Tensor> xs;
  std::string error;
  if (comm.rank() == root) {
    std::vector<std::pair<int64_t, int64_t>> table;
    try {
      table = scatter_index_table(n_total_samples, comm.size(), force_equal_length);
    } catch (const Error& e) {
      error = e.what();
      table.assign(size_t(comm.size()), {-1, -1});  // tells the others that the root failed
    }
    for (const auto& [b, e] : table) xs.push_back(Tensor::from_vector(std::vector<int64_t>{b, e}));
  }
  const std::vector<int64_t> mine = comm.scatter(xs, root).to_vector<int64_t>();
  if (!error.empty()) throw Error(error);
  if (mine.size() != 2 || mine[0] < 0)
    throw Error(chainer::str("scatter_index: failed on the root (rank ", root, "); see its error"));
  return {mine[0], mine[1]};
}

std::pair<int64_t, int64_t> scatter_index(int64_t n_total_samples, const std::shared_ptr<Communicator>& comm, int root,
                                          bool force_equal_length) {
  if (!comm) throw Error("scatter_index: the communicator is null");
  return scatter_index(n_total_samples, *comm, root, force_equal_length);
}

namespace {
// The order the shares are taken in: a permutation of N drawn from Generator(SEED) with
// SHUFFLE, else none (the examples as they are).
std::vector<int64_t> share_order(int64_t n, bool shuffle, uint64_t seed) {
  return shuffle ? chainer::Generator(seed).permutation(n) : std::vector<int64_t>{};
}

// The indices into the whole dataset of the share RANGE of ORDER (none: the examples as they are),
// as a SubDataset of (RANGE, ORDER) reads them.
std::vector<int64_t> share_indices(std::pair<int64_t, int64_t> range, const std::vector<int64_t>& order) {
  std::vector<int64_t> out;
  out.reserve(size_t(range.second - range.first));
  for (int64_t j = range.first; j < range.second; ++j) out.push_back(order.empty() ? j : order[size_t(j)]);
  return out;
}
}  // namespace

std::vector<int64_t> share_indices(int64_t n, int size, int rank, bool shuffle, uint64_t seed,
                                   bool force_equal_length) {
  const auto table = scatter_index_table(n, size, force_equal_length);
  if (rank < 0 || rank >= size)
    throw Error(chainer::str("share_indices: rank ", rank, " is not a rank of a communicator of size ", size));
  return share_indices(table[size_t(rank)], share_order(n, shuffle, seed));
}

DatasetPtr share_of_dataset(const DatasetPtr& dataset, const Communicator& comm, bool shuffle, uint64_t seed,
                            bool force_equal_length) {
  if (!dataset) throw Error("share_of_dataset: the dataset is null");
  const int64_t n = int64_t(dataset->size());
  const auto [b, e] = scatter_index_table(n, comm.size(), force_equal_length)[size_t(comm.rank())];
  return std::make_shared<SubDataset>(dataset, size_t(b), size_t(e), share_order(n, shuffle, seed));
}

DatasetPtr scatter_dataset(const DatasetPtr& dataset, const Communicator& comm, int root, bool shuffle, uint64_t seed,
                           bool force_equal_length) {
  const int size = comm.size(), rank = comm.rank();
  check_root(root, size, "scatter_dataset");

  // 1. The root says how many examples there are (or why it cannot scatter).
  using Header = std::pair<std::string, int64_t>;
  Header header{"", 0};
  std::vector<int64_t> order;
  if (rank == root) {
    try {
      if (!dataset) throw Error(chainer::str("scatter_dataset: the dataset on the root (rank ", root, ") is null"));
      header.second = int64_t(dataset->size());
      order = share_order(header.second, shuffle, seed);
    } catch (const std::exception& e) {
      header.first = e.what();
    }
  }
  header = deserialize_object<Header>(comm.bcast_bytes(rank == root ? serialize_object(header) : std::string(), root));
  if (!header.first.empty()) {
    if (rank == root) throw Error(header.first);
    throw Error(chainer::str("scatter_dataset: failed on the root (rank ", root, "): ", header.first));
  }
  const auto table = scatter_index_table(header.second, size, force_equal_length);

  // 2. The root sends each worker its share: (error, number of fields) then the fields,
  //    (error, kDescribed) then the share's description, or (error, kExamples) then the
  //    share's examples as one object (ragged data: examples whose shapes differ).
  using Part = std::pair<std::string, int64_t>;
  constexpr int64_t kDescribed = -1, kExamples = -2;
  const bool listed = rank == root && std::dynamic_pointer_cast<const ListDataset>(dataset) != nullptr;
  DatasetPtr mine;
  std::string failure;
  if (rank == root) {
    for (int i = 0; i < size; ++i) {
      std::vector<Tensor> rows;
      std::optional<std::string> description;
      std::optional<std::vector<Example>> examples;
      if (failure.empty()) {
        try {
          const auto [b, e] = table[size_t(i)];
          if (i == root) {  // a view: the root keeps its dataset, so a copy would only double it
            mine = std::make_shared<SubDataset>(dataset, size_t(b), size_t(e), order);
            continue;
          }
          std::vector<size_t> indices;
          for (int64_t j : share_indices({b, e}, order)) indices.push_back(size_t(j));
          description = dataset->describe(indices);
          if (!description && listed) examples = examples_of(*dataset, indices);
          if (!description && !examples) {
            try {
              rows = indices.empty() ? empty_fields(*dataset) : dataset->get_batch(indices);
            } catch (const Error&) {
              // Examples that do not stack (ragged data behind a SubDataset or TransformDataset)
              // travel as they are; if reading them fails too, that error is the one reported.
              examples = examples_of(*dataset, indices);
            }
          }
          for (size_t k = 0; k < rows.size(); ++k)
            if (!rows[k].defined() || rows[k].ndim() < 1 || rows[k].size(0) != e - b)
              throw Error(chainer::str("scatter_dataset: get_batch of ", e - b, " examples returned field ", k,
                                       rows[k].defined() ? " of shape " + chainer::shape_str(rows[k].shape())
                                                         : std::string(" undefined")));
        } catch (const std::exception& ex) {
          failure = ex.what();
          rows.clear();
          description.reset();
          examples.reset();
        }
      }
      if (i == root) continue;
      const int64_t what = description ? kDescribed : examples ? kExamples : int64_t(rows.size());
      comm.send_bytes(serialize_object(Part{failure, what}), i, kScatterTag);
      if (description) comm.send_bytes(*description, i, kScatterTag);
      if (examples) comm.send_bytes(serialize_object(*examples), i, kScatterTag);
      for (const Tensor& t : rows) comm.send(t, i, kScatterTag);
    }
  } else {
    const Part part = deserialize_object<Part>(comm.recv_bytes(root, kScatterTag));
    if (part.first.empty() && part.second == kDescribed) {
      const std::string description = comm.recv_bytes(root, kScatterTag);
      try {
        mine = chainer::datasets::build_dataset(description);
      } catch (const std::exception& ex) {
        failure = chainer::str("scatter_dataset: rank ", rank, " cannot build its share: ", ex.what());
      }
    } else if (part.first.empty() && part.second == kExamples) {
      auto examples = deserialize_object<std::vector<Example>>(comm.recv_bytes(root, kScatterTag));
      try {
        mine = std::make_shared<ListDataset>(std::move(examples));
      } catch (const std::exception& ex) {
        failure = chainer::str("scatter_dataset: rank ", rank, " cannot build its share: ", ex.what());
      }
    } else if (part.first.empty()) {
      std::vector<Tensor> fields;
      for (int64_t k = 0; k < part.second; ++k) fields.push_back(comm.recv(root, kScatterTag));
      mine = share_of(std::move(fields), table[size_t(rank)].second - table[size_t(rank)].first);
    }
  }

  // 3. Everyone learns whether every share got through, so either all ranks return or all throw.
  const std::vector<std::string> statuses = comm.allgather_bytes(failure);
  if (!statuses[size_t(root)].empty()) {
    if (rank == root) throw Error(statuses[size_t(root)]);
    throw Error(chainer::str("scatter_dataset: failed on the root (rank ", root, "): ", statuses[size_t(root)]));
  }
  for (const std::string& status : statuses)
    if (!status.empty()) throw Error(status);
  return mine;
}

DatasetPtr scatter_dataset(const DatasetPtr& dataset, const std::shared_ptr<Communicator>& comm, int root, bool shuffle,
                           uint64_t seed, bool force_equal_length) {
  if (!comm) throw Error("scatter_dataset: the communicator is null");
  return scatter_dataset(dataset, *comm, root, shuffle, seed, force_equal_length);
}


DatasetPtr create_empty_dataset(const DatasetPtr& dataset) {
  if (!dataset) throw Error("create_empty_dataset: the dataset is null");
  return std::make_shared<EmptyExamples>(dataset->size());
}

DatasetPtr create_empty_dataset(int64_t size) {
  if (size < 0) throw Error(chainer::str("create_empty_dataset: size must be at least 0, got ", size));
  return std::make_shared<EmptyExamples>(size);
}

DatasetPtr create_empty_dataset_from_root(const DatasetPtr& dataset, const Communicator& comm, int root) {
  check_root(root, comm.size(), "create_empty_dataset_from_root");
  const bool here = comm.rank() == root;
  // -1 carries "the root has no dataset" to every rank, so all of them throw alike.
  const int64_t size = comm.bcast_obj<int64_t>(here ? (dataset ? int64_t(dataset->size()) : -1) : 0, root);
  if (size < 0) throw Error(chainer::str("create_empty_dataset_from_root: the dataset of root rank ", root, " is null"));
  return here ? dataset : std::make_shared<EmptyExamples>(size);
}

}  // namespace chainermn
