#include "training/extensions/parameter_statistics.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "training/trainer.h"

namespace chainer::training::extensions {

namespace {
double mean_of(const std::vector<double>& x) {
  double s = 0;
  for (double v : x) s += v;
  return s / double(x.size());
}

// numpy.percentile's default (linear): the value at rank q / 100 * (n - 1) of the sorted values.
std::vector<double> percentiles(std::vector<double> x, const std::vector<double>& qs) {
  std::sort(x.begin(), x.end());
  std::vector<double> out;
  for (double q : qs) {
    const double rank = q / 100.0 * double(x.size() - 1);
    const size_t lo = size_t(std::floor(rank)), hi = std::min(lo + 1, x.size() - 1);
    out.push_back(x[lo] + (x[hi] - x[lo]) * (rank - double(lo)));
  }
  return out;
}
}  // namespace

std::map<std::string, ParameterStatistics::Statistic> ParameterStatistics::default_statistics() {
  return {
      {"mean", [](const std::vector<double>& x) { return std::vector<double>{mean_of(x)}; }},
      {"std",
       [](const std::vector<double>& x) {
         const double m = mean_of(x);
         double s = 0;
         for (double v : x) s += (v - m) * (v - m);
         return std::vector<double>{std::sqrt(s / double(x.size()))};
       }},
      {"min", [](const std::vector<double>& x) { return std::vector<double>{*std::min_element(x.begin(), x.end())}; }},
      {"max", [](const std::vector<double>& x) { return std::vector<double>{*std::max_element(x.begin(), x.end())}; }},
      {"zeros",
       [](const std::vector<double>& x) { return std::vector<double>{double(std::count(x.begin(), x.end(), 0.0))}; }},
      {"percentile",
       [](const std::vector<double>& x) { return percentiles(x, {0.13, 2.28, 15.87, 50, 84.13, 97.72, 99.87}); }},
  };
}

ParameterStatistics::ParameterStatistics(std::vector<std::pair<std::string, std::shared_ptr<Link>>> links,
                                         std::map<std::string, Statistic> statistics, bool report_params,
                                         bool report_grads, std::string prefix, Trigger trigger, bool skip_nan_params)
    : links_(std::move(links)), statistics_(std::move(statistics)), prefix_(std::move(prefix)),
      trigger_(std::move(trigger)), skip_nan_params_(skip_nan_params) {
  for (const auto& [name, link] : links_)
    if (!link) throw Error(str("ParameterStatistics: the link '", name, "' is null"));
  if (report_params) attrs_.push_back("data");
  if (report_grads) attrs_.push_back("grad");
}

ParameterStatistics::ParameterStatistics(std::shared_ptr<Link> link, std::map<std::string, Statistic> statistics,
                                         bool report_params, bool report_grads, std::string prefix, Trigger trigger,
                                         bool skip_nan_params)
    : ParameterStatistics({{"None", std::move(link)}}, std::move(statistics), report_params, report_grads,
                          std::move(prefix), std::move(trigger), skip_nan_params) {}

void ParameterStatistics::operator()(Trainer& trainer) {
  Observation statistics;
  const std::string prefix = prefix_.empty() ? "" : prefix_ + "/";
  for (const auto& [link_name, link] : links_) {
    for (const auto& [param_name, param] : link->namedparams()) {
      for (const std::string& attr : attrs_) {
        const Tensor& array = attr == "data" ? param.data() : param.grad();
        if (!array.defined() || array.numel() == 0) continue;  // not initialized, or no backward yet
        const std::vector<double> values = array.to_vector<double>();
        const bool has_nan =
            skip_nan_params_ && std::any_of(values.begin(), values.end(), [](double v) { return std::isnan(v); });
        for (const auto& [function_name, function] : statistics_) {
          const std::string key = prefix + link_name + param_name + "/" + attr + "/" + function_name;
          if (has_nan) {
            statistics[key] = std::numeric_limits<double>::quiet_NaN();
            continue;
          }
          const std::vector<double> value = function(values);
          if (value.size() == 1) {
            statistics[key] = value[0];
          } else {
            for (size_t i = 0; i < value.size(); ++i) statistics[key + "/" + std::to_string(i)] = value[i];
          }
        }
      }
    }
  }
  summary_.add(statistics);
  if (trigger_(trainer)) {
    report(summary_.compute_mean());
    summary_ = DictSummary();
  }
}

}  // namespace chainer::training::extensions
