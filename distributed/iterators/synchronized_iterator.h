/// @file
/// create_synchronized_iterator, as chainermn.iterators.create_synchronized_iterator: every rank
/// keeps iterating its own dataset, in the same order as every other rank. A seed is drawn on
/// rank 0 and sent to every rank, and the actual iterator is reseeded with it (and so starts
/// over): with shuffle, each epoch's permutation is then the same everywhere; without shuffle, the
/// index order already is. With the same dataset on every rank the batches are identical; with
/// datasets of the same length (a model-parallel stage iterating create_empty_dataset) the ranks
/// stay in step, epoch for epoch.
///
/// The seed comes from chainer's default generator (core/util/random.h; every rank draws one, so the
/// ranks' generators stay in step, and rank 0's is used): a program that seeds it repeats its
/// orders. Only iterators whose order comes from a seed can be synchronized (SerialIterator,
/// MultiprocessIterator), and the datasets must have one length everywhere; otherwise every rank
/// throws, naming the ranks at fault. Collective over COMM.
///
/// Returns ACTUAL itself, reseeded: its serialize() saves its order and generator, so the
/// snapshots of every rank resume in step.
#pragma once
#include <memory>

#include "datasets/iterators/iterator.h"
#include "distributed/communicators/communicator.h"

namespace chainermn {

/// Reseeds ACTUAL with a seed drawn on rank 0 so every rank iterates in the same order, as
/// chainermn.iterators.create_synchronized_iterator; returns ACTUAL. Collective over COMM.
std::shared_ptr<chainer::iterators::Iterator> create_synchronized_iterator(
    std::shared_ptr<chainer::iterators::Iterator> actual, std::shared_ptr<Communicator> comm);

}  // namespace chainermn
