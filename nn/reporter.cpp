#include "nn/reporter.h"

#include "core/ops/ops.h"
#include "core/io/serializer.h"

namespace chainer {

namespace {
thread_local Reporter* t_reporter = nullptr;
thread_local Observation* t_observation = nullptr;
}  // namespace

void Reporter::add_observer(const std::string& name, const void* observer) { names_[observer] = name; }

std::string Reporter::prefix_of(const void* observer) const {
  if (!observer) return "";
  auto it = names_.find(observer);
  return it == names_.end() ? std::string() : it->second + "/";
}

void Reporter::report(const Observation& values, const void* observer) {
  if (!t_observation) return;
  const std::string prefix = prefix_of(observer);
  for (const auto& [key, value] : values) (*t_observation)[prefix + key] = value;
}

void Reporter::report(const std::map<std::string, Variable>& variables, const void* observer) {
  if (!t_observation) return;
  const std::string prefix = prefix_of(observer);
  for (const auto& [key, v] : variables) {
    const Tensor& t = v.data();
    (*t_observation)[prefix + key] = t.device().is_cpu() ? ReportValue(v.item()) : ReportValue(t);
    for (auto& hook : variable_hooks_) hook(prefix + key, v);
  }
}

Reporter::Scope::Scope(Reporter& reporter, Observation& observation)
    : previous_(t_reporter), previous_observation_(t_observation) {
  t_reporter = &reporter;
  t_observation = &observation;
}

Reporter::Scope::~Scope() {
  t_reporter = previous_;
  t_observation = previous_observation_;
}

void report(const Observation& values, const void* observer) {
  if (t_reporter) t_reporter->report(values, observer);
}

void report(const std::map<std::string, Variable>& variables, const void* observer) {
  if (t_reporter) t_reporter->report(variables, observer);
}

Reporter* current_reporter() { return t_reporter; }
Observation* current_observation() { return t_observation; }

void DictSummary::add(const Observation& observation) {
  for (const auto& [key, value] : observation) {
    Sum& sum = sums_[key];
    const Tensor& t = value.tensor();
    if (t.defined() && !t.device().is_cpu()) {
      if (!sum.device.defined()) sum.device = Tensor::zeros({}, DType::Float64, t.device());
      ops::accumulate_(sum.device, t);
    } else {
      sum.host += value.value();
    }
    ++sum.count;
  }
}

Observation DictSummary::compute_mean() const {
  Observation mean;
  for (const auto& [key, sum] : sums_) mean[key] = sum.count ? sum.total() / double(sum.count) : 0.0;
  return mean;
}

void DictSummary::serialize(Serializer& s) {
  // Keys are stored as one newline-separated string, sums and counts as arrays in that order.
  std::string keys;
  std::vector<int64_t> counts;
  Tensor sums;
  if (!s.is_reader()) {
    std::vector<double> sum_values;
    for (const auto& [key, sum] : sums_) keys += key + "\n", sum_values.push_back(sum.total()), counts.push_back(sum.count);
    sums = Tensor::from_vector(sum_values);
  }
  s.value("keys", keys);
  s.value("counts", counts);
  s.tensor("sums", sums);
  if (s.is_reader()) {
    sums_.clear();
    std::vector<double> sum_values = sums.to_vector<double>();
    size_t start = 0, i = 0;
    for (size_t nl; (nl = keys.find('\n', start)) != std::string::npos; start = nl + 1, ++i)
      sums_[keys.substr(start, nl - start)] = Sum{sum_values.at(i), Tensor(), counts.at(i)};
  }
}

}  // namespace chainer
