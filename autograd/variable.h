/// @file
/// Variable: a cheap handle (one shared_ptr) on a VariableNode holding data, grad and the
/// function that created it. Outputs own their creator, and the creator owns its inputs, so the
/// graph lives exactly as long as some output of it is reachable.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor/tensor.h"

namespace chainer {

class FunctionNode;
class Variable;

/// What a Variable refers to: its data, gradient, flags and creator (chainer.variable.VariableNode).
struct VariableNode {
  Tensor data;  ///< the value
  Tensor grad;  ///< the gradient (undefined until backward sets it)
  bool requires_grad = false;  ///< whether backward computes a gradient for it
  bool retain_grad = false;  ///< keep the gradient of a non-leaf variable after backward
  std::string name;  ///< shown in graphs and error messages
  std::shared_ptr<FunctionNode> creator;  ///< the function that produced it; null for a leaf
  /// Called once per backward, as soon as this leaf's gradient is final (the distributed reducer
  /// hangs off these).
  std::vector<std::function<void(VariableNode&)>> grad_hooks;
};

/// Options of Variable::backward.
struct BackwardOptions {
  bool retain_graph = false;  ///< keep saved tensors so backward can run through the graph again
  /// Loss scaling (Chainer's backward(loss_scale=...)): the initial gradient of a variable whose
  /// grad is unset is LOSS_SCALE instead of 1, so every gradient of the graph is LOSS_SCALE times
  /// the true one, which keeps small float16 gradients from flushing to zero; the optimizer divides
  /// it out (Optimizer::loss_scaling). A grad set by the caller is used as it is, as in Chainer:
  /// whoever sets it scales it.
  double loss_scale = 1.0;
};

/// A node of the computational graph holding a tensor and its gradient (chainer.Variable).
class Variable {
 public:
  Variable() = default;  ///< undefined
  /// A leaf variable over DATA.
  explicit Variable(Tensor data, bool requires_grad = false, std::string name = "");
  /// A handle on an existing NODE.
  explicit Variable(std::shared_ptr<VariableNode> node) : node_(std::move(node)) {}

  /// False for a default-constructed variable.
  bool defined() const { return node_ != nullptr; }
  /// The value.
  const Tensor& data() const { return node()->data; }
  /// The value, to modify in place.
  Tensor& data() { return node()->data; }
  /// Replaces the value.
  void set_data(Tensor data) { node()->data = std::move(data); }
  /// The gradient (undefined before backward).
  const Tensor& grad() const { return node()->grad; }
  /// Sets the gradient (the initial gradient of backward, when set on its root).
  void set_grad(Tensor grad) { node()->grad = std::move(grad); }
  /// Clears the gradient, as chainer.Variable.cleargrad.
  void cleargrad() { node()->grad = Tensor(); }
  /// Whether backward computes a gradient for this variable.
  bool requires_grad() const { return node()->requires_grad; }
  /// Sets whether backward computes a gradient for this variable.
  void set_requires_grad(bool r) { node()->requires_grad = r; }
  /// Keeps the gradient of this non-leaf variable after backward.
  void set_retain_grad(bool r = true) { node()->retain_grad = r; }
  /// The name, shown in graphs and error messages.
  const std::string& name() const { return node()->name; }
  /// Sets the name.
  void set_name(std::string n) { node()->name = std::move(n); }

  /// The data's shape.
  const Shape& shape() const { return data().shape(); }
  /// The data's dtype.
  DType dtype() const { return data().dtype(); }
  /// The data's number of dimensions.
  int64_t ndim() const { return data().ndim(); }
  /// The data's number of elements.
  int64_t numel() const { return data().numel(); }
  /// The value of a one-element variable, as a double.
  double item() const { return data().item_double(); }

  /// The function that produced this variable; null for a leaf.
  std::shared_ptr<FunctionNode> creator() const { return node()->creator; }
  /// True when no function produced this variable.
  bool is_leaf() const { return node()->creator == nullptr; }

  /// Runs backpropagation from this variable. Its grad is the initial gradient; when unset the
  /// variable must hold one element and the initial gradient is 1 (times OPTIONS.loss_scale).
  void backward(const BackwardOptions& options = {}) const;
  /// Cuts the link to the creator: this variable becomes a leaf.
  void unchain() const;
  /// A new leaf over the same data, needing no gradient (PyTorch's detach): what is computed from
  /// it does not reach this variable's graph, which stays as it is (a GAN's discriminator step on
  /// the generator's output). The data is shared, not copied.
  Variable detach() const;
  /// Cuts every creator link reachable from this variable, freeing the graph behind it.
  void unchain_backward() const;
  /// Adds HOOK to the node's grad_hooks.
  void register_grad_hook(std::function<void(VariableNode&)> hook) const;

  /// The shared node (null when undefined).
  const std::shared_ptr<VariableNode>& node_ptr() const { return node_; }
  /// The node; throws chainer::Error when the variable is undefined.
  VariableNode* node() const;
  /// True when both handles refer to the same node.
  bool is(const Variable& other) const { return node_ == other.node_; }

 private:
  std::shared_ptr<VariableNode> node_;
};

/// While an instance lives, functions on this thread do not record the graph (inference).
class NoBackpropMode {
 public:
  NoBackpropMode();
  ~NoBackpropMode();
  NoBackpropMode(const NoBackpropMode&) = delete;
  NoBackpropMode& operator=(const NoBackpropMode&) = delete;

 private:
  bool previous_;
};
/// While an instance lives, recording is on again (inside a NoBackpropMode scope).
class ForceBackpropMode {
 public:
  ForceBackpropMode();
  ~ForceBackpropMode();
  ForceBackpropMode(const ForceBackpropMode&) = delete;
  ForceBackpropMode& operator=(const ForceBackpropMode&) = delete;

 private:
  bool previous_;
};
/// Whether functions on this thread record the graph (false inside a NoBackpropMode).
bool is_backprop_enabled();

}  // namespace chainer
