// dump_graph, as Chainer's: writes the computational graph behind the reported variable
// ROOT_NAME ("main/loss") as Graphviz DOT to <out>/<out_name>, once, the first time it is
// reported (while its graph still exists, before backward frees it).
#pragma once
#include "training/extension.h"

namespace chainer::training::extensions {

class DumpGraph : public Extension {
 public:
  explicit DumpGraph(std::string root_name = "main/loss", std::string out_name = "cg.dot");
  void initialize(Trainer& trainer) override;
  void operator()(Trainer&) override {}
  std::string default_name() const override { return "dump_graph"; }
  bool written() const { return written_; }

 private:
  std::string root_name_, out_name_;
  bool written_ = false;
  bool hooked_ = false;
};

std::shared_ptr<DumpGraph> dump_graph(std::string root_name = "main/loss", std::string out_name = "cg.dot");

}  // namespace chainer::training::extensions
