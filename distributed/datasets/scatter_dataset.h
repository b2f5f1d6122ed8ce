/// @file
/// Scattering a dataset over the workers, as chainermn.scatter_dataset / scatter_index.
///
/// ChainerMN's table for N examples over `size` ranks (scatter_index_table):
///
/// ```
///   force_equal_length (the default): len = ceil(N / size); rank i gets [b, b + len) with
///     b = floor(N * i / size). Every rank gets exactly len examples, the shares cover all N
///     examples, and where N is not a multiple of size the last examples of a share are repeated
///     as the first ones of the next share (N <= len * size < N + size). The end never passes N.
///   otherwise: the first N % size ranks get floor(N / size) + 1 examples and the others
///     floor(N / size), a partition without repetition (for exact evaluation).
/// ```
///
/// scatter_dataset: the dataset of rank ROOT is read (the others pass anything, e.g. nullptr);
/// with SHUFFLE the shares are taken from a permutation drawn from chainer::Generator(SEED)
/// (so not numpy's permutation for the same seed, but the same on every run and platform).
/// The root's share is a SubDataset view of its dataset, as in ChainerMN. ChainerMN broadcasts the
/// whole pickled dataset and gives every rank such a view; here each other worker receives just its
/// share, in one of two forms:
///   - a dataset of files (ImageDataset, LabeledImageDataset, PreprocessedImageDataset over one,
///     SubDatasets of them, or a kind registered with register_dataset_kind) travels as the
///     description of the share (datasets/dataset_description.h: paths, labels, settings), and the
///     worker decodes its own images, so the files must be readable at the same paths on every host;
///   - a dataset of examples of different shapes (ragged data: a ListDataset, or any dataset
///     whose get_batch cannot stack the share) travels as its examples, each with its own shapes
///     and dtypes, and the worker holds a ListDataset of them (ChainerMN's pickled list);
///   - any other dataset travels as its rows: the root gathers them with dataset->get_batch and
///     sends the tensors, and the worker holds a TupleDataset of them. An empty share keeps the
///     fields' shapes and dtypes (0 rows).
/// Which examples each rank gets depends only on the dataset's length and the arguments, never
/// on the examples' shapes, so a checkpoint's record of the scatter (set_scatter) holds for
/// ragged data as for any other.
/// Collective: every rank calls it with the same ROOT. An error on the root (a null dataset, a
/// failing get_batch) or on a worker (a description of an unregistered kind) reaches every rank as
/// an exception.
#pragma once
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "datasets/dataset.h"
#include "distributed/communicators/communicator.h"

namespace chainermn {

/// The (begin, end) of every rank, in rank order (no communication).
std::vector<std::pair<int64_t, int64_t>> scatter_index_table(int64_t n_total_samples, int size,
                                                             bool force_equal_length = true);

/// The examples of rank RANK's share of N_TOTAL_SAMPLES over SIZE ranks, as indices into the
/// whole dataset in the share's order (entry j is what the share's example j is): the table's
/// range, taken from the permutation of Generator(SEED) with SHUFFLE. What scatter_dataset and
/// share_of_dataset give each rank, and how a checkpoint of one process count is mapped to
/// another. No communication.
std::vector<int64_t> share_indices(int64_t n_total_samples, int size, int rank, bool shuffle = false,
                                   uint64_t seed = 0, bool force_equal_length = true);

/// This rank's (begin, end) of ROOT's N_TOTAL_SAMPLES (the other ranks' counts are ignored).
/// Collective.
std::pair<int64_t, int64_t> scatter_index(int64_t n_total_samples, const Communicator& comm, int root = 0,
                                          bool force_equal_length = true);
/// The same, with the communicator held by a shared pointer.
std::pair<int64_t, int64_t> scatter_index(int64_t n_total_samples, const std::shared_ptr<Communicator>& comm,
                                          int root = 0, bool force_equal_length = true);

/// This rank's share of ROOT's DATASET: a view on the root, a dataset of its own elsewhere (see
/// above). Collective.
chainer::datasets::DatasetPtr scatter_dataset(const chainer::datasets::DatasetPtr& dataset, const Communicator& comm,
                                              int root = 0, bool shuffle = false, uint64_t seed = 0,
                                              bool force_equal_length = true);
/// The same, with the communicator held by a shared pointer.
chainer::datasets::DatasetPtr scatter_dataset(const chainer::datasets::DatasetPtr& dataset,
                                              const std::shared_ptr<Communicator>& comm, int root = 0,
                                              bool shuffle = false, uint64_t seed = 0, bool force_equal_length = true);

/// This rank's share of a DATASET that every rank holds alike (built from the same files, such as
/// a LabeledImageDataset of one list file readable on every host): the examples scatter_dataset
/// would give it (the same table and, with SHUFFLE, the same permutation), as a view of DATASET,
/// without communication, for a job whose ranks all read the list files themselves.
chainer::datasets::DatasetPtr share_of_dataset(const chainer::datasets::DatasetPtr& dataset, const Communicator& comm,
                                               bool shuffle = false, uint64_t seed = 0,
                                               bool force_equal_length = true);

/// As chainermn.datasets.create_empty_dataset: as many examples as DATASET, each with no fields
/// (ChainerMN's `[()] * len(dataset)`), for a model-parallel stage whose forward takes no inputs
/// (it starts by receiving from another stage) but must run as many iterations as the others.
chainer::datasets::DatasetPtr create_empty_dataset(const chainer::datasets::DatasetPtr& dataset);
/// The same with SIZE examples, for a process that never holds the data (its size came in a
/// message: `comm->bcast_obj(train->size())`).
chainer::datasets::DatasetPtr create_empty_dataset(int64_t size);
/// Collective: DATASET on ROOT, and on every other rank an empty dataset of the root's length
/// (the others pass anything, e.g. nullptr), so a stage that receives its inputs from the root
/// runs as many iterations as the stage that reads the data, without passing the size by hand.
chainer::datasets::DatasetPtr create_empty_dataset_from_root(const chainer::datasets::DatasetPtr& dataset,
                                                             const Communicator& comm, int root = 0);

}  // namespace chainermn
