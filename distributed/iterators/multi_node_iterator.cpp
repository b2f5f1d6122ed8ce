#include "distributed/iterators/multi_node_iterator.h"

#include <exception>
#include <string>
#include <utility>

namespace chainermn {

using chainer::Error;
using chainer::str;
using chainer::iterators::Example;
using chainer::iterators::Iterator;
using chainer::iterators::StopIteration;

namespace {

enum class Outcome : int64_t { Ok, Stopped, Failed };

// What the master broadcasts at construction, at reset() and before every batch.
struct Header {
  int64_t call = 0;                // the MultiNodeIterator::Call the master answered
  int64_t outcome = 0;             // Outcome
  std::string message;             // the master's error, when it did not succeed
  MultiNodeIterator::State state;  // the master's actual iterator after the call
  int64_t fields = 0;              // next_batch: the tensors broadcast after the header
};

template <class... T>
void put(ByteWriter& w, const T&... v) {
  (Codec<T>::write(w, v), ...);
}
template <class... T>
void get(ByteReader& r, T&... v) {
  ((v = Codec<T>::read(r)), ...);
}

MultiNodeIterator::State state_of(const Iterator& it) {
  MultiNodeIterator::State s;
  s.epoch = it.epoch();
  s.epoch_detail = it.epoch_detail();
  s.previous_epoch_detail = it.previous_epoch_detail().value_or(-1.0);
  s.is_new_epoch = it.is_new_epoch();
  s.current_position = it.current_position();
  s.batch_size = it.batch_size();
  s.has_next = it.has_next();
  return s;
}

// The operation a call is, as error messages name it (indexed by MultiNodeIterator::Call).
const char* op_name(int64_t call) {
  static const char* const names[] = {"create_multi_node_iterator", "MultiNodeIterator::reset",
                                      "MultiNodeIterator::next_batch", "MultiNodeIterator::next"};
  return call >= 0 && call < 4 ? names[call] : "MultiNodeIterator (an unknown call)";
}

std::shared_ptr<Communicator> checked(std::shared_ptr<Communicator> comm, int rank_master) {
  if (!comm) throw Error("create_multi_node_iterator: the communicator is null");
  if (rank_master < 0 || rank_master >= comm->size())
    throw Error(str("create_multi_node_iterator: rank_master ", rank_master, " is outside [0, ", comm->size(),
                    ") (the communicator has ", comm->size(), comm->size() == 1 ? " process)" : " processes)"));
  return comm;
}

}  // namespace

template <>
struct Codec<Header> {
  static void write(ByteWriter& w, const Header& h) {
    const MultiNodeIterator::State& s = h.state;
    put(w, h.call, h.outcome, h.message, s.epoch, s.epoch_detail, s.previous_epoch_detail, s.is_new_epoch,
        s.current_position, s.batch_size, s.has_next, h.fields);
  }
  static Header read(ByteReader& r) {
    Header h;
    MultiNodeIterator::State& s = h.state;
    get(r, h.call, h.outcome, h.message, s.epoch, s.epoch_detail, s.previous_epoch_detail, s.is_new_epoch,
        s.current_position, s.batch_size, s.has_next, h.fields);
    return h;
  }
};

template <class Work>
int64_t MultiNodeIterator::exchange(Call call, Work&& work) {
  Header h;
  h.call = int64_t(call);
  std::exception_ptr error;
  if (is_master()) {
    try {
      h.fields = work();
    } catch (const StopIteration& e) {
      h.outcome = int64_t(Outcome::Stopped);
      h.message = e.what();
      error = std::current_exception();
    } catch (const std::exception& e) {
      h.outcome = int64_t(Outcome::Failed);
      h.message = e.what();
      error = std::current_exception();
    }
    if (actual_) h.state = state_of(*actual_);
  }
  h = comm_->bcast_obj(h, rank_master_);
  if (h.call != int64_t(call))
    throw Error(str(op_name(int64_t(call)), ": the master (rank ", rank_master_, ") is in ", op_name(h.call),
                    " instead; every rank must make the same calls in the same order"));
  state_ = h.state;
  if (error) std::rethrow_exception(error);  // the master: its own exception
  if (h.outcome == int64_t(Outcome::Stopped))
    throw StopIteration(str(op_name(h.call), ": the master (rank ", rank_master_, ") has no more batches: ", h.message));
  if (h.outcome == int64_t(Outcome::Failed))
    throw Error(str(op_name(h.call), ": failed on the master (rank ", rank_master_, "): ", h.message));
  return h.fields;
}

MultiNodeIterator::MultiNodeIterator(std::shared_ptr<Iterator> actual, std::shared_ptr<Communicator> comm,
                                     int rank_master)
    : comm_(checked(std::move(comm), rank_master)), rank_master_(rank_master) {
  if (is_master()) actual_ = std::move(actual);
  exchange(Call::Create, [&] {
    if (!actual_)
      throw Error(str("create_multi_node_iterator: the master (rank ", rank_master_,
                      ") makes the batches, but its actual iterator is null"));
    return int64_t(0);
  });
}

void MultiNodeIterator::check_has_next() const {
  if (!state_.has_next)
    throw StopIteration(str("MultiNodeIterator: no more batches (the master's iterator, on rank ", rank_master_,
                            ", does not repeat and its epoch is complete); call reset() to iterate again"));
}

std::vector<Tensor> MultiNodeIterator::next_batch() {
  check_has_next();
  std::vector<Tensor> batch;
  const int64_t fields = exchange(Call::NextBatch, [&] {
    batch = actual_->next_batch();
    return int64_t(batch.size());
  });
  for (int64_t i = 0; i < fields; ++i) {
    if (is_master()) comm_->bcast(batch[size_t(i)], rank_master_);  // the master keeps its own tensors
    else batch.push_back(comm_->bcast(Tensor(), rank_master_));
  }
  return batch;
}

std::vector<Example> MultiNodeIterator::next() {
  check_has_next();
  std::vector<Example> batch;
  exchange(Call::Next, [&] {
    batch = actual_->next();
    return int64_t(0);
  });
  return comm_->bcast_obj(batch, rank_master_);
}

std::optional<double> MultiNodeIterator::previous_epoch_detail() const {
  if (state_.previous_epoch_detail < 0) return std::nullopt;
  return state_.previous_epoch_detail;
}

void MultiNodeIterator::reset() {
  exchange(Call::Reset, [&] {
    actual_->reset();
    return int64_t(0);
  });
}

void MultiNodeIterator::serialize(chainer::Serializer& s) {
  if (is_master()) {
    actual_->serialize(s);
    if (s.is_reader()) state_ = state_of(*actual_);
    return;
  }
  State mirror = state_;
  s.value("current_position", mirror.current_position);
  s.value("epoch", mirror.epoch);
  s.value("is_new_epoch", mirror.is_new_epoch);
  s.value("previous_epoch_detail", mirror.previous_epoch_detail);
  s.value("epoch_detail", mirror.epoch_detail);
  s.value("has_next", mirror.has_next);
  if (!s.is_reader()) return;
  if (mirror.epoch < 0 || mirror.current_position < 0 || mirror.epoch_detail < double(mirror.epoch))
    throw Error(str("MultiNodeIterator::serialize: the snapshot's state (epoch ", mirror.epoch, ", position ",
                    mirror.current_position, ", epoch_detail ", mirror.epoch_detail, ") is not a valid position"));
  state_ = mirror;
}

void MultiNodeIterator::finalize() {
  if (actual_) actual_->finalize();
}

std::shared_ptr<Iterator> create_multi_node_iterator(std::shared_ptr<Iterator> actual,
                                                     std::shared_ptr<Communicator> comm, int rank_master) {
  return std::make_shared<MultiNodeIterator>(std::move(actual), std::move(comm), rank_master);
}

}  // namespace chainermn
