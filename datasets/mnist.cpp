#include "datasets/mnist.h"

#include <string>

#include "datasets/mnist_format.h"

namespace chainer::datasets {

namespace {

// Library code cannot know how its caller is told where the data lie (an app's flag, a config
// file): the message says what the directory must hold and leaves the rest to the caller.
const detail::MnistFormat& mnist_format() {
  static const detail::MnistFormat format{
      "MNIST", "get_mnist", str("put ", mnist_files_help(), " there, or give get_mnist the directory that holds them")};
  return format;
}

}  // namespace

const char* mnist_files_help() {
  return "the four IDX files (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz, "
         "t10k-labels-idx1-ubyte.gz; http://yann.lecun.com/exdb/mnist/ or a mirror such as "
         "https://ossci-datasets.s3.amazonaws.com/mnist/)";
}

TupleDatasetPair get_mnist(const std::filesystem::path& dir, bool withlabel, int ndim, double scale) {
  return detail::load_mnist_format(dir, mnist_format(), withlabel, ndim, scale);
}

}  // namespace chainer::datasets
