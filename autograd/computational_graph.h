/// @file
/// Graphviz export of the graph reachable from some variables, as chainer.computational_graph:
/// variables are ellipses labelled with shape and dtype, functions are boxes.
#pragma once
#include <string>
#include <vector>

#include "autograd/variable.h"

namespace chainer {

/// The graph that produced OUTPUTS, as Graphviz dot source (chainer.computational_graph.build_computational_graph).
std::string build_computational_graph_dot(const std::vector<Variable>& outputs);

}  // namespace chainer
