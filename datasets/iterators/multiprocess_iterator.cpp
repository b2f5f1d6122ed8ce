#include "datasets/iterators/multiprocess_iterator.h"

#include <algorithm>
#include <chrono>

#include "core/ops/ops.h"
#include "core/util/parallel.h"

namespace chainer::iterators {

namespace {
size_t checked_size(const datasets::DatasetPtr& dataset, const char* owner) {
  if (!dataset) throw Error(str(owner, ": the dataset is null"));
  return dataset->size();
}

int64_t checked_processes(int64_t n_processes) {
  if (n_processes < 0)
    throw Error(str("MultiprocessIterator: n_processes must be at least 0 (0: one per compute thread), got ",
                    n_processes));
  return n_processes == 0 ? num_threads() : n_processes;
}
}  // namespace

MultiprocessIterator::MultiprocessIterator(datasets::DatasetPtr dataset, int64_t batch_size, bool repeat,
                                           bool shuffle, uint64_t seed, int64_t n_prefetch, int64_t n_processes,
                                           int64_t shared_mem)
    : dataset_(std::move(dataset)),
      n_prefetch_(n_prefetch),
      n_processes_(checked_processes(n_processes)),
      state_("MultiprocessIterator", checked_size(dataset_, "MultiprocessIterator"), batch_size, repeat, shuffle,
             seed),
      ahead_(state_) {
  if (n_prefetch < 1) throw Error(str("MultiprocessIterator: n_prefetch must be at least 1, got ", n_prefetch));
  if (shared_mem < 0) throw Error(str("MultiprocessIterator: shared_mem must be at least 0, got ", shared_mem));
}

MultiprocessIterator::~MultiprocessIterator() { stop(); }

void MultiprocessIterator::work() {
  std::unique_lock lock(mutex_);
  for (;;) {
    // Plan batches while there is room: every worker plans, so none waits on another to.
    while (!stopping_ && int64_t(planned_.size()) < n_prefetch_ && ahead_.has_next()) {
      Planned batch{ahead_.next_indices(), ahead_, as_examples_, {}, {}, {}};
      const size_t chunks = std::clamp<size_t>(size_t(n_processes_), 1, std::max<size_t>(batch.indices.size(), 1));
      batch.chunks.resize(chunks);
      if (batch.as_examples) batch.example_chunks.resize(chunks);
      batch.errors.resize(chunks);
      planned_.push_back(std::move(batch));
      work_.notify_all();
    }
    if (stopping_) return;
    auto open = std::find_if(planned_.begin(), planned_.end(), [](const Planned& b) { return b.taken < b.chunks.size(); });
    if (open == planned_.end()) {
      work_.wait(lock);
      continue;
    }
    // Chunk c of the batch: examples [n c / chunks, n (c + 1) / chunks). Deque elements stay
    // where they are while others are pushed, and this batch is not handed out before it is done.
    Planned& batch = *open;
    const size_t c = batch.taken++, n = batch.indices.size(), chunks = batch.chunks.size();
    const std::vector<size_t> part(batch.indices.begin() + ptrdiff_t(n * c / chunks),
                                   batch.indices.begin() + ptrdiff_t(n * (c + 1) / chunks));
    const bool as_examples = batch.as_examples;
    lock.unlock();
    std::vector<Tensor> fields;
    std::vector<Example> examples;
    std::exception_ptr error;
    try {
      if (as_examples)
        for (size_t i : part) examples.push_back(dataset_->get_example(i));
      else
        fields = dataset_->get_batch(part);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    batch.chunks[c] = std::move(fields);
    if (as_examples) batch.example_chunks[c] = std::move(examples);
    batch.errors[c] = error;
    if (++batch.done == chunks) ready_.notify_all();
  }
}

void MultiprocessIterator::stop() {
  if (workers_.empty()) return;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_.notify_all();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
  stopping_ = false;
  planned_.clear();
}

MultiprocessIterator::Planned MultiprocessIterator::take(bool as_examples) {
  const auto start = std::chrono::steady_clock::now();
  struct AddTime {  // whether the batch is returned or an error thrown
    double& total;
    std::chrono::steady_clock::time_point start;
    ~AddTime() { total += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); }
  } add_time{data_seconds_, start};
  if (error_) std::rethrow_exception(error_);
  state_.check_has_next();
  {
    std::lock_guard lock(mutex_);
    as_examples_ = as_examples;  // before the workers start, so the first batches are planned right
  }
  if (workers_.empty()) {
    ahead_ = state_;
    for (int64_t i = 0; i < n_processes_; ++i) workers_.emplace_back(&MultiprocessIterator::work, this);
  }

  std::unique_lock lock(mutex_);
  ready_.wait(lock, [&] { return !planned_.empty() && planned_.front().done == planned_.front().chunks.size(); });
  Planned batch = std::move(planned_.front());
  planned_.pop_front();
  lock.unlock();
  work_.notify_all();  // room for another batch

  for (const std::exception_ptr& e : batch.errors)
    if (e) {
      error_ = e;
      std::rethrow_exception(error_);
    }
  state_ = batch.state;
  return batch;
}

namespace {
// The fields of a batch planned stacked, its chunks joined along the examples (on the calling
// thread: a copy of the batch, small beside producing it).
std::vector<Tensor> joined(std::vector<std::vector<Tensor>>& chunks) {
  if (chunks.size() == 1) return std::move(chunks.front());
  std::vector<Tensor> fields(chunks.front().size());
  for (size_t f = 0; f < fields.size(); ++f) {
    std::vector<Tensor> parts;
    for (const std::vector<Tensor>& chunk : chunks) {
      if (chunk.size() != fields.size())
        throw Error(str("MultiprocessIterator: the dataset's get_batch returned ", chunk.size(), " fields for one part "
                        "of a batch and ", fields.size(), " for another"));
      parts.push_back(chunk[f]);
    }
    fields[f] = ops::concat(parts, 0);
  }
  return fields;
}
}  // namespace

std::vector<Tensor> MultiprocessIterator::next_batch() {
  Planned batch = take(false);
  // Planned for next() before this call (the call in use changed): gathered again, stacked.
  if (batch.as_examples) return dataset_->get_batch(batch.indices);
  return joined(batch.chunks);
}

std::vector<Example> MultiprocessIterator::next() {
  Planned batch = take(true);
  std::vector<Example> examples;
  if (batch.as_examples) {
    for (std::vector<Example>& chunk : batch.example_chunks)
      for (Example& e : chunk) examples.push_back(std::move(e));
    return examples;
  }
  // Planned for next_batch() before this call: row views of its stacked fields.
  const std::vector<Tensor> fields = joined(batch.chunks);
  const int64_t n = fields.empty() ? 0 : fields.front().size(0);
  examples.resize(size_t(n));
  for (int64_t j = 0; j < n; ++j)
    for (const Tensor& field : fields) examples[size_t(j)].push_back(field[j]);
  return examples;
}

void MultiprocessIterator::reset() {
  stop();
  error_ = nullptr;
  state_.reset();
}

void MultiprocessIterator::reseed(uint64_t seed) {
  stop();  // the prefetched batches follow the old order
  error_ = nullptr;
  state_.reseed(seed);
}

void MultiprocessIterator::serialize(Serializer& serializer) {
  if (!serializer.is_reader()) {
    state_.serialize(serializer);
    return;
  }
  stop();  // the prefetched batches belong to the old position
  state_.serialize(serializer);
  error_ = nullptr;
}

void MultiprocessIterator::continue_epoch_over(std::vector<int64_t> indices) {
  stop();  // the prefetched batches follow the old order
  error_ = nullptr;
  state_.continue_epoch_over(std::move(indices));
}

}  // namespace chainer::iterators
