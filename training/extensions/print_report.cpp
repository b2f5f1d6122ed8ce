#include "training/extensions/print_report.h"

#include <algorithm>
#include <cstdio>

#include "training/extensions/log_report.h"
#include "training/extensions/terminal.h"
#include "training/trainer.h"

namespace chainer::training::extensions {

PrintReport::PrintReport(std::vector<std::string> entries, std::string log_report, std::ostream& out,
                         std::optional<bool> erase_lines)
    : entries_(std::move(entries)),
      log_report_(std::move(log_report)),
      out_(out),
      erase_lines_(erase_lines.value_or(is_terminal(out))) {}

void PrintReport::operator()(Trainer& trainer) {
  auto* log_report = dynamic_cast<LogReport*>(&trainer.get_extension(log_report_));
  if (!log_report) throw Error(str("PrintReport: extension '", log_report_, "' is not a LogReport"));
  const auto& log = log_report->log();
  auto width = [](const std::string& e) { return std::max<size_t>(e.size(), 10) + 2; };
  // Erase what ProgressBar left below the cursor before each line (its drawing ends with the
  // cursor at its top): a shorter line would leave parts of the bars on screen.
  const char* erase = erase_lines_ ? "\033[J" : "";
  // The header at the first call, as Chainer: in every process, so a resumed run has one too.
  if (!header_printed_) {
    std::string header;
    for (const auto& e : entries_) header += e + std::string(width(e) - e.size(), ' ');
    out_ << erase << header << "\n";
    header_printed_ = true;
  }
  for (; printed_ < int64_t(log.size()); ++printed_) {
    const Observation& entry = log[size_t(printed_)];
    std::string row;
    for (const auto& e : entries_) {
      std::string cell;
      if (auto it = entry.find(e); it != entry.end()) {
        char buf[64];
        if (e == "epoch" || e == "iteration") std::snprintf(buf, sizeof buf, "%lld", (long long)it->second.value());
        else std::snprintf(buf, sizeof buf, "%g", it->second.value());
        cell = buf;
      }
      row += cell + std::string(width(e) - std::min(cell.size(), width(e) - 1), ' ');
    }
    out_ << erase << row << "\n";
  }
  out_.flush();
}

void PrintReport::serialize(Serializer& s) { s.value("_printed", printed_); }

}  // namespace chainer::training::extensions
