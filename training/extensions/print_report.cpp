#include "training/extensions/print_report.h"

#include <algorithm>
#include <cstdio>

#include "training/extensions/log_report.h"
#include "training/trainer.h"

namespace chainer::training::extensions {

PrintReport::PrintReport(std::vector<std::string> entries, std::string log_report, std::ostream& out)
    : entries_(std::move(entries)), log_report_(std::move(log_report)), out_(out) {}

void PrintReport::operator()(Trainer& trainer) {
  auto* log_report = dynamic_cast<LogReport*>(&trainer.get_extension(log_report_));
  if (!log_report) throw Error(str("PrintReport: extension '", log_report_, "' is not a LogReport"));
  const auto& log = log_report->log();
  auto width = [](const std::string& e) { return std::max<size_t>(e.size(), 10) + 2; };
  if (printed_ == 0 && !log.empty()) {
    std::string header;
    for (const auto& e : entries_) header += e + std::string(width(e) - e.size(), ' ');
    out_ << header << "\n";
  }
  for (; printed_ < int64_t(log.size()); ++printed_) {
    const Observation& entry = log[size_t(printed_)];
    std::string row;
    for (const auto& e : entries_) {
      std::string cell;
      if (auto it = entry.find(e); it != entry.end()) {
        char buf[64];
        if (e == "epoch" || e == "iteration") std::snprintf(buf, sizeof buf, "%lld", (long long)it->second);
        else std::snprintf(buf, sizeof buf, "%g", it->second);
        cell = buf;
      }
      row += cell + std::string(width(e) - std::min(cell.size(), width(e) - 1), ' ');
    }
    out_ << row << "\n";
  }
  out_.flush();
}

void PrintReport::serialize(Serializer& s) { s.value("_printed", printed_); }

}  // namespace chainer::training::extensions
