/// @file
/// PrintReport, as Chainer's: prints the entries of LogReport's log as aligned columns, one row
/// per log entry, with a header line at its first call in every process (after a resume, too).
/// A snapshot records how many entries were printed, so a resumed run prints only the new ones.
#pragma once
#include <iostream>
#include <optional>
#include <vector>

#include "training/extension.h"

namespace chainer::training::extensions {

/// Prints the ENTRIES of a LogReport's log as a table, a row per log entry.
class PrintReport : public Extension {
 public:
  /// Prints the columns ENTRIES of the LogReport registered as LOG_REPORT to OUT.
  /// erase_lines: write `"\033[J"` (erase to the end of the screen) before each line, as Chainer
  /// does, so a row shorter than ProgressBar's drawing leaves none of it on screen. By default
  /// (nullopt) only when `out` is std::cout, std::cerr or std::clog and that stream is a terminal,
  /// so logs redirected to files stay free of escape sequences.
  explicit PrintReport(std::vector<std::string> entries, std::string log_report = "LogReport",
                       std::ostream& out = std::cout, std::optional<bool> erase_lines = std::nullopt);
  void operator()(Trainer& trainer) override;  ///< Prints the header (first call), then the new log entries.
  std::string default_name() const override { return "PrintReport"; }
  void serialize(Serializer& s) override;  ///< Saves or restores how many log entries were printed.
  bool erase_lines() const { return erase_lines_; }  ///< Whether each line starts by erasing to the end of the screen.

 private:
  std::vector<std::string> entries_;
  std::string log_report_;
  std::ostream& out_;
  bool erase_lines_;
  bool header_printed_ = false;  // per process, never serialized
  int64_t printed_ = 0;          // log entries printed so far; serialized
};

}  // namespace chainer::training::extensions
