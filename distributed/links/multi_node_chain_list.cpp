#include "distributed/links/multi_node_chain_list.h"

#include <string>

#include "distributed/functions/point_to_point.h"
#include "distributed/functions/pseudo_connect.h"

namespace chainermn::links {

using chainer::Error;
using chainer::Variable;
namespace mnf = chainermn::functions;

MultiNodeChainList::MultiNodeChainList(std::shared_ptr<Communicator> comm) : comm_(std::move(comm)) {
  if (!comm_) throw Error("MultiNodeChainList: the communicator is null");
}

void MultiNodeChainList::add_link(std::shared_ptr<chainer::Link> link, Ranks rank_in, Ranks rank_out) {
  if (!link) throw Error(chainer::str("MultiNodeChainList.add_link: component ", components_.size(), " is a null link"));
  for (const Ranks* ranks : {&rank_in, &rank_out})
    for (int r : ranks->ranks())
      if (r < 0 || r >= comm_->size())
        throw Error(chainer::str("MultiNodeChainList.add_link: rank ", r, " of component ", components_.size(),
                                 " is outside the communicator (ranks 0 to ", comm_->size() - 1, ")"));
  if (rank_out.none())
    for (size_t i = 0; i < components_.size(); ++i)
      if (components_[i].rank_out.none())
        throw Error(chainer::str("MultiNodeChainList.add_link: component ", components_.size(),
                                 " has no rank_out, but component ", i,
                                 " has none either; only one component may give the list's output"));
  Chain::add_link(std::to_string(components_.size()), link);
  components_.push_back({std::move(link), std::move(rank_in), std::move(rank_out)});
}

std::vector<Variable> MultiNodeChainList::forward_args(const std::vector<Variable>& inputs) {
  const int me = comm_->rank();
  std::vector<Variable> output;  // the list's outputs (those of the component without rank_out)
  std::vector<Variable> kept;    // outputs sent to this rank itself, for the next component that takes them
  Variable delegate;             // the last send's delegate, not yet threaded into the graph
  for (size_t i = 0; i < components_.size(); ++i) {
    Component& c = components_[i];
    std::vector<Variable> xs;
    if (c.rank_in.none()) {
      xs = c.link->forward_args(inputs);
    } else {
      std::vector<Variable> received;  // what each rank of rank_in sent, in turn: the component's inputs
      for (int from : c.rank_in.ranks()) {
        std::vector<Variable> part;
        if (from == me) {
          if (kept.empty())
            throw Error(chainer::str("MultiNodeChainList: component ", i, " takes input from rank ", me,
                                     " (this rank), but no earlier component sent its output here"));
          part = mnf::pseudo_connect(delegate, kept);  // kept itself without a delegate
          kept.clear();
        } else {
          mnf::RecvOptions onto;  // this list's device
          onto.device = device();
          // A component that returned several variables sent them in one message.
          part = mnf::recv(comm_, from, delegate, 0, mnf::force_tuple, onto);
        }
        received.insert(received.end(), part.begin(), part.end());
        delegate = Variable();
      }
      xs = c.link->forward_args(received);
    }
    if (xs.empty())
      throw Error(chainer::str("MultiNodeChainList: component ", i, " returned no variable (it has nothing to ",
                               c.rank_out.none() ? "give as the list's output)" : "send)"));
    if (c.rank_out.none()) {
      output = xs;
      continue;
    }
    for (int to : c.rank_out.ranks()) {
      if (to == me) {
        kept = mnf::pseudo_connect(delegate, xs);
        delegate = Variable();
      } else {
        // A delegate not yet threaded in rides on this send's inputs, so its backward still runs.
        delegate = mnf::send(mnf::pseudo_connect(delegate, xs), comm_, to);
      }
    }
  }
  if (!output.empty()) return mnf::pseudo_connect(delegate, output);
  return {delegate};
}

}  // namespace chainermn::links
