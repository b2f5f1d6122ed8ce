// Writes Fashion-MNIST as the ImageNet example's input, since no ImageNet is at hand: one PNG per
// image under OUT/train and OUT/val, and the list files OUT/train.txt and OUT/val.txt ("path
// label" per line, paths relative to OUT) that train_imagenet and compute_mean read.
//   export_images --out DIR [--data DIR] [--scale K] [--size S] [--channels 3] [--train-size N] [--test-size N]
// Each 28x28 image is enlarged K times (nearest neighbour), centred on an S x S black canvas, and
// its gray written as that many channels (the example's models take three): the example crops
// insize x insize from each image at random, so S is insize plus the room the crops move in.
#include <chainer.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "app_common.h"

namespace fs = std::filesystem;

namespace {

const char* usage =
    "usage: export_images --out DIR [options]\n"
    "Writes Fashion-MNIST as PNG files and the list files train.txt and val.txt under DIR.\n"
    "  -o, --out DIR       where the images and lists go (created)\n"
    "      --data DIR      Fashion-MNIST directory (default: get_fashion_mnist's lookup)\n"
    "      --scale K       enlarge each image K times, nearest neighbour (default 1)\n"
    "      --size S        centre it on an S x S black canvas (default 28 K)\n"
    "      --channels C    1 (gray) or 3 (gray in each of R, G, B; default 3)\n"
    "      --train-size N  the first N training images only (default all)\n"
    "      --test-size N   the first N test images only (default all)\n";

struct Options {
  std::string out, data;
  int64_t scale = 1, size = 0, channels = 3, train_size = 0, test_size = 0;
};

// Image I of IMAGES (N, 1, 28, 28), pixel values 0..255, as a uint8 (C, S, S) canvas.
chainer::Tensor canvas(const chainer::Tensor& images, int64_t i, const Options& o) {
  const int64_t side = 28 * o.scale, offset = (o.size - side) / 2;
  chainer::Tensor out = chainer::Tensor::zeros({o.channels, o.size, o.size}, chainer::DType::UInt8);
  const float* src = images.data<float>() + i * 28 * 28;
  uint8_t* dst = out.data<uint8_t>();
  for (int64_t c = 0; c < o.channels; ++c)
    for (int64_t y = 0; y < side; ++y)
      for (int64_t x = 0; x < side; ++x)
        dst[(c * o.size + offset + y) * o.size + offset + x] = uint8_t(src[(y / o.scale) * 28 + x / o.scale] + 0.5f);
  return out;
}

// The first COUNT (all if 0) images of SPLIT under OUT/NAME, and OUT/NAME.txt listing them.
void export_split(const chainer::datasets::DatasetPtr& split, const std::string& name, int64_t count,
                  const Options& o) {
  const auto* tuple = dynamic_cast<const chainer::datasets::TupleDataset*>(split.get());
  CHAINER_ASSERT(tuple, "export_images: get_fashion_mnist returned no TupleDataset");
  const chainer::Tensor& images = tuple->fields()[0];
  const chainer::Tensor& labels = tuple->fields()[1];
  const int64_t n = count > 0 ? std::min<int64_t>(count, images.size(0)) : images.size(0);
  fs::create_directories(fs::path(o.out) / name);
  auto file = [&](int64_t i) {
    char digits[32];
    std::snprintf(digits, sizeof digits, "%05lld.png", static_cast<long long>(i));
    return name + "/" + digits;
  };
  chainer::parallel_for(n, 64, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      chainer::datasets::write_png((fs::path(o.out) / file(i)).string(), canvas(images, i, o));
  });
  std::ofstream list(fs::path(o.out) / (name + ".txt"));
  const int32_t* label = labels.data<int32_t>();
  for (int64_t i = 0; i < n; ++i) list << file(i) << ' ' << label[i] << '\n';
  if (!list) throw chainer::Error("export_images: could not write " + (fs::path(o.out) / (name + ".txt")).string());
  std::cout << n << " images in " << (fs::path(o.out) / name).string() << ", listed in " << name << ".txt\n";
}

int run(int argc, char** argv) {
  Options o;
  for (apps::Args args(argc, argv, usage); args.next();) {
    if (args.is("-o", "--out")) o.out = args.value();
    else if (args.is(nullptr, "--data")) o.data = args.value();
    else if (args.is(nullptr, "--scale")) o.scale = args.integer(1, 64);
    else if (args.is(nullptr, "--size")) o.size = args.integer(1, 4096);
    else if (args.is(nullptr, "--channels")) o.channels = args.integer(1, 3);
    else if (args.is(nullptr, "--train-size")) o.train_size = args.integer(1);
    else if (args.is(nullptr, "--test-size")) o.test_size = args.integer(1);
    else args.unknown();
  }
  if (o.out.empty()) throw chainer::Error(std::string("export_images: --out DIR is required\n") + usage);
  if (o.channels == 2) throw chainer::Error("export_images: --channels must be 1 or 3, got 2");
  if (o.size == 0) o.size = 28 * o.scale;
  if (o.size < 28 * o.scale)
    throw chainer::Error(chainer::str("export_images: --size ", o.size, " is smaller than the enlarged image (28 x ",
                                      o.scale, " = ", 28 * o.scale, ")"));
  apps::set_stage("reading Fashion-MNIST");
  auto [train, test] = o.data.empty() ? chainer::datasets::get_fashion_mnist(true, 3, 255.0)
                                      : chainer::datasets::get_fashion_mnist(o.data, true, 3, 255.0);
  apps::set_stage(chainer::str("writing the images under '", o.out, "'"));
  export_split(train, "train", o.train_size, o);
  export_split(test, "val", o.test_size, o);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return apps::app_main("export_images", argc, argv, run); }
