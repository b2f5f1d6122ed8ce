#include "datasets/fashion_mnist.h"

#include <array>
#include <fstream>

#include "datasets/mnist_format.h"

namespace chainer::datasets {

namespace fs = std::filesystem;

namespace {

// Read at run time, not when the library is built: a package installed after the build is
// found, and no path of the build machine is baked in. The list is read rather than asking
// dpkg-query, which would fork a process inside the caller's (an MPI rank's fork is unsafe).
constexpr const char* kPackageFileList = "/var/lib/dpkg/info/dataset-fashion-mnist.list";

const detail::MnistFormat& fashion_mnist_format() {
  static const detail::MnistFormat format{
      "Fashion-MNIST", "get_fashion_mnist",
      str("put ", fashion_mnist_files_help(), " there, or give get_fashion_mnist the directory that holds them")};
  return format;
}

}  // namespace

const char* fashion_mnist_files_help() {
  return "the four IDX files (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz, "
         "t10k-labels-idx1-ubyte.gz; http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/, or Debian's "
         "package dataset-fashion-mnist)";
}

const dataset::DatasetSource& fashion_mnist_source() {
  // The sums and sizes of the files Zalando serves, as TensorFlow Datasets records them (its
  // url_checksums); not those of Debian's package, whose files are compressed anew.
  static const dataset::DatasetSource source{
      "Fashion-MNIST",
      "pfnet/chainer/fashion-mnist",
      {"http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"},
      {{detail::kMnistFileNames[0], "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84", 26421880},
       {detail::kMnistFileNames[1], "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845", 29515},
       {detail::kMnistFileNames[2], "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073", 4422102},
       {detail::kMnistFileNames[3], "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5", 5148}}};
  return source;
}

fs::path fashion_mnist_package_directory() {
  std::ifstream list(kPackageFileList);
  const std::string wanted = std::string("/") + detail::kMnistFileNames[0];
  for (std::string line; std::getline(list, line);) {
    if (!line.ends_with(wanted)) continue;
    const fs::path dir = fs::path(line).parent_path();
    std::error_code ec;
    for (const char* name : detail::kMnistFileNames)
      if (!fs::is_regular_file(dir / name, ec)) return {};
    return dir;
  }
  return {};
}

TupleDatasetPair get_fashion_mnist(const fs::path& dir, bool withlabel, int ndim, double scale) {
  return detail::load_mnist_format(dir, fashion_mnist_format(), withlabel, ndim, scale);
}

TupleDatasetPair get_fashion_mnist(bool withlabel, int ndim, double scale) {
  detail::check_ndim(fashion_mnist_format(), ndim);  // before any download
  fs::path dir = fashion_mnist_package_directory();
  if (dir.empty()) dir = dataset::download_dataset(fashion_mnist_source());
  return detail::load_mnist_format(dir, fashion_mnist_format(), withlabel, ndim, scale);
}

std::vector<std::string> get_fashion_mnist_labels(const std::vector<int>& labels) {
  static const std::array<const char*, 10> names{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                 "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  std::vector<std::string> out;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < 0 || labels[i] > 9)
      throw Error(str("get_fashion_mnist_labels: labels[", i, "] is ", labels[i], ", but labels are classes 0-9"));
    out.push_back(names[size_t(labels[i])]);
  }
  return out;
}

}  // namespace chainer::datasets
