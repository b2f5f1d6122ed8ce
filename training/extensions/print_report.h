// PrintReport, as Chainer's: prints the entries of LogReport's log as aligned columns
// (a header first), one row per log entry.
#pragma once
#include <iostream>
#include <vector>

#include "training/extension.h"

namespace chainer::training::extensions {

class PrintReport : public Extension {
 public:
  explicit PrintReport(std::vector<std::string> entries, std::string log_report = "LogReport",
                       std::ostream& out = std::cout);
  void operator()(Trainer& trainer) override;
  std::string default_name() const override { return "PrintReport"; }
  void serialize(Serializer& s) override;

 private:
  std::vector<std::string> entries_;
  std::string log_report_;
  std::ostream& out_;
  int64_t printed_ = 0;
};

}  // namespace chainer::training::extensions
