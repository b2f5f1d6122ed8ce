/// @file
/// LogReport, as Chainer's: averages the observations of every iteration, and at each firing of
/// its trigger appends {means, epoch, iteration, elapsed_time} to the log and rewrites
/// `<out>/<log_name>` as JSON (the `result/log` file of the tutorial). The file is written
/// whole or not at all: under a temporary name, then renamed; a failure (a full disk) removes
/// the temporary file and throws chainer::Error naming the file and why, and initialize removes
/// the temporary files a killed run left (remove_stale_temporaries).
#pragma once
#include <vector>

#include "nn/reporter.h"
#include "training/extension.h"

namespace chainer::training::extensions {

/// Averages what is reported between its firings and keeps the means as a log, written as JSON.
class LogReport : public Extension {
 public:
  /// Logs KEYS (every reported key when empty) at each firing of TRIGGER to the file LOG_NAME.
  explicit LogReport(std::vector<std::string> keys = {}, Trigger trigger = IntervalTrigger(1, Unit::Epoch),
                     std::string log_name = "log");
  /// Adds this iteration's observation to the means and, when its trigger fires, appends and writes the log.
  void operator()(Trainer& trainer) override;
  std::string default_name() const override { return "LogReport"; }
  void serialize(Serializer& s) override;  ///< Saves or restores the log, its trigger and the means so far.
  /// Removes the temporary files of the log that a killed run left in out(): LOG_NAME.tmp.PID.N
  /// of a process no longer running (remove_stale_temporaries), and LOG_NAME.tmp.
  void initialize(Trainer& trainer) override;

  const std::vector<Observation>& log() const { return log_; }  ///< The entries so far, one per firing.
  static std::string to_json(const std::vector<Observation>& log);  ///< LOG as a JSON list of flat objects.
  static std::vector<Observation> from_json(const std::string& text);  ///< Reads back what to_json writes.

 private:
  // Writes TEXT to PATH through PATH.tmp.PID.N and a rename; on any failure removes that
  // file and throws.
  static void write_atomically(const std::string& path, const std::string& text);
  std::vector<std::string> keys_;
  Trigger trigger_;
  std::string log_name_;
  DictSummary summary_;
  std::vector<Observation> log_;
};

}  // namespace chainer::training::extensions
