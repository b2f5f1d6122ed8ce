#include "autograd/function_node.h"

#include <atomic>

namespace chainer {

namespace {
std::atomic<int64_t> g_sequence{0};
// The inputs still to drop, owned by the outermost ~FunctionNode on this thread (null outside one).
thread_local std::vector<std::shared_ptr<VariableNode>>* t_inputs_to_drop = nullptr;
}  // namespace

// Dropping an input may free it and so its creator, whose destructor would drop its own inputs:
// one nested call per function. Instead, nested destructors hand their inputs to the outermost
// one, which drops them one at a time (as PyTorch's deleteNode does).
FunctionNode::~FunctionNode() {
  if (t_inputs_to_drop) {
    for (auto& in : inputs_) t_inputs_to_drop->push_back(std::move(in));
    return;
  }
  std::vector<std::shared_ptr<VariableNode>> to_drop = std::move(inputs_);
  t_inputs_to_drop = &to_drop;
  while (!to_drop.empty()) {
    std::shared_ptr<VariableNode> in = std::move(to_drop.back());
    to_drop.pop_back();
    in.reset();  // may run nested destructors, which append to to_drop
  }
  t_inputs_to_drop = nullptr;
}

void FunctionNode::release() {
  inputs_.clear();
  release_saved();
  released_ = true;
}

bool needs_recording(const std::vector<Variable>& inputs) {
  if (!is_backprop_enabled()) return false;
  for (const Variable& v : inputs)
    if (v.defined() && v.requires_grad()) return true;
  return false;
}

std::vector<Variable> record(const std::shared_ptr<FunctionNode>& node, const std::vector<Variable>& inputs,
                             std::vector<Tensor> outputs) {
  // The node is often the user's (a custom function): its mistakes are reported as theirs.
  if (!node) throw Error("record: the node is null");
  if (node->recorded_)
    throw Error(str("record: the node ", node->name(),
                    " is already recorded; a node is one application of a function, so make a new one for each call"));
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].defined())
      throw Error(str("record: input ", i, " of ", node->name(), " is an undefined Variable"));
  if (outputs.empty())
    throw Error(str("record: ", node->name(), " has no outputs; give the tensors its forward computed"));
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!outputs[i].defined())
      throw Error(str("record: output ", i, " of ", node->name(), " is an undefined Tensor"));
  node->recorded_ = true;
  node->inputs_.reserve(inputs.size());
  for (const Variable& v : inputs) node->inputs_.push_back(v.node_ptr());
  node->sequence_ = g_sequence.fetch_add(1, std::memory_order_relaxed);
  std::vector<Variable> result;
  result.reserve(outputs.size());
  for (Tensor& t : outputs) {
    node->output_shapes_.push_back(t.shape());
    node->output_dtypes_.push_back(t.dtype());
    node->output_devices_.push_back(t.device());
    Variable v(std::move(t), true);
    v.node()->creator = node;
    node->outputs_.push_back(v.node_ptr());
    result.push_back(std::move(v));
  }
  return result;
}

std::vector<Variable> wrap_outputs(std::vector<Tensor> outputs) {
  std::vector<Variable> result;
  result.reserve(outputs.size());
  for (Tensor& t : outputs) result.emplace_back(std::move(t));
  return result;
}

}  // namespace chainer
