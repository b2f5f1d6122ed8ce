/// @file
/// ParameterStatistics, as chainer.training.extensions.ParameterStatistics: at each call,
/// computes statistics of the parameters of some links (their values, their gradients, or both)
/// and, when its own trigger fires (each epoch by default), reports the mean of each statistic
/// over the calls since the last report. Keys are Chainer's:
/// `{prefix/}{link name}{parameter name}/{data|grad}/{statistic}`, e.g.
/// "main/predictor/l1/W/data/mean", with "/0", "/1", ... appended for a statistic of several
/// values (the 7 percentiles). The default statistics are Chainer's: mean, std (of the
/// population), min, max, zeros (how many elements are 0) and percentile (at 0.13, 2.28, 15.87,
/// 50, 84.13, 97.72 and 99.87, interpolated linearly as numpy.percentile).
///
/// Our links have no name of their own: each comes with the name Chainer's `link.name` would
/// hold, and a link given alone is named "None", as Chainer names a link that is no child. A
/// gradient not computed yet (before the first backward) is not reported, where Chainer's
/// would fail. Runs every iteration, at PRIORITY_WRITER, so LogReport logs what it reports.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/link.h"
#include "nn/reporter.h"
#include "training/extension.h"

namespace chainer::training::extensions {

/// Reports statistics of links' parameters and gradients, as Chainer's `extensions.ParameterStatistics`.
class ParameterStatistics : public Extension {
 public:
  /// A statistic: one or several numbers from the values of one array, flattened.
  using Statistic = std::function<std::vector<double>(const std::vector<double>& values)>;
  /// Chainer's default statistics: mean, std, min, max, zeros and percentile (7 values).
  static std::map<std::string, Statistic> default_statistics();

  /// Statistics of the parameters of LINKS, each with its name (Chainer's `link.name`): STATISTICS
  /// by name; the parameters' values (REPORT_PARAMS, "data") and gradients (REPORT_GRADS, "grad");
  /// keys under PREFIX ("" for none); the means reported when TRIGGER fires. SKIP_NAN_PARAMS: an
  /// array holding a NaN reports NaN for every statistic instead of computing them.
  ParameterStatistics(std::vector<std::pair<std::string, std::shared_ptr<Link>>> links,
                      std::map<std::string, Statistic> statistics = default_statistics(), bool report_params = true,
                      bool report_grads = true, std::string prefix = "", Trigger trigger = {1, Unit::Epoch},
                      bool skip_nan_params = false);
  /// As above for one link, named "None" as Chainer names a link that is no child.
  explicit ParameterStatistics(std::shared_ptr<Link> link,
                               std::map<std::string, Statistic> statistics = default_statistics(),
                               bool report_params = true, bool report_grads = true, std::string prefix = "",
                               Trigger trigger = {1, Unit::Epoch}, bool skip_nan_params = false);

  /// Adds this call's statistics to the running means; reports and restarts them when the trigger fires.
  void operator()(Trainer& trainer) override;
  std::string default_name() const override { return "parameter_statistics"; }
  int priority() const override { return PRIORITY_WRITER; }
  /// Adds (or replaces) statistic NAME, as Chainer's `register_statistics`.
  void register_statistics(const std::string& name, Statistic function) { statistics_[name] = std::move(function); }

 private:
  std::vector<std::pair<std::string, std::shared_ptr<Link>>> links_;
  std::map<std::string, Statistic> statistics_;
  std::vector<std::string> attrs_;
  std::string prefix_;
  Trigger trigger_;
  bool skip_nan_params_;
  DictSummary summary_;
};

}  // namespace chainer::training::extensions
