// Graphviz export of the graph reachable from some variables, as chainer.computational_graph:
// variables are ellipses labelled with shape and dtype, functions are boxes.
#pragma once
#include <string>
#include <vector>

#include "autograd/variable.h"

namespace chainer {

std::string build_computational_graph_dot(const std::vector<Variable>& outputs);

}  // namespace chainer
