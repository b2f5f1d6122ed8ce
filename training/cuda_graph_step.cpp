#include "training/cuda_graph_step.h"

#include <algorithm>
#include <iostream>
#include <sstream>

#include "core/config.h"

namespace chainer::training {

void CudaGraphStep::eager(Device device, const std::vector<Tensor>& inputs, const Step& step) {
  std::vector<Variable> vars;
  vars.reserve(inputs.size());
  for (const Tensor& x : inputs) vars.emplace_back(x.to(device));
  step(vars);
}

std::vector<Tensor> CudaGraphStep::grads_of(const Optimizer& optimizer) {
  std::vector<Tensor> out;
  for (const auto& [name, p] : optimizer.target().namedparams()) out.push_back(p.grad());
  return out;
}

// Everything a captured step depends on that could change between steps without the graph
// knowing: the batch's layout, where parameters and optimizer state live, the hooks, the mode.
std::string CudaGraphStep::signature(const Optimizer& optimizer, const std::vector<Tensor>& inputs) const {
  std::ostringstream key;
  for (const Tensor& x : inputs) key << dtype_name(x.dtype()) << shape_str(x.shape()) << ';';
  for (const auto& [name, p] : optimizer.target().namedparams()) {
    key << name << '@' << (p.data().defined() ? p.data().raw_data() : nullptr);
    if (p.data().defined()) key << dtype_name(p.dtype()) << shape_str(p.shape());
    for (const auto& [k, t] : optimizer.state(name)) key << k << '@' << (t.defined() ? t.raw_data() : nullptr);
    key << ';';
  }
  for (const auto& hook : optimizer.hooks()) key << hook->name() << '@' << hook.get() << ';';
  key << config::train() << is_backprop_enabled();
  return key.str();
}

void CudaGraphStep::run(Optimizer& optimizer, Device device, const std::vector<Tensor>& inputs, const Step& step) {
  if (!enabled_ || !device.is_cuda()) return eager(device, inputs, step);
  if (!optimizer.capturable()) {
    disable("the optimizer synchronizes with other processes on the host (a multi-node optimizer)");
    return eager(device, inputs, step);
  }
  const std::string key = signature(optimizer, inputs);
  if (auto it = graphs_.find(key); it != graphs_.end()) {
    Captured& c = it->second;
    for (size_t i = 0; i < inputs.size(); ++i) c.inputs[i].copy_(inputs[i]);  // host batches: one async copy
    // The step's gradients are where this graph writes them (another graph's step, or a
    // cleargrads, may have left others in the parameters).
    auto params = optimizer.target().namedparams();
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

void CudaGraphStep::capture(const std::string& key, Optimizer& optimizer, Device device,
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
  c.grads = grads_of(optimizer);
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
