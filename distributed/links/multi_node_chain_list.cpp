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
  Variable output;    // the list's output (the component without rank_out)
  Variable kept;      // an output sent to this rank itself, for the next component that takes it
  Variable delegate;  // the last send's delegate, not yet threaded into the graph
  for (Component& c : components_) {
    Variable x;
    if (c.rank_in.none()) {
      x = c.link->forward_args(inputs).at(0);
    } else {
      std::vector<Variable> xs;
      for (int from : c.rank_in.ranks()) {
        if (from == me) {
          if (!kept.defined())
            throw Error(chainer::str("MultiNodeChainList: a component takes input from rank ", me,
                                     " (this rank), but no earlier component sent its output here"));
          xs.push_back(mnf::pseudo_connect(delegate, kept));  // kept itself without a delegate
          kept = Variable();
        } else {
          mnf::RecvOptions onto;  // this list's device
          onto.device = device();
          xs.push_back(mnf::recv(comm_, from, delegate, 0, onto));
        }
        delegate = Variable();
      }
      x = c.link->forward_args(xs).at(0);
    }
    if (c.rank_out.none()) {
      output = x;
      continue;
    }
    for (int to : c.rank_out.ranks()) {
      if (to == me) {
        kept = mnf::pseudo_connect(delegate, x);
        delegate = Variable();
      } else {
        // A delegate not yet threaded in rides on this send's input, so its backward still runs.
        delegate = mnf::send(mnf::pseudo_connect(delegate, x), comm_, to);
      }
    }
  }
  if (output.defined()) return {mnf::pseudo_connect(delegate, output)};
  return {delegate};
}

}  // namespace chainermn::links
