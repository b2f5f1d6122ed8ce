#include "training/extensions/dump_graph.h"

#include <filesystem>
#include <fstream>

#include "autograd/computational_graph.h"
#include "training/trainer.h"

namespace chainer::training::extensions {

DumpGraph::DumpGraph(std::string root_name, std::string out_name)
    : root_name_(std::move(root_name)), out_name_(std::move(out_name)) {}

void DumpGraph::initialize(Trainer& trainer) {
  if (hooked_) return;
  hooked_ = true;
  const std::string path = (std::filesystem::path(trainer.out()) / out_name_).string();
  trainer.reporter().add_variable_hook([this, path](const std::string& key, const Variable& v) {
    if (written_ || key != root_name_) return;
    std::ofstream f(path);
    f << build_computational_graph_dot({v});
    if (!f.flush()) throw Error(str("dump_graph: cannot write '", path, "'"));
    written_ = true;
  });
}

std::shared_ptr<DumpGraph> dump_graph(std::string root_name, std::string out_name) {
  return std::make_shared<DumpGraph>(std::move(root_name), std::move(out_name));
}

}  // namespace chainer::training::extensions
