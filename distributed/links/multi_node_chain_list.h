/// @file
/// MultiNodeChainList, as chainermn.MultiNodeChainList: one process's part of a model that spans
/// processes. Each component is a link with the ranks its inputs come from (rank_in) and the
/// ranks its output goes to (rank_out); the forward pass runs the components in the order they
/// were added, receiving and sending through chainermn::functions::recv/send, so the backward
/// pass of the whole model, across processes, is ordinary backpropagation (ChainerMN's
/// model-parallel guide, step 3).
///
/// Per component, in order:
///
/// ```
///   rank_in none     it is called with the list's own inputs (forward_args);
///   rank_in ranks    its inputs are received from each of them in turn (from this rank itself:
///                    the outputs of the previous component that sent to this rank), all that
///                    each sent, one after the other;
///   rank_out none    its outputs are the list's outputs (at most one component may have none:
///                    add_link says so);
///   rank_out ranks   its outputs, all that forward_args returns, are sent to each of them (to
///                    this rank itself: kept for the next component whose rank_in names this rank).
/// ```
///
/// An edge carries every variable a component returns, as ChainerMN 7's tuples: a component
/// whose forward_args returns {h, c} sends both in one message, and the component that receives
/// from it is called with {h, c} (with rank_in {0, 2}: what rank 0 sent, then what rank 2 sent).
///
/// The delegate of each send is threaded into the next recv (or pseudo-connected to the output),
/// so one backward from the result covers every send. A list whose output is sent away returns
/// the last delegate: calling backward() on it runs this process's backward (a pipeline's middle
/// or last stage whose loss lives on another rank).
///
/// All messages use tag 0 and travel between two ranks in the order they are sent; every
/// process must build its list so that sends and receives pair up in the same order, as in
/// ChainerMN.
#pragma once
#include <initializer_list>
#include <memory>
#include <optional>
#include <vector>

#include "distributed/communicators/communicator.h"
#include "nn/link.h"

namespace chainermn::links {

/// The ranks a component's inputs come from or its output goes to: no rank (`std::nullopt` or
/// `{}`), one rank (`1`), or several (`{0, 2}`).
class Ranks {
 public:
  Ranks() = default;  ///< No rank.
  Ranks(std::nullopt_t) {}  ///< No rank.
  Ranks(int rank) : ranks_{rank} {}  ///< One rank.
  Ranks(std::initializer_list<int> ranks) : ranks_(ranks) {}  ///< Several ranks, in order.
  explicit Ranks(std::vector<int> ranks) : ranks_(std::move(ranks)) {}  ///< Several ranks, in order.
  bool none() const { return ranks_.empty(); }  ///< Whether there is no rank.
  const std::vector<int>& ranks() const { return ranks_; }  ///< The ranks, in order.

 private:
  std::vector<int> ranks_;
};

/// One process's part of a model that spans processes, as chainermn.MultiNodeChainList.
class MultiNodeChainList : public chainer::Chain {
 public:
  /// An empty list whose components talk over COMM.
  explicit MultiNodeChainList(std::shared_ptr<Communicator> comm);

  /// Appends LINK as the next component, registered as a child named by its index ("0", "1",
  /// ...), as Chainer's ChainList. Throws when a rank is outside the communicator, or when a
  /// second component would have no rank_out (the list would have two outputs).
  void add_link(std::shared_ptr<chainer::Link> link, Ranks rank_in = {}, Ranks rank_out = {});

  /// Runs the components in order, receiving and sending as their ranks say (see above); returns
  /// the list's outputs, or the last delegate alone when the outputs are sent away.
  std::vector<chainer::Variable> forward_args(const std::vector<chainer::Variable>& inputs) override;
  /// `forward_args({x})[0]`.
  chainer::Variable forward(const chainer::Variable& x) override { return forward_args({x}).at(0); }

  const std::shared_ptr<Communicator>& comm() const { return comm_; }  ///< The communicator.
  size_t size() const { return components_.size(); }  ///< The number of components.

 private:
  struct Component {
    std::shared_ptr<chainer::Link> link;
    Ranks rank_in, rank_out;
  };
  std::shared_ptr<Communicator> comm_;
  std::vector<Component> components_;
};

}  // namespace chainermn::links
