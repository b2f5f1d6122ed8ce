/// @file
/// Reporter, as chainer.Reporter: code anywhere (a Classifier computing its loss, an evaluator)
/// calls `chainer::report({{"loss", v}}, this)`; the value lands in the observation of the active
/// reporter scope under the name the observer was registered with ("main/loss").
/// DictSummary averages observations over iterations for LogReport and PrintReport.
///
/// A value reported as a variable on a GPU stays there: the observation holds the one-element
/// tensor and DictSummary sums it on the device, so a training step never waits for the device
/// to report its loss; the host reads the sum once, when compute_mean() is called (at a report
/// interval). Values on the CPU are read at once.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "autograd/variable.h"

namespace chainer {

/// A reported number: a double, or a one-element tensor on a GPU read only when needed.
class ReportValue {
 public:
  /// A plain number VALUE.
  ReportValue(double value = 0.0) : value_(value) {}  // NOLINT: numbers convert implicitly
  /// A number held by DEVICE_VALUE, a one-element tensor on a GPU, read when needed.
  explicit ReportValue(Tensor device_value) : tensor_(std::move(device_value)) {}
  /// The number (a host read for a device value).
  double value() const { return tensor_.defined() ? tensor_.item_double() : value_; }
  /// The number, as value().
  operator double() const { return value(); }  // NOLINT: reads as the number it is
  /// The device tensor, or undefined for a plain number.
  const Tensor& tensor() const { return tensor_; }

 private:
  double value_ = 0.0;
  Tensor tensor_;
};

/// Reported values by name ("main/loss"), as Chainer's observation dict.
using Observation = std::map<std::string, ReportValue>;

/// Collects reported values under their observers' names (Chainer's `chainer.Reporter`).
class Reporter {
 public:
  /// Registers OBSERVER (any object, by address) under NAME ("main").
  void add_observer(const std::string& name, const void* observer);
  /// Registers OBSERVER under NAME unless it already has a name.
  void add_observer_once(const std::string& name, const void* observer) { names_.try_emplace(observer, name); }
  /// Registers each (suffix, observer) pair under PREFIX + suffix ("main" + "/predictor").
  template <class Ptr>
  void add_observers(const std::string& prefix, const std::vector<std::pair<std::string, Ptr>>& observers) {
    for (const auto& [suffix, obs] : observers) add_observer(prefix + suffix, obs);
  }
  /// Adds VALUES under the observer's name ("name/key"; just "key" for an unknown observer).
  void report(const Observation& values, const void* observer = nullptr);
  /// Reports the values of VARIABLES and shows the variables themselves, graph intact, to the
  /// variable hooks (dump_graph writes the graph of "main/loss" this way).
  void report(const std::map<std::string, Variable>& variables, const void* observer = nullptr);
  /// Called with each reported variable and its full key.
  using VariableHook = std::function<void(const std::string& key, const Variable& variable)>;
  /// Adds HOOK, shown every variable reported from now on.
  void add_variable_hook(VariableHook hook) { variable_hooks_.push_back(std::move(hook)); }

  /// While the scope lives, report() on this thread goes to this reporter and fills OBSERVATION.
  class Scope {
   public:
    /// Makes REPORTER and OBSERVATION the active ones on this thread until the scope ends.
    Scope(Reporter& reporter, Observation& observation);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Reporter* previous_;
    Observation* previous_observation_;
  };

 private:
  std::string prefix_of(const void* observer) const;
  std::map<const void*, std::string> names_;
  std::vector<VariableHook> variable_hooks_;
};

/// Reports to the reporter whose scope is active on this thread (ignored when none is).
void report(const Observation& values, const void* observer = nullptr);
/// Reports VARIABLES to the reporter whose scope is active on this thread (ignored when none is).
void report(const std::map<std::string, Variable>& variables, const void* observer = nullptr);
/// The reporter whose scope is active on this thread (null when none is active).
Reporter* current_reporter();
/// The observation the active scope fills (null when none is active).
Observation* current_observation();

/// Running means of reported values, key by key.
class DictSummary {
 public:
  /// Adds each value of OBSERVATION to the sum of its key.
  void add(const Observation& observation);
  /// The mean of each key's values so far (reads the device sums once).
  Observation compute_mean() const;
  /// Saves/loads the sums and counts.
  void serialize(class Serializer& s);

 private:
  struct Sum {
    double host = 0;
    Tensor device;  // float64, one element: the device values' sum
    int64_t count = 0;
    double total() const { return device.defined() ? host + device.item_double() : host; }
  };
  std::map<std::string, Sum> sums_;
};

}  // namespace chainer
