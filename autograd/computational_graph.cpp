#include "autograd/computational_graph.h"

#include <sstream>
#include <unordered_map>

#include "autograd/function_node.h"

namespace chainer {

std::string build_computational_graph_dot(const std::vector<Variable>& outputs) {
  std::ostringstream os;
  os << "digraph graphname{rankdir=TB;\n";
  std::unordered_map<const void*, int> ids;
  std::vector<const FunctionNode*> stack;
  // Returns the id of P, and whether it was seen for the first time.
  auto id_of = [&](const void* p) {
    auto [it, inserted] = ids.try_emplace(p, int(ids.size()));
    return std::pair{it->second, inserted};
  };
  auto function_id = [&](const FunctionNode* f) {
    auto [id, fresh] = id_of(f);
    if (fresh) {
      os << "  n" << id << " [label=\"" << f->name() << "\",shape=\"record\",fillcolor=\"#6495ED\",style=\"filled\"];\n";
      stack.push_back(f);
    }
    return id;
  };
  auto variable_id = [&](const VariableNode* v) {
    auto [id, fresh] = id_of(v);
    if (fresh) {
      std::string label = v->name.empty() ? std::string() : v->name + ": ";
      label += shape_str(v->data.shape()) + ", " + dtype_name(v->data.dtype());
      os << "  n" << id << " [label=\"" << label << "\",shape=\"oval\",fillcolor=\"#E0E0E0\",style=\"filled\"];\n";
      if (v->creator) {
        const int creator = function_id(v->creator.get());  // may declare the creator: not inside the edge's line
        os << "  n" << creator << " -> n" << id << ";\n";
      }
    }
    return id;
  };
  for (const Variable& v : outputs) variable_id(v.node());
  while (!stack.empty()) {
    const FunctionNode* f = stack.back();
    stack.pop_back();
    const int fid = ids.at(f);
    for (const auto& in : f->inputs()) {
      const int input = variable_id(in.get());  // may declare the input (and its creator) first
      os << "  n" << input << " -> n" << fid << ";\n";
    }
  }
  os << "}\n";
  return os.str();
}

}  // namespace chainer
