#include "datasets/mnist_format.h"

#include <string>
#include <vector>

#include "datasets/idx.h"

namespace chainer::datasets::detail {

namespace fs = std::filesystem;

namespace {

std::string quoted(const fs::path& path) { return str("'", path.string(), "'"); }

// DIR/NAME.gz if it exists, else DIR/NAME; the error says where it looked.
fs::path find_file(const fs::path& dir, const std::string& name, const MnistFormat& format) {
  const fs::path gz = dir / (name + ".gz"), plain = dir / name;
  std::error_code ec;
  if (fs::is_regular_file(gz, ec)) return gz;
  if (fs::is_regular_file(plain, ec)) return plain;
  throw Error(str(format.name, " file ", name, " was not found: looked for ", quoted(gz), " and ", quoted(plain), "; ",
                  format.how_to_get));
}

// Images as float32 pixel / 255 * scale (computed as numpy does: float32 pixel * float32 factor).
Tensor to_float(const Tensor& pixels, double scale, const Shape& shape) {
  float table[256];
  const float factor = float(scale / 255.0);
  for (int p = 0; p < 256; ++p) table[p] = float(p) * factor;
  Tensor out = Tensor::empty(shape, DType::Float32);
  const uint8_t* src = pixels.data<uint8_t>();
  float* dst = out.data<float>();
  for (int64_t i = 0, n = pixels.numel(); i < n; ++i) dst[i] = table[src[i]];
  return out;
}

std::shared_ptr<const TupleDataset> load_split(const fs::path& dir, const std::string& prefix,
                                               const MnistFormat& format, bool withlabel, int ndim, double scale) {
  const fs::path image_path = find_file(dir, prefix + "-images-idx3-ubyte", format);
  Tensor pixels = load_idx_images(image_path);
  const int64_t n = pixels.size(0);
  if (pixels.size(1) != 28 || pixels.size(2) != 28)
    throw Error(str(format.name, " file ", quoted(image_path), " holds images of ", pixels.size(1), "x",
                    pixels.size(2), " pixels, expected 28x28"));
  const Shape shape = ndim == 1 ? Shape{n, 784} : ndim == 2 ? Shape{n, 28, 28} : Shape{n, 1, 28, 28};
  std::vector<Tensor> fields{to_float(pixels, scale, shape)};
  if (withlabel) {
    const fs::path label_path = find_file(dir, prefix + "-labels-idx1-ubyte", format);
    Tensor raw = load_idx_labels(label_path);
    if (raw.size(0) != n)
      throw Error(str(format.name, " files do not match: ", quoted(image_path), " holds ", n, " images but ",
                      quoted(label_path), " holds ", raw.size(0), " labels"));
    const uint8_t* src = raw.data<uint8_t>();
    Tensor labels = Tensor::empty({n}, DType::Int32);
    int32_t* dst = labels.data<int32_t>();
    for (int64_t i = 0; i < n; ++i) {
      if (src[i] > 9)
        throw Error(str(format.name, " file ", quoted(label_path), " holds label ", int(src[i]), " at index ", i,
                        ", but labels are classes 0-9"));
      dst[i] = src[i];
    }
    fields.push_back(labels);
  }
  return std::make_shared<const TupleDataset>(std::move(fields));
}

}  // namespace

void check_ndim(const MnistFormat& format, int ndim) {
  if (ndim != 1 && ndim != 2 && ndim != 3)
    throw Error(str(format.function, ": ndim must be 1 (N, 784), 2 (N, 28, 28) or 3 (N, 1, 28, 28), got ", ndim));
}

TupleDatasetPair load_mnist_format(const fs::path& dir, const MnistFormat& format, bool withlabel, int ndim,
                                   double scale) {
  check_ndim(format, ndim);
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error(str(format.name, " directory ", quoted(dir),
                    (fs::exists(dir, ec) ? " is not a directory" : " does not exist"), "; ", format.how_to_get));
  return {load_split(dir, "train", format, withlabel, ndim, scale),
          load_split(dir, "t10k", format, withlabel, ndim, scale)};
}

}  // namespace chainer::datasets::detail
