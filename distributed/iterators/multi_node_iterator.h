/// @file
/// The multi-node iterator, as chainermn.iterators.create_multi_node_iterator: one rank (the
/// master) iterates its dataset and every rank of the communicator gets the master's batches, so
/// processes that hold no data (the later stages of a model-parallel pipeline) run the same
/// iterations on the same examples and see the same epochs.
///
/// next_batch() and next() are collective: the master takes the batch from its actual iterator
/// and broadcasts a header with its state after the batch (epoch, epoch_detail,
/// previous_epoch_detail, is_new_epoch, current_position, has_next), then the batch (next_batch's
/// tensors with Communicator::bcast, next()'s examples as one object). So every rank reports the
/// master's state, and has_next() is answered without communication: with repeat off, every rank
/// throws StopIteration on the same call. An error on the master (its dataset failing) travels in
/// the header and is thrown on every rank, so nobody is left waiting for a batch. A batch in device
/// memory reaches the other ranks in host memory, as every collective's result does.
///
/// Off the master the actual iterator is not consulted: it may be null, or iterate
/// create_empty_dataset (distributed/datasets/scatter_dataset.h). Construction and reset() are collective
/// (the master's state is broadcast); serialize() is local: the master saves its actual iterator,
/// the others the state they mirror, so the snapshots of every rank resume identically everywhere.
#pragma once
#include <memory>
#include <vector>

#include "datasets/iterators/iterator.h"
#include "distributed/communicators/communicator.h"

namespace chainermn {

/// An iterator whose batches are the master's on every rank of a communicator, as ChainerMN's
/// multi-node iterator.
class MultiNodeIterator : public chainer::iterators::Iterator {
 public:
  /// The master's iterator as every rank sees it after the last collective call.
  struct State {
    int64_t epoch = 0;                    ///< The master's epoch().
    double epoch_detail = 0.0;            ///< The master's epoch_detail().
    double previous_epoch_detail = -1.0;  ///< The master's; -1: none yet, as Chainer stores it.
    bool is_new_epoch = false;            ///< The master's is_new_epoch().
    int64_t current_position = 0;         ///< The master's current_position().
    int64_t batch_size = 0;               ///< The master's batch_size().
    bool has_next = false;                ///< The master's has_next().
  };

  /// Collective over COMM. Throws on every rank when RANK_MASTER is outside `[0, comm->size())` or
  /// the master's ACTUAL is null; ACTUAL is ignored elsewhere.
  MultiNodeIterator(std::shared_ptr<chainer::iterators::Iterator> actual, std::shared_ptr<Communicator> comm,
                    int rank_master = 0);

  /// The master's next batch; collective unless it throws StopIteration.
  std::vector<Tensor> next_batch() override;
  /// The master's next batch as its examples; collective unless it throws StopIteration.
  std::vector<chainer::iterators::Example> next() override;
  /// Whether the master has another batch, answered without communication.
  bool has_next() const override { return state_.has_next; }

  int64_t epoch() const override { return state_.epoch; }
  double epoch_detail() const override { return state_.epoch_detail; }
  std::optional<double> previous_epoch_detail() const override;
  bool is_new_epoch() const override { return state_.is_new_epoch; }
  int64_t batch_size() const override { return state_.batch_size; }
  int64_t current_position() const override { return state_.current_position; }

  void reset() override;  ///< Collective: the master resets its actual iterator.
  /// Local. The master: its actual iterator's keys. Elsewhere: current_position, epoch,
  /// is_new_epoch, previous_epoch_detail, epoch_detail, has_next.
  void serialize(chainer::Serializer& serializer) override;
  void finalize() override;  ///< Finalizes the actual iterator, on the master.

  int rank_master() const { return rank_master_; }  ///< The rank whose iterator is read.
  bool is_master() const { return comm_->rank() == rank_master_; }  ///< Whether this rank is the master.
  Communicator& communicator() const { return *comm_; }  ///< The communicator the batches travel on.
  /// The master's actual iterator; null on the other ranks.
  const std::shared_ptr<chainer::iterators::Iterator>& actual_iterator() const { return actual_; }

 private:
  enum class Call : int64_t { Create, Reset, NextBatch, Next };
  // The master runs WORK (which returns how many tensors it will broadcast after the header) and
  // broadcasts the header: the outcome and the actual iterator's state. Every rank takes the
  // state; if WORK failed, every rank throws (StopIteration stays StopIteration). Returns the
  // count of tensors that follow.
  template <class Work>
  int64_t exchange(Call call, Work&& work);
  void check_has_next() const;

  std::shared_ptr<chainer::iterators::Iterator> actual_;  // the master's; null elsewhere
  std::shared_ptr<Communicator> comm_;
  int rank_master_;
  State state_;
};

/// As chainermn.iterators.create_multi_node_iterator(actual_iterator, communicator, rank_master).
std::shared_ptr<chainer::iterators::Iterator> create_multi_node_iterator(
    std::shared_ptr<chainer::iterators::Iterator> actual, std::shared_ptr<Communicator> comm, int rank_master = 0);

}  // namespace chainermn
