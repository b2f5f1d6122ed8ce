// LogReport, as Chainer's: averages the observations of every iteration, and at each firing of
// its trigger appends {means, epoch, iteration, elapsed_time} to the log and rewrites
// <out>/<log_name> as JSON (the `result/log` file of the tutorial).
#pragma once
#include <vector>

#include "nn/reporter.h"
#include "training/extension.h"

namespace chainer::training::extensions {

class LogReport : public Extension {
 public:
  explicit LogReport(std::vector<std::string> keys = {}, IntervalTrigger trigger = IntervalTrigger(1, Unit::Epoch),
                     std::string log_name = "log");
  void operator()(Trainer& trainer) override;
  std::string default_name() const override { return "LogReport"; }
  void serialize(Serializer& s) override;

  const std::vector<Observation>& log() const { return log_; }
  static std::string to_json(const std::vector<Observation>& log);
  static std::vector<Observation> from_json(const std::string& text);

 private:
  std::vector<std::string> keys_;
  IntervalTrigger trigger_;
  std::string log_name_;
  DictSummary summary_;
  std::vector<Observation> log_;
};

}  // namespace chainer::training::extensions
