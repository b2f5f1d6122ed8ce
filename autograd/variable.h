// Variable: a cheap handle (one shared_ptr) on a VariableNode holding data, grad and the
// function that created it. Outputs own their creator, and the creator owns its inputs, so the
// graph lives exactly as long as some output of it is reachable.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace chainer {

class FunctionNode;
class Variable;

struct VariableNode {
  Tensor data;
  Tensor grad;
  bool requires_grad = false;
  bool retain_grad = false;  // keep the gradient of a non-leaf variable after backward
  std::string name;
  std::shared_ptr<FunctionNode> creator;
  // Called once per backward, as soon as this leaf's gradient is final (the distributed reducer
  // hangs off these).
  std::vector<std::function<void(VariableNode&)>> grad_hooks;
};

struct BackwardOptions {
  bool retain_graph = false;  // keep saved tensors so backward can run through the graph again
};

class Variable {
 public:
  Variable() = default;  // undefined
  explicit Variable(Tensor data, bool requires_grad = false, std::string name = "");
  explicit Variable(std::shared_ptr<VariableNode> node) : node_(std::move(node)) {}

  bool defined() const { return node_ != nullptr; }
  const Tensor& data() const { return node()->data; }
  Tensor& data() { return node()->data; }
  void set_data(Tensor data) { node()->data = std::move(data); }
  const Tensor& grad() const { return node()->grad; }
  void set_grad(Tensor grad) { node()->grad = std::move(grad); }
  void cleargrad() { node()->grad = Tensor(); }
  bool requires_grad() const { return node()->requires_grad; }
  void set_requires_grad(bool r) { node()->requires_grad = r; }
  void set_retain_grad(bool r = true) { node()->retain_grad = r; }
  const std::string& name() const { return node()->name; }
  void set_name(std::string n) { node()->name = std::move(n); }

  const Shape& shape() const { return data().shape(); }
  DType dtype() const { return data().dtype(); }
  int64_t ndim() const { return data().ndim(); }
  int64_t numel() const { return data().numel(); }
  double item() const { return data().item_double(); }

  std::shared_ptr<FunctionNode> creator() const { return node()->creator; }
  bool is_leaf() const { return node()->creator == nullptr; }

  // Runs backpropagation from this variable. Its grad is the initial gradient; when unset the
  // variable must hold one element and the initial gradient is 1.
  void backward(const BackwardOptions& options = {}) const;
  // Cuts the link to the creator: this variable becomes a leaf.
  void unchain() const;
  // Cuts every creator link reachable from this variable, freeing the graph behind it.
  void unchain_backward() const;
  void register_grad_hook(std::function<void(VariableNode&)> hook) const;

  const std::shared_ptr<VariableNode>& node_ptr() const { return node_; }
  VariableNode* node() const;
  bool is(const Variable& other) const { return node_ == other.node_; }

 private:
  std::shared_ptr<VariableNode> node_;
};

// While an instance lives, functions on this thread do not record the graph (inference).
class NoBackpropMode {
 public:
  NoBackpropMode();
  ~NoBackpropMode();
  NoBackpropMode(const NoBackpropMode&) = delete;
  NoBackpropMode& operator=(const NoBackpropMode&) = delete;

 private:
  bool previous_;
};
// While an instance lives, recording is on again (inside a NoBackpropMode scope).
class ForceBackpropMode {
 public:
  ForceBackpropMode();
  ~ForceBackpropMode();
  ForceBackpropMode(const ForceBackpropMode&) = delete;
  ForceBackpropMode& operator=(const ForceBackpropMode&) = delete;

 private:
  bool previous_;
};
bool is_backprop_enabled();

}  // namespace chainer
