/// @file
/// TimerHook, as chainer.function_hooks.TimerHook: a FunctionHook that times the forward and
/// the backward computation of every function applied while it is registered, and sums the
/// times per function name. print_report() prints Chainer's table:
///
///            FunctionName  ElapsedTime  Occurrence
///                  Linear      1.24sec        3900
///                    ReLU      0.59sec        2600
///     SoftmaxCrossEntropy      0.82sec        1300
///
/// Times are of the host's steady clock; where a function's inputs (or gradients) are on a GPU,
/// the device is synchronized at the start and the end of each timing, so the time is the
/// device's work, as Chainer's CUDA events measure it. A function applied inside another
/// (nested) is timed on its own too, but total_time() counts only the outermost ones.
#pragma once
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "autograd/function_hook.h"

namespace chainer::function_hooks {

/// Times every function's forward and backward, as Chainer's `function_hooks.TimerHook`.
class TimerHook : public FunctionHook {
 public:
  std::string name() const override { return "TimerHook"; }
  void forward_preprocess(const std::string& function, const std::vector<Tensor>& in_data) override;
  void forward_postprocess(const std::string& function, const std::vector<Tensor>& in_data) override;
  void backward_preprocess(const FunctionNode& function, const std::vector<Tensor>& in_data,
                           const std::vector<Tensor>& out_grad) override;
  void backward_postprocess(const FunctionNode& function, const std::vector<Tensor>& in_data,
                            const std::vector<Tensor>& out_grad) override;

  /// Each timing in order of completion: the function's name and its seconds (Chainer's call_history).
  const std::vector<std::pair<std::string, double>>& call_history() const { return call_history_; }
  /// Seconds of the outermost timed computations (nested ones are inside them).
  double total_time() const { return total_time_; }
  /// One function's line of the summary.
  struct Record {
    double elapsed_time = 0;  ///< Seconds, summed over its timings.
    int64_t occurrence = 0;   ///< How many timings (forward and backward) it had.
  };
  /// Per function name, in order of first completion: the seconds summed and the count (Chainer's summary()).
  std::vector<std::pair<std::string, Record>> summary() const;
  /// Prints summary() as Chainer's table, right-aligned columns two spaces apart. UNIT: "sec",
  /// "ms", "us", "ns"; "auto" (the default) the largest unit in which the largest time is at
  /// least 1; "auto_foreach" that choice per row. Another unit throws chainer::Error.
  void print_report(const std::string& unit = "auto", std::ostream& out = std::cout) const;

 protected:
  /// The clock, in seconds (the host's steady clock); tests replace it.
  virtual double clock() const;

 private:
  void start(const std::vector<Tensor>& a, const std::vector<Tensor>& b);
  void stop(const std::string& function, const std::vector<Tensor>& a, const std::vector<Tensor>& b);
  std::vector<std::pair<std::string, double>> call_history_;
  std::vector<double> running_;  // start times of the computations in progress, innermost last
  double total_time_ = 0;
};

}  // namespace chainer::function_hooks
