/// @file
/// FunctionNode: one recorded application of a differentiable function. Forward computes on
/// tensors directly; when some input needs a gradient, the function builds a node holding only
/// what its backward needs and calls record(), which links the outputs to it.
///
/// A node's backward is the user's code when the function is the user's (the guide
/// docs/extending.md writes one):
/// record() and the backward engine check its contract (defined inputs and outputs, one node
/// per application, one gradient per input with the input's shape, dtype and device) and throw
/// chainer::Error naming the node and the input when it is broken.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "autograd/variable.h"

namespace chainer {

/// A node of the computational graph: one application of a function, with its backward (chainer.FunctionNode).
class FunctionNode {
 public:
  /// Iterative: dropping a deep graph must not recurse through its inputs and overflow the stack.
  virtual ~FunctionNode();
  /// The function's name, as shown in graphs and error messages.
  virtual std::string name() const = 0;
  /// One gradient per output in, one per input out (an undefined Tensor where an input needs no
  /// gradient, or where its gradient is zero). Gradients of outputs nobody used arrive as zeros.
  /// Each gradient returned for an input that requires one must have that input's shape, dtype
  /// and device; gradients for inputs that require none are discarded unchecked, as Chainer does.
  virtual std::vector<Tensor> backward(const std::vector<Tensor>& grad_outputs) = 0;

  /// The input variables' nodes (empty once released).
  const std::vector<std::shared_ptr<VariableNode>>& inputs() const { return inputs_; }
  /// Whether input I wants a gradient.
  bool input_requires_grad(size_t i) const { return inputs_[i]->requires_grad; }
  /// The shapes of the outputs, for gradients of outputs nobody used.
  const std::vector<Shape>& output_shapes() const { return output_shapes_; }
  /// The dtypes of the outputs.
  const std::vector<DType>& output_dtypes() const { return output_dtypes_; }
  /// The devices of the outputs.
  const std::vector<Device>& output_devices() const { return output_devices_; }
  /// The output variables' nodes, not kept alive by the function.
  const std::vector<std::weak_ptr<VariableNode>>& outputs() const { return outputs_; }
  /// Order of creation: backward visits later functions first.
  int64_t sequence_number() const { return sequence_; }
  /// Whether release() has run.
  bool released() const { return released_; }

  /// Drops the inputs and saved tensors once backward has run (unless the graph is retained).
  void release();

 protected:
  /// Frees what the subclass saved for backward: release() calls it once backward has run through
  /// the node (not when the graph is retained).
  virtual void release_saved() {}

 private:
  friend std::vector<Variable> record(const std::shared_ptr<FunctionNode>&, const std::vector<Variable>&,
                                      std::vector<Tensor>);
  std::vector<std::shared_ptr<VariableNode>> inputs_;
  std::vector<std::weak_ptr<VariableNode>> outputs_;
  std::vector<Shape> output_shapes_;
  std::vector<DType> output_dtypes_;
  std::vector<Device> output_devices_;
  int64_t sequence_ = 0;
  bool recorded_ = false;
  bool released_ = false;
};

/// True when a function applied to INPUTS must record itself: backprop is enabled and some
/// input requires a gradient.
bool needs_recording(const std::vector<Variable>& inputs);

/// Wraps OUTPUTS in variables created by NODE, whose inputs become INPUTS. Call only when
/// needs_recording(inputs) is true, once per node (a node is one application). Throws
/// chainer::Error naming the node for a null or already recorded node, an undefined input
/// variable, no outputs, or an undefined output tensor.
std::vector<Variable> record(const std::shared_ptr<FunctionNode>& node, const std::vector<Variable>& inputs,
                             std::vector<Tensor> outputs);

/// Wraps OUTPUTS in fresh variables (no graph): the path taken when nothing needs a gradient.
std::vector<Variable> wrap_outputs(std::vector<Tensor> outputs);

}  // namespace chainer
