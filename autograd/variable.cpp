#include "autograd/variable.h"

#include <vector>

#include "autograd/function_node.h"

namespace chainer {

namespace {
thread_local bool t_backprop_enabled = true;
}

Variable::Variable(Tensor data, bool requires_grad, std::string name) : node_(std::make_shared<VariableNode>()) {
  node_->data = std::move(data);
  node_->requires_grad = requires_grad;
  node_->name = std::move(name);
}

VariableNode* Variable::node() const {
  if (!node_) throw Error("Variable: the variable is undefined");
  return node_.get();
}

void Variable::unchain() const { node()->creator.reset(); }

Variable Variable::detach() const { return Variable(node()->data, false, node()->name); }

void Variable::unchain_backward() const {
  // Iterative, so arbitrarily deep graphs cannot overflow the stack.
  std::vector<std::shared_ptr<FunctionNode>> stack;
  if (node()->creator) stack.push_back(std::move(node()->creator));
  node()->creator.reset();
  while (!stack.empty()) {
    std::shared_ptr<FunctionNode> f = std::move(stack.back());
    stack.pop_back();
    for (const auto& in : f->inputs())
      if (in->creator) stack.push_back(std::move(in->creator)), in->creator.reset();
  }
}

void Variable::register_grad_hook(std::function<void(VariableNode&)> hook) const {
  node()->grad_hooks.push_back(std::move(hook));
}

NoBackpropMode::NoBackpropMode() : previous_(t_backprop_enabled) { t_backprop_enabled = false; }
NoBackpropMode::~NoBackpropMode() { t_backprop_enabled = previous_; }
ForceBackpropMode::ForceBackpropMode() : previous_(t_backprop_enabled) { t_backprop_enabled = true; }
ForceBackpropMode::~ForceBackpropMode() { t_backprop_enabled = previous_; }
bool is_backprop_enabled() { return t_backprop_enabled; }

}  // namespace chainer
