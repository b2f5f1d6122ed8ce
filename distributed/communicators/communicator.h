/// @file
/// Communicators, as chainermn's: a group of processes (an MPI communicator) with ChainerMN's
/// topology (intra = on this host, inter = across hosts), collectives on tensors, byte strings
/// and serialisable objects, and the model-level operations the multi-node optimizer builds on
/// (bcast_data, multi_node_mean_grad). Concrete kinds differ only in how gradients are
/// averaged: "naive" does one all-reduce per parameter, "flat" packs all gradients in one buffer,
/// "hierarchical", "two_dimensional" and "single_node" compose an intra-host and an inter-host
/// stage (distributed/communicators/composed_communicators.h). create_communicator (create_communicator.cpp)
/// makes any of them by name.
///
/// Conventions: collectives are called by every rank of the communicator in the same order.
/// Errors that every rank can see (shapes that differ across ranks in allreduce, bcast_data,
/// debug mode) are raised on every rank alike; an error on one rank only leaves the others
/// waiting, which chainermn::run_main turns into the end of the whole job (see mpi_runtime.h).
#pragma once
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "core/tensor/tensor.h"
#include "distributed/communicators/pending_sum.h"
#include "distributed/runtime/mpi_runtime.h"
#include "distributed/runtime/object_reduction.h"
#include "distributed/runtime/object_serialization.h"
#include "distributed/runtime/topology.h"
#include "nn/link.h"

namespace chainermn {

using chainer::Tensor;

/// Options of create_communicator, as ChainerMN's keyword arguments.
struct CommunicatorOptions {
  /// The dtype gradients travel in while multi_node_mean_grad averages them (ChainerMN's
  /// allreduce_grad_dtype). Unset: their own dtype. Float16 or BFloat16 halve the bytes on the
  /// wire: each gradient is scaled by `1/size` before the cast (so the sum cannot overflow where
  /// the gradients themselves fit), summed in that dtype and cast back. Float32 sums float64
  /// gradients in float32.
  std::optional<chainer::DType> allreduce_grad_dtype;
  /// ChainerMN's batched_copy (pure_nccl packs every GPU gradient with one kernel). Kept and
  /// reported by get_config for ChainerMN's scripts; it changes nothing here, where the packing
  /// (communicators/packing.h) copies each gradient with core/ops whatever it says.
  bool batched_copy = false;
};

/// A communicator setting's value for set_config/get_config: a flag, a dtype, or none
/// (std::monostate, ChainerMN's None: "allreduce_grad_dtype" unset).
using ConfigValue = std::variant<std::monostate, bool, chainer::DType>;

/// A group of processes with ChainerMN's communicator API: collectives on tensors, bytes and
/// objects, and the model-level bcast_data and multi_node_mean_grad. Base of every kind.
class Communicator {
 public:
  /// Calls finalize() when MPI is still running.
  virtual ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  const std::string& name() const { return name_; }  ///< The kind: "naive", "flat", ...
  const CommunicatorOptions& options() const { return options_; }  ///< The options it was created with.
  int rank() const { return rank_; }  ///< This process's rank in the communicator.
  int size() const { return size_; }  ///< The number of processes in the communicator.
  int intra_rank() const { return topology_.intra_rank; }  ///< Rank among the processes on this host.
  int intra_size() const { return topology_.intra_size; }  ///< The number of processes on this host.
  int inter_rank() const { return topology_.inter_rank; }  ///< Index of this host (hosts ordered by smallest rank).
  int inter_size() const { return topology_.inter_size; }  ///< Number of hosts.
  /// Every rank's host name, indexed by rank.
  const std::vector<std::string>& host_names() const { return host_names_; }
  /// The communicator's own MPI communicator (a duplicate of the one it was made from).
  MPI_Comm mpi_comm() const { return comm_; }

  /// A communicator of the same kind (and debug setting) over the processes that passed the same
  /// COLOR, ranked by KEY (then by rank); nullptr for processes that passed MPI_UNDEFINED.
  std::shared_ptr<Communicator> split(int color, int key) const;

  /// @name Tensors
  /// GPU tensors are staged through host memory; results are CPU tensors.
  /// Any shape and dtype; shape and dtype travel with the data (a small header message, then
  /// the values in chunks of at most 1 GiB); non-contiguous input is sent as its contiguous copy;
  /// an undefined tensor arrives undefined. Results are fresh contiguous tensors.
  /// @{

  /// Sends X to rank DEST.
  void send(const Tensor& x, int dest, int tag = 0) const;
  Tensor recv(int source, int tag = 0) const;  ///< Receives a tensor; SOURCE may be MPI_ANY_SOURCE.
  Tensor bcast(const Tensor& x, int root = 0) const;                ///< ROOT's x everywhere; x is ignored off the root.
  std::vector<Tensor> gather(const Tensor& x, int root = 0) const;  ///< size() tensors on the root, none elsewhere.
  std::vector<Tensor> allgather(const Tensor& x) const;             ///< Every rank's x; shapes may differ per rank.
  /// Elementwise sum; float32, float64, int32, int64; every rank passes the same dtype and shape
  /// (checked: otherwise every rank throws).
  Tensor allreduce(const Tensor& x) const;
  /// ROOT's `xs[i]` goes to rank i; xs is ignored off the root.
  Tensor scatter(const std::vector<Tensor>& xs, int root = 0) const;
  /// `xs[i]` goes to rank i; `result[j]` came from rank j.
  std::vector<Tensor> alltoall(const std::vector<Tensor>& xs) const;
  /// @}

  /// @name Byte strings
  /// Chunked in pieces of at most 1 GiB, so strings over 2 GiB work.
  /// @{

  /// Sends BYTES to rank DEST.
  void send_bytes(const std::string& bytes, int dest, int tag = 0) const;
  std::string recv_bytes(int source, int tag = 0) const;  ///< Receives a byte string; SOURCE may be MPI_ANY_SOURCE.
  /// ROOT's BYTES on every rank.
  std::string bcast_bytes(const std::string& bytes, int root = 0) const;
  /// Every rank's BYTES on the root; empty off the root.
  std::vector<std::string> gather_bytes(const std::string& bytes, int root = 0) const;
  /// Every rank's BYTES, in rank order.
  std::vector<std::string> allgather_bytes(const std::string& bytes) const;
  /// @}

  /// @name Objects
  /// Anything distributed/runtime/object_serialization.h encodes (numbers, strings,
  /// vectors, maps, pairs, tensors, nested). The receiver names the type it expects.
  /// @{

  /// Sends OBJ, serialized, to rank DEST.
  template <class T>
  void send_obj(const T& obj, int dest, int tag = 0) const {
    send_bytes(serialize_object(obj), dest, tag);
  }
  /// Receives an object of type T that send_obj sent.
  template <class T>
  T recv_obj(int source, int tag = 0) const {
    return deserialize_object<T>(recv_bytes(source, tag));
  }
  /// ROOT's OBJ on every rank; OBJ is ignored off the root.
  template <class T>
  T bcast_obj(const T& obj, int root = 0) const {
    std::string bytes = bcast_bytes(rank_ == root ? serialize_object(obj) : std::string(), root);
    return rank_ == root ? obj : deserialize_object<T>(bytes);
  }
  /// Every rank's OBJ on the root: size() objects there, none elsewhere.
  template <class T>
  std::vector<T> gather_obj(const T& obj, int root = 0) const {
    std::vector<T> out;
    for (const std::string& b : gather_bytes(serialize_object(obj), root)) out.push_back(deserialize_object<T>(b));
    return out;
  }
  /// Every rank's OBJ, in rank order.
  template <class T>
  std::vector<T> allgather_obj(const T& obj) const {
    std::vector<T> out;
    for (const std::string& b : allgather_bytes(serialize_object(obj))) out.push_back(deserialize_object<T>(b));
    return out;
  }
  /// The sum over ranks (distributed/runtime/object_reduction.h: numbers add, maps add per key over the
  /// union of keys, vectors/pairs/tensors elementwise), added in rank order: identical everywhere.
  template <class T>
  T allreduce_obj(const T& obj) const {
    std::vector<T> all = allgather_obj(obj);
    T acc = std::move(all[0]);
    for (size_t i = 1; i < all.size(); ++i) acc = ObjectSum<T>::add(std::move(acc), all[i]);
    return acc;
  }
  /// @}

  /// @name Models
  /// Parameters are visited in namedparams() order (sorted names), the same on
  /// every rank.
  /// @{

  /// Every rank's parameters become rank 0's (in place): each initialized parameter is
  /// broadcast from rank 0; uninitialized ones are skipped. Throws on every rank, naming the
  /// parameter and the ranks, when the models differ (names, dtypes, shapes, or a parameter
  /// initialized on some ranks only).
  void bcast_data(chainer::Link& model) const;

  /// Averages the gradients over all ranks (`sum / size()`, in place on each gradient). With
  /// ZERO_FILL, an initialized parameter without a gradient counts as zeros and receives the
  /// average; without it, such parameters are skipped, and every rank must then agree on which
  /// are missing (debug mode checks it). Uninitialized parameters are always skipped.
  void multi_node_mean_grad(chainer::Link& model, bool zero_fill = false) const;
  /// The same as multi_node_mean_grad (ChainerMN's older name).
  void allreduce_grad(chainer::Link& model, bool zero_fill = false) const { multi_node_mean_grad(model, zero_fill); }
  /// @}

  /// @name Settings
  /// ChainerMN's set_config/get_config, by name: "allreduce_grad_dtype" (a floating DType, or
  /// none for each gradient's own; CommunicatorOptions::allreduce_grad_dtype) and "batched_copy"
  /// (a bool; CommunicatorOptions::batched_copy). A change applies from the next
  /// multi_node_mean_grad; the multi-node optimizer's bucketed reduction reads the dtype when it
  /// plans its buckets (at its first update, or after the model changes). split() passes the
  /// settings on. Local: set the same value on every rank. An unknown name, or a value of the
  /// wrong kind, throws chainer::Error naming it and what is accepted.
  /// @{

  /// Sets setting NAME to VALUE (ChainerMN's `set_config(name, value=True)`).
  void set_config(const std::string& name, const ConfigValue& value = true);
  /// The value of setting NAME.
  ConfigValue get_config(const std::string& name) const;
  /// The names set_config and get_config know, sorted.
  static std::vector<std::string> config_names();
  /// @}

  /// Whether multi_node_mean_grad averages over the ranks: false only for the "dummy"
  /// communicator, which leaves each rank its own gradients. The multi-node optimizer then steps
  /// every rank with its own gradients and keeps its own parameters (no bucketed reducer, no
  /// shared update).
  virtual bool averages_gradients() const { return true; }

  /// Turns debug mode on or off. Debug mode (on when the environment has CHAINERMN_DEBUG=1 at
  /// construction): before each gradient all-reduce the ranks compare parameter names, dtypes
  /// and shapes and throw an Error naming the parameter and the ranks that differ; after it a
  /// non-finite averaged gradient throws "parameters diverged" naming the parameter. Costs one
  /// allgather per call.
  void set_debug(bool on) { debug_ = on; }
  bool debug() const { return debug_; }  ///< Whether debug mode is on (see set_debug).
  /// Debug mode's first check on its own, for reductions done elsewhere. The ranks compare
  /// parameter names, dtypes and shapes (the multi-node optimizer's bucketed reduction runs both
  /// checks around its finalize() in debug mode). OP names the caller in the messages.
  /// Collective (one allgather).
  void check_grads_consistent(const chainer::Link& model, bool zero_fill, const char* op) const;
  /// Debug mode's second check on its own: throws "parameters diverged" for a non-finite
  /// gradient. Local, and every rank reaches the same verdict because the means are identical
  /// everywhere.
  static void check_grads_finite(const chainer::Link& model, const char* op);
  /// Debug mode's check after a load, which multi_node_snapshot's autoload runs and any loader
  /// of each rank's own file (a checkpointer) can run: the ranks compare every parameter of
  /// MODEL, its name, dtype, shape and values (a hash of its bytes), and every rank throws the
  /// same Error naming OP, each parameter that differs and which ranks hold what. Ranks that
  /// resumed from different states (files of other runs or iterations, a parameter the load
  /// does not set) would otherwise train on apart, as nothing broadcasts the parameters after a
  /// load. Only ranks passing the same GROUP are compared (the replica sets of
  /// multi_node_snapshot); a rank whose GROUP no other rank passes takes part in the collective
  /// and is compared with none. Collective (one allgather); runs whatever debug() says, so
  /// callers test it: `if (comm->debug()) comm->check_params_consistent(...)`.
  void check_params_consistent(const chainer::Link& model, const std::string& op, int64_t group = 0) const;
  /// The same over PARAMS, (name, parameter) pairs in the same order on every rank: the
  /// parameters of several models at once (a trainer's optimizers' targets).
  void check_params_consistent(const std::vector<std::pair<std::string, chainer::Variable>>& params,
                               const std::string& op, int64_t group = 0) const;

  /// Starts summing BUF (flat, contiguous, floating; host or device memory) over every rank, in
  /// place, by this communicator's algorithm: the gradient reducer hands it each bucket
  /// (distributed/reducer/bucket_transport.h). Collective, in the same order on every rank. By default
  /// an MPI_Iallreduce over an MPI communicator of its own (made by the first call), staged
  /// through host memory for a device buffer; the composed communicators sum at once and return a
  /// finished handle, the NCCL ones queue the sum on their stream.
  virtual std::unique_ptr<PendingSum> start_sum(Tensor& buf) const;

  /// The MPI communicator that carries chainermn::functions' point-to-point messages (send,
  /// recv and their backward: distributed/functions/function_channel.h), apart from all other
  /// traffic. Made at construction with the others, not at first use: a send involves two ranks
  /// only, and duplicating a communicator needs all of them.
  MPI_Comm functions_comm() const;

  /// Frees the MPI communicators (not MPI itself); any later call throws. The destructor does
  /// it too when MPI is still running.
  virtual void finalize();
  bool finalized() const { return comm_ == MPI_COMM_NULL; }  ///< Whether finalize() has run.

 protected:
  /// A communicator of kind NAME over a duplicate of COMM.
  Communicator(std::string name, MPI_Comm comm, CommunicatorOptions options = {});

  /// One (name, parameter) per gradient to average: initialized, with a defined contiguous
  /// floating-point gradient of the parameter's shape.
  using GradList = std::vector<std::pair<std::string, chainer::Variable>>;
  /// Replaces each gradient with its mean over the ranks (in place when possible).
  virtual void mean_grads(const GradList& grads) const = 0;

  MPI_Comm comm() const;  ///< The MPI communicator of the caller's traffic; throws after finalize().
  /// The MPI communicator of collectives built on point-to-point messages, apart from the
  /// caller's tags; throws after finalize().
  MPI_Comm coll() const;

 private:
  static void check_grads_finite(const GradList& grads, const char* op);

  std::string name_;
  CommunicatorOptions options_;
  MPI_Comm comm_ = MPI_COMM_NULL;       // the caller's traffic: send/recv with the caller's tags, collectives
  MPI_Comm coll_comm_ = MPI_COMM_NULL;  // collectives built on point-to-point messages, apart from the caller's tags
  mutable MPI_Comm sum_comm_ = MPI_COMM_NULL;  // start_sum's non-blocking sums (made at its first call)
  MPI_Comm functions_comm_ = MPI_COMM_NULL;   // chainermn::functions' point-to-point messages
  int rank_ = 0, size_ = 1;
  Topology topology_;
  std::vector<std::string> host_names_;
  bool debug_ = false;
};


/// Makes the communicator of kind NAME, as chainermn.create_communicator.
/// NAME: naive, flat, hierarchical, two_dimensional, single_node, pure_nccl, non_cuda_aware,
/// dummy (communicator_kinds() says which this build and machine can make; "dummy" averages
/// nothing, for timing everything but the reduction: distributed/communicators/dummy_communicator.h); an unknown name throws
/// listing the valid ones, a kind that cannot be made here throws saying what it needs.
/// COMM is duplicated, so the communicator's traffic never mixes with the caller's. Starts MPI
/// (init_mpi) when nobody did.
std::shared_ptr<Communicator> create_communicator(const std::string& name = "naive", MPI_Comm comm = MPI_COMM_WORLD,
                                                  const CommunicatorOptions& options = {});

/// A kind of communicator create_communicator knows, with whether it can be made here.
struct CommunicatorKind {
  std::string name;  ///< The name create_communicator takes.
  bool available = false;  ///< Whether this build and machine can make it.
  std::string requirement;  ///< What it needs that is missing (empty when available).
  /// Whether multi_node_mean_grad averages: false for "dummy", which checks of averaging skip.
  bool averages = true;
};
/// Every kind create_communicator knows, in its order, with whether it can be made here.
std::vector<CommunicatorKind> communicator_kinds();

/// A suffix that makes a file name this rank's own in a job of several processes,
/// ".rank1-of-4" (nothing on a 1-process communicator): for snapshots that differ between
/// ranks, as a model-parallel job's do, `E::snapshot("snapshot_iter_{.updater.iteration}" +
/// chainermn::rank_suffix(*comm))`. It names the process count too, so a resume with another
/// count finds no file instead of the wrong one.
std::string rank_suffix(const Communicator& comm);

}  // namespace chainermn
