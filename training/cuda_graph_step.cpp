#include "training/cuda_graph_step.h"

#include <algorithm>
#include <iostream>

#include "core/config.h"

namespace chainer::training {

void CudaGraphStep::eager(Device device, const std::vector<Tensor>& inputs, const Step& step) {
  std::vector<Variable> vars;
  vars.reserve(inputs.size());
  for (const Tensor& x : inputs) vars.emplace_back(x.to(device));
  step(vars);
}

std::vector<Tensor> CudaGraphStep::grads_of(const Params& params) {
  std::vector<Tensor> out;
  for (const auto& [name, p] : params) out.push_back(p.grad());
  return out;
}

// Everything a captured step depends on that could change between steps without the graph
// knowing: the batch's layout, where parameters and optimizer state live, the hooks, the mode.
CudaGraphStep::Key CudaGraphStep::signature(const Optimizer& optimizer, const Params& params,
                                            const std::vector<Tensor>& inputs) {
  Key key;
  auto layout = [&](const Tensor& t) {
    key.push_back(int64_t(t.dtype()));
    key.push_back(t.ndim());
    key.insert(key.end(), t.shape().begin(), t.shape().end());
  };
  auto address = [&](const Tensor& t) { key.push_back(t.defined() ? int64_t(uintptr_t(t.raw_data())) : 0); };
  for (const Tensor& x : inputs) layout(x);
  for (const auto& [name, p] : params) {
    address(p.data());
    if (p.data().defined()) layout(p.data());
    const TensorMap& state = optimizer.state(name);
    key.push_back(int64_t(state.size()));
    for (const auto& [k, t] : state) address(t);
  }
  for (const auto& hook : optimizer.hooks()) key.push_back(int64_t(uintptr_t(hook.get())));
  key.push_back(config::train());
  key.push_back(is_backprop_enabled());
  return key;
}

void CudaGraphStep::run(Optimizer& optimizer, Device device, const std::vector<Tensor>& inputs, const Step& step) {
  if (!enabled_ || !device.is_cuda()) return eager(device, inputs, step);
  if (!optimizer.capturable()) {
    disable("the optimizer synchronizes with other processes on the host (a multi-node optimizer)");
    return eager(device, inputs, step);
  }
  Params params = optimizer.target().namedparams();
  const Key key = signature(optimizer, params, inputs);
  if (auto it = graphs_.find(key); it != graphs_.end()) {
    Captured& c = it->second;
    for (size_t i = 0; i < inputs.size(); ++i) c.inputs[i].copy_(inputs[i]);  // host batches: one async copy
    // The step's gradients are where this graph writes them (another graph's step, or a
    // cleargrads, may have left others in the parameters).
    for (size_t i = 0; i < params.size(); ++i) params[i].second.set_grad(c.grads[i]);
    optimizer.count_replayed_step();
    c.graph->replay();
    if (!c.reported.empty()) report(c.reported);
    order_.erase(std::find(order_.begin(), order_.end(), key));
    order_.push_back(key);
    ++replays_;
    return;
  }
  if (seen_.size() > 64) seen_.clear();  // batches of ever new shapes: nothing to replay
  if (seen_[key]++ == 0) return eager(device, inputs, step);  // warm-up: state, lazy parameters, handles
  capture(key, optimizer, device, inputs, step);
}

void CudaGraphStep::capture(const Key& key, Optimizer& optimizer, Device device,
                            const std::vector<Tensor>& inputs, const Step& step) {
  Captured c;
  std::vector<Variable> vars;
  for (const Tensor& x : inputs) {
    c.inputs.push_back(Tensor::empty(x.shape(), x.dtype(), device).copy_(x));
    vars.emplace_back(c.inputs.back());
  }
  // What the step reports goes into an observation of its own, kept for the replays.
  Observation* observation = current_observation();
  Observation outer;
  if (observation) std::swap(outer, *observation);
  const Optimizer::StepCounts counts = optimizer.step_counts();
  try {
    c.graph = cuda::Graph::capture(device, [&] { step(vars); });
  } catch (const cuda::CaptureError& e) {
    optimizer.restore_step_counts(counts);
    if (observation) *observation = std::move(outer);
    disable(e.what());
    return eager(device, inputs, step);
  }
  c.graph->replay();  // capturing queued nothing: this runs the step
  c.grads = grads_of(optimizer.target().namedparams());
  if (observation) {
    c.reported = *observation;
    observation->insert(outer.begin(), outer.end());  // the step's values win on a clash
  }
  if (graphs_.size() >= kMaxGraphs) {
    graphs_.erase(order_.front());
    order_.erase(order_.begin());
  }
  graphs_.emplace(key, std::move(c));
  order_.push_back(key);
  ++captures_;
}

void CudaGraphStep::disable(const std::string& why) {
  if (!enabled_) return;
  enabled_ = false;
  graphs_.clear();
  order_.clear();
  std::cerr << "chainermn-cpp: training steps run without CUDA graphs from now on: " << why << "\n";
}

}  // namespace chainer::training
