/// @file
/// Whole-step CUDA graphs for StandardUpdater: a define-by-run step records its graph on the host
/// every iteration, but a step of fixed shapes queues the same kernels every time. Once a step's
/// signature (the batch's shapes and dtypes, the parameters and optimizer state in memory, the
/// hooks, config::train) has been seen twice, the next such step is captured into a CUDA graph
/// (forward, backward and update; core/device/cuda.h) and later steps with that signature replay it:
/// the batch is copied into the graph's input buffers, the parameters' gradients become the
/// buffers the graph writes them to, the optimizer's counters advance on the host, the per-step
/// scalars (learning rates, dropout keys) are recomputed, and one graph launch does the rest.
/// What the step reported (the loss, the accuracy) is reported again: device values the graph
/// rewrites on every replay. A smaller last batch gets a graph of its own the
/// second time it is seen (kMaxGraphs are kept). A step that cannot be captured (it reads a value
/// on the host, or the optimizer synchronizes with other processes) runs eagerly from then on,
/// after a one-time message saying why. A step that ran out of device memory while being captured
/// (the allocator returns nothing to the device during a capture: CaptureOutOfMemory) runs eagerly
/// from then on for its signature only, where nothing is held for a graph and the cache may be
/// returned. docs/design.md has the reasoning.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/device/cuda.h"
#include "nn/optimizer.h"
#include "nn/reporter.h"

namespace chainer::training {

/// Runs training steps, capturing a step of a signature seen twice into a CUDA graph and replaying it.
class CudaGraphStep {
 public:
  static constexpr size_t kMaxGraphs = 2;  ///< Graphs kept; capturing another evicts the least recently used.
  /// One training step on the device inputs (forward, backward and the optimizer's update).
  using Step = std::function<void(const std::vector<Variable>& inputs)>;

  /// Runs STEP (one update of OPTIMIZER on INPUTS, which may be on the host) on DEVICE, through a
  /// graph when it can.
  void run(Optimizer& optimizer, Device device, const std::vector<Tensor>& inputs, const Step& step);

  /// Runs STEP eagerly on INPUTS moved to DEVICE (what run() falls back to).
  static void eager(Device device, const std::vector<Tensor>& inputs, const Step& step);

  /// Whether steps still go through graphs (false after a step could not be captured).
  bool enabled() const { return enabled_; }
  size_t captures() const { return captures_; }  ///< Graphs captured so far.
  size_t replays() const { return replays_; }    ///< Steps run by replaying a graph.
  /// Signatures whose steps run eagerly after running out of memory while being captured.
  size_t eager_signatures() const { return eager_only_.size(); }

  // ---- The decisions run() makes, apart from the device work (tested without a GPU) ----
  /// What a captured step depends on that may change between steps without the graph knowing:
  /// the batch's layout; where the parameters (each once, Link::unique_namedparams), their
  /// optimizer state and the persistent values (BatchNorm's running statistics, which a replay
  /// writes) live; the hooks; config::train and backprop mode. Numbers, not text: it is computed
  /// on every step, a replay's only host work besides the launch.
  using Signature = std::vector<int64_t>;
  /// The signature of a step of OPTIMIZER on INPUTS.
  static Signature signature(const Optimizer& optimizer, const std::vector<Tensor>& inputs);
  /// Where run() sends a step.
  enum class Route {
    Eager,    ///< run it eagerly (a first sighting, graphs off, or a signature left to eager steps)
    Capture,  ///< capture it into a graph (its second sighting)
    Replay    ///< replay its graph
  };
  /// Where a step of signature KEY goes; counts the sighting.
  Route route(const Signature& key);
  /// The capture of a step of signature KEY threw ERROR (and was abandoned): out of memory, that
  /// signature runs eagerly from then on (the first time with a message); anything else turns
  /// graphs off (with a message).
  void capture_failed(const Signature& key, const cuda::CaptureError& error);
  /// Runs BODY (a capture) with what it reports kept apart: the current observation, if any, is
  /// set aside while BODY runs and comes back however BODY ends; when BODY returns, what it
  /// reported is added to it (BODY's values win on a clash) and returned.
  static Observation reporting_apart(const std::function<void()>& body);

 private:
  struct Captured {
    std::unique_ptr<cuda::Graph> graph;
    std::vector<Tensor> inputs;               // the graph reads the batch from these
    std::vector<Tensor> grads;                // the gradients the graph writes, per parameter
    Observation reported;                     // what the step reported, rewritten by each replay
  };
  using Key = Signature;
  using Params = std::vector<std::pair<std::string, Variable>>;
  static Key signature(const Optimizer& optimizer, const Params& params, const std::vector<Tensor>& inputs);
  void capture(const Key& key, Optimizer& optimizer, Device device, const std::vector<Tensor>& inputs,
               const Step& step);
  void disable(const std::string& why);  // once, with a message
  static std::vector<Tensor> grads_of(const Params& params);

  bool enabled_ = true;
  std::map<Key, int> seen_;                     // eager steps per signature
  std::set<Key> eager_only_;                    // out of memory while captured
  bool told_out_of_memory_ = false;
  std::map<Key, Captured> graphs_;
  std::vector<Key> order_;                      // captured signatures, least recent first
  size_t captures_ = 0, replays_ = 0;
};

}  // namespace chainer::training
