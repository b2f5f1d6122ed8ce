#include "training/cuda_graph_step.h"

#include <algorithm>
#include <iostream>

#include "core/memory/caching_allocator.h"
#include "core/util/config.h"

namespace chainer::training {

namespace {
// Signatures remembered for warm-up or left to eager steps; batches of ever new shapes have
// nothing to replay, so beyond this the record starts afresh.
constexpr size_t kMaxRemembered = 64;
}  // namespace

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

CudaGraphStep::Signature CudaGraphStep::signature(const Optimizer& optimizer, const std::vector<Tensor>& inputs) {
  return signature(optimizer, optimizer.target().unique_namedparams(), inputs);
}

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
  // A replay writes the persistent values the capture saw: one replaced since (a loaded
  // snapshot, a reassigned running mean) must not be written through its freed memory.
  for (const auto& [name, t] : optimizer.target().namedpersistents()) {
    address(t);
    if (t.defined()) layout(t);
  }
  for (const auto& hook : optimizer.hooks()) key.push_back(int64_t(uintptr_t(hook.get())));
  key.push_back(config::train());
  key.push_back(is_backprop_enabled());
  return key;
}

CudaGraphStep::Route CudaGraphStep::route(const Signature& key) {
  if (!enabled_) return Route::Eager;
  if (graphs_.contains(key)) return Route::Replay;
  if (eager_only_.contains(key)) return Route::Eager;
  if (seen_.size() > kMaxRemembered) seen_.clear();
  return seen_[key]++ == 0 ? Route::Eager : Route::Capture;  // warm-up first: state, lazy parameters, handles
}

void CudaGraphStep::capture_failed(const Signature& key, const cuda::CaptureError& error) {
  if (!dynamic_cast<const CaptureOutOfMemory*>(&error)) return disable(error.what());
  // Eagerly the step may well fit: the allocator can then return its cache to the device.
  if (eager_only_.size() >= kMaxRemembered) eager_only_.clear();
  eager_only_.insert(key);
  if (told_out_of_memory_) return;
  told_out_of_memory_ = true;
  std::cerr << "chainermn-cpp: a training step ran out of device memory while being captured into a CUDA graph; "
               "steps of its shapes run without a graph from now on ("
            << error.what() << ")\n";
}

Observation CudaGraphStep::reporting_apart(const std::function<void()>& body) {
  Observation* observation = current_observation();
  if (!observation) {
    body();
    return {};
  }
  Observation outer;
  std::swap(outer, *observation);
  // However BODY ends, the outer observation comes back: the step's values must not vanish
  // with a capture that throws (a user's error inside the step, a CUDA error).
  struct Restore {
    Observation& current;
    Observation& outer;
    ~Restore() { std::swap(current, outer); }
  } restore{*observation, outer};
  body();
  for (const auto& [name, value] : *observation) outer.insert_or_assign(name, value);
  return *observation;
}

void CudaGraphStep::run(Optimizer& optimizer, Device device, const std::vector<Tensor>& inputs, const Step& step) {
  if (!enabled_ || !device.is_cuda()) return eager(device, inputs, step);
  if (!optimizer.capturable()) {
    disable("the optimizer's step needs the host: a multi-node optimizer synchronizes with other processes there, and "
            "loss scaling and float32 master weights are decided there");
    return eager(device, inputs, step);
  }
  Params params = optimizer.target().unique_namedparams();
  const Key key = signature(optimizer, params, inputs);
  switch (route(key)) {
    case Route::Eager: return eager(device, inputs, step);
    case Route::Capture: return capture(key, optimizer, device, inputs, step);
    case Route::Replay: break;
  }
  Captured& c = graphs_.at(key);
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
}

void CudaGraphStep::capture(const Key& key, Optimizer& optimizer, Device device,
                            const std::vector<Tensor>& inputs, const Step& step) {
  Captured c;
  std::vector<Variable> vars;
  for (const Tensor& x : inputs) {
    c.inputs.push_back(Tensor::empty(x.shape(), x.dtype(), device).copy_(x));
    vars.emplace_back(c.inputs.back());
  }
  // A step that does not complete here is not counted: the eager step after a failed capture
  // counts it, and one that throws did not happen.
  const Optimizer::StepCounts counts = optimizer.step_counts();
  try {
    // What the step reports goes into an observation of its own, kept for the replays.
    c.reported = reporting_apart([&] {
      c.graph = cuda::Graph::capture(device, [&] { step(vars); });
      c.graph->replay();  // capturing queued nothing: this runs the step
    });
  } catch (const cuda::CaptureError& e) {
    optimizer.restore_step_counts(counts);
    capture_failed(key, e);
    return eager(device, inputs, step);
  } catch (...) {
    optimizer.restore_step_counts(counts);
    throw;
  }
  c.grads = grads_of(optimizer.target().unique_namedparams());
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
