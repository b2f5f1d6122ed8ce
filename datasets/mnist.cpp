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

const dataset::DatasetSource& mnist_source() {
  // The sums and sizes of the original files (the same bytes on both mirrors).
  static const dataset::DatasetSource source{
      "MNIST",
      "pfnet/chainer/mnist",
      {"http://yann.lecun.com/exdb/mnist/", "https://ossci-datasets.s3.amazonaws.com/mnist/"},
      {{detail::kMnistFileNames[0], "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609", 9912422},
       {detail::kMnistFileNames[1], "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c", 28881},
       {detail::kMnistFileNames[2], "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6", 1648877},
       {detail::kMnistFileNames[3], "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6", 4542}}};
  return source;
}

TupleDatasetPair get_mnist(const std::filesystem::path& dir, bool withlabel, int ndim, double scale) {
  return detail::load_mnist_format(dir, mnist_format(), withlabel, ndim, scale);
}

TupleDatasetPair get_mnist(bool withlabel, int ndim, double scale) {
  detail::check_ndim(mnist_format(), ndim);  // before any download
  return detail::load_mnist_format(dataset::download_dataset(mnist_source()), mnist_format(), withlabel, ndim, scale);
}

}  // namespace chainer::datasets
