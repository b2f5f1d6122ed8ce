// Reporter, as chainer.Reporter: code anywhere (a Classifier computing its loss, an evaluator)
// calls chainer::report({{"loss", v}}, this); the value lands in the observation of the active
// reporter scope under the name the observer was registered with ("main/loss").
// DictSummary averages observations over iterations for LogReport and PrintReport.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "autograd/variable.h"

namespace chainer {

using Observation = std::map<std::string, double>;

class Reporter {
 public:
  void add_observer(const std::string& name, const void* observer);
  // Registers each (suffix, observer) pair under PREFIX + suffix ("main" + "/predictor").
  template <class Ptr>
  void add_observers(const std::string& prefix, const std::vector<std::pair<std::string, Ptr>>& observers) {
    for (const auto& [suffix, obs] : observers) add_observer(prefix + suffix, obs);
  }
  // Adds VALUES under the observer's name ("name/key"; just "key" for an unknown observer).
  void report(const Observation& values, const void* observer = nullptr);
  // Reports the values of VARIABLES and shows the variables themselves, graph intact, to the
  // variable hooks (dump_graph writes the graph of "main/loss" this way).
  void report(const std::map<std::string, Variable>& variables, const void* observer = nullptr);
  using VariableHook = std::function<void(const std::string& key, const Variable& variable)>;
  void add_variable_hook(VariableHook hook) { variable_hooks_.push_back(std::move(hook)); }

  // While the scope lives, report() on this thread goes to this reporter and fills OBSERVATION.
  class Scope {
   public:
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

// Reports to the reporter whose scope is active on this thread (ignored when none is).
void report(const Observation& values, const void* observer = nullptr);
void report(const std::map<std::string, Variable>& variables, const void* observer = nullptr);
Reporter* current_reporter();

// Running means of reported values, key by key.
class DictSummary {
 public:
  void add(const Observation& observation);
  Observation compute_mean() const;
  void serialize(class Serializer& s);

 private:
  std::map<std::string, std::pair<double, int64_t>> sums_;  // key -> (sum, count)
};

}  // namespace chainer
