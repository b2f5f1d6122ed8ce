/// @file
/// dump_graph, as Chainer's: writes the computational graph behind the reported variable
/// ROOT_NAME ("main/loss") as Graphviz DOT to `<out>/<out_name>`, once, the first time it is
/// reported (while its graph still exists, before backward frees it).
#pragma once
#include "training/extension.h"

namespace chainer::training::extensions {

/// Writes the graph behind one reported variable as Graphviz DOT, the first time it is reported.
class DumpGraph : public Extension {
 public:
  /// Dumps the graph of the variable reported as ROOT_NAME to OUT_NAME in the trainer's output directory.
  explicit DumpGraph(std::string root_name = "main/loss", std::string out_name = "cg.dot");
  void initialize(Trainer& trainer) override;  ///< Hooks the trainer's reporter to catch ROOT_NAME when reported.
  void operator()(Trainer&) override {}  ///< Does nothing: the reporter hook does the work.
  std::string default_name() const override { return "dump_graph"; }
  bool written() const { return written_; }  ///< Whether the graph has been written.

 private:
  std::string root_name_, out_name_;
  bool written_ = false;
  bool hooked_ = false;
};

/// A DumpGraph, as Chainer's `extensions.dump_graph(root_name, out_name)`.
std::shared_ptr<DumpGraph> dump_graph(std::string root_name = "main/loss", std::string out_name = "cg.dot");

}  // namespace chainer::training::extensions
