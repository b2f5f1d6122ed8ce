// The backward engine. Counts, for every function reachable from the root, how many consumers
// will send it gradients; then runs functions from a ready queue (latest-created first, the
// order PyTorch uses), summing gradients per variable before its creator runs. Leaf gradients
// are accumulated the moment they are final, and their hooks fire then, so a distributed
// reducer can start communicating while the rest of backward is still running.
#include <cmath>
#include <queue>
#include <unordered_map>

#include "autograd/function_hook.h"
#include "autograd/function_node.h"
#include "core/ops/ops.h"

namespace chainer {

namespace {
struct BySequence {
  bool operator()(const std::shared_ptr<FunctionNode>& a, const std::shared_ptr<FunctionNode>& b) const {
    return a->sequence_number() < b->sequence_number();
  }
};

void add_into(Tensor& acc, Tensor g) {
  acc = acc.defined() ? ops::add(acc, g) : std::move(g);
}

// A node's backward may be the user's code (a custom function), so what it returns is checked
// as a user's value: one gradient per input, each gradient the engine will use with its input's
// shape, dtype and device. Gradients for inputs that need none are discarded unchecked, as
// Chainer discards those outside target_input_indexes.
void check_gradients(const FunctionNode& f, const std::vector<Tensor>& gxs) {
  if (gxs.size() != f.inputs().size())
    throw Error(str("backward: ", f.name(), " returned ", gxs.size(), " gradient", gxs.size() == 1 ? "" : "s",
                    " but has ", f.inputs().size(), " input", f.inputs().size() == 1 ? "" : "s",
                    "; backward returns one gradient per input (an undefined Tensor where none is needed)"));
  for (size_t i = 0; i < gxs.size(); ++i) {
    const Tensor& gx = gxs[i];
    const VariableNode& in = *f.inputs()[i];
    if (!in.requires_grad || !gx.defined()) continue;
    if (gx.shape() != in.data.shape())
      throw Error(str("backward: ", f.name(), " returned a gradient of shape ", shape_str(gx.shape()), " for input ", i,
                      ", which has shape ", shape_str(in.data.shape())));
    if (gx.dtype() != in.data.dtype())
      throw Error(str("backward: ", f.name(), " returned a gradient of dtype ", dtype_name(gx.dtype()), " for input ",
                      i, ", which has dtype ", dtype_name(in.data.dtype())));
    if (gx.device() != in.data.device())
      throw Error(str("backward: ", f.name(), " returned a gradient on ", gx.device().str(), " for input ", i,
                      ", which is on ", in.data.device().str()));
  }
}
}  // namespace

void Variable::backward(const BackwardOptions& options) const {
  VariableNode* root = node();
  Tensor root_grad = root->grad;
  if (!root_grad.defined()) {
    if (root->data.numel() != 1)
      throw Error(str("backward: the variable has shape ", shape_str(root->data.shape()),
                      "; backward from a non-scalar needs an initial gradient (set grad first)"));
    root_grad = Tensor::full(root->data.shape(), options.loss_scale, root->data.dtype(), root->data.device());
  } else if (root_grad.shape() != root->data.shape()) {
    throw Error(str("backward: the initial gradient has shape ", shape_str(root_grad.shape()),
                    " but the variable has shape ", shape_str(root->data.shape())));
  } else if (root_grad.dtype() != root->data.dtype()) {
    throw Error(str("backward: the initial gradient has dtype ", dtype_name(root_grad.dtype()),
                    " but the variable has dtype ", dtype_name(root->data.dtype())));
  } else if (root_grad.device() != root->data.device()) {
    throw Error(str("backward: the initial gradient is on ", root_grad.device().str(), " but the variable is on ",
                    root->data.device().str()));
  }
  if (!(options.loss_scale > 0) || !std::isfinite(options.loss_scale))
    throw Error(str("backward: loss_scale must be a positive finite number, got ", options.loss_scale));
  if (!root->creator) return;  // a leaf: its grad already is the answer (unscaled, as Chainer's)

  // Pass 1: dependency counts of functions and of leaves (for hook timing).
  std::unordered_map<FunctionNode*, int> deps;
  std::unordered_map<VariableNode*, int> leaf_uses;
  std::vector<FunctionNode*> stack{root->creator.get()};
  deps[root->creator.get()] = 0;
  while (!stack.empty()) {
    FunctionNode* f = stack.back();
    stack.pop_back();
    if (f->released())
      throw Error(str("backward: the graph through ", f->name(),
                      " has already been freed by an earlier backward; pass retain_graph = true to the first one"));
    for (const auto& in : f->inputs()) {
      if (!in->requires_grad) continue;
      if (FunctionNode* g = in->creator.get()) {
        auto [it, fresh] = deps.try_emplace(g, 0);
        ++it->second;
        if (fresh) stack.push_back(g);
      } else {
        ++leaf_uses[in.get()];
      }
    }
  }

  // Pass 2: run functions as their gradients become complete.
  std::unordered_map<VariableNode*, std::pair<std::shared_ptr<VariableNode>, Tensor>> pending;
  // The queue owns its functions: releasing a function's inputs may drop the last other
  // reference to a producer that is already queued.
  std::priority_queue<std::shared_ptr<FunctionNode>, std::vector<std::shared_ptr<FunctionNode>>, BySequence> ready;
  pending[root] = {nullptr, root_grad};
  ready.push(root->creator);

  while (!ready.empty()) {
    std::shared_ptr<FunctionNode> f = ready.top();
    ready.pop();
    std::vector<Tensor> gys;
    gys.reserve(f->outputs().size());
    for (size_t i = 0; i < f->outputs().size(); ++i) {
      std::shared_ptr<VariableNode> out = f->outputs()[i].lock();
      Tensor g;
      if (out) {
        if (auto it = pending.find(out.get()); it != pending.end()) {
          g = std::move(it->second.second);
          pending.erase(it);
        }
      }
      gys.push_back(g.defined() ? std::move(g)
                                : Tensor::zeros(f->output_shapes()[i], f->output_dtypes()[i], f->output_devices()[i]));
    }
    // Hooks (autograd/function_hook.h) see the inputs' arrays and the outputs' gradients; with
    // none registered, this is the one check.
    std::vector<Tensor> in_data;
    const bool hooked = detail::t_function_hook_count != 0;
    if (hooked) [[unlikely]] {
      for (const auto& in : f->inputs()) in_data.push_back(in->data);
      detail::run_backward_preprocess(*f, in_data, gys);
    }
    std::vector<Tensor> gxs = f->backward(gys);
    if (hooked) [[unlikely]] detail::run_backward_postprocess(*f, in_data, gys);
    check_gradients(*f, gxs);
    for (size_t i = 0; i < gxs.size(); ++i) {
      const std::shared_ptr<VariableNode>& in = f->inputs()[i];
      if (!in->requires_grad) continue;
      Tensor& gx = gxs[i];
      if (const std::shared_ptr<FunctionNode>& g = in->creator) {
        if (gx.defined()) {
          auto& slot = pending[in.get()];
          slot.first = in;
          add_into(slot.second, gx);
          if (in->retain_grad) in->grad = slot.second;
        }
        if (--deps[g.get()] == 0) ready.push(g);
      } else {
        if (gx.defined()) {
          // A gradient may be shared (add passes gy through to both inputs, a pending sum may
          // hold it); leaves must own theirs, since optimizers and reducers update grads in place.
          if (in->grad.defined()) in->grad = ops::add(in->grad, gx);
          else in->grad = gx.storage().use_count() > 1 ? gx.clone() : std::move(gx);
        }
        if (--leaf_uses[in.get()] == 0)
          for (auto& hook : in->grad_hooks) hook(*in);
      }
    }
    if (!options.retain_graph) f->release();
  }
}

}  // namespace chainer
