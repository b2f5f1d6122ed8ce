// ChainerMN's examples/imagenet/compute_mean.py: the mean image of a labelled image list,
// float32 (C, H, W), saved with numpy.save's format for train_imagenet's --mean.
//   compute_mean train.txt --root DIR --output mean.npy
// The sum is kept in float64 (the script's is float32): a million images would otherwise lose
// the low bits of every pixel's sum.
#include <chainer.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "app_common.h"

namespace {

const char* usage =
    "usage: compute_mean DATASET [--root DIR] [--allow-outside-root] [--output PATH]\n"
    "  DATASET          the training list: one \"path label\" per line\n"
    "  -R, --root DIR   the directory the list's paths start from (default .)\n"
    "      --allow-outside-root  let the list name files outside --root (absolute paths, or\n"
    "                   paths climbing out with ..); refused by default\n"
    "  -o, --output P   where the mean image goes, as a .npy file (default mean.npy)\n";

int run(int argc, char** argv) {
  std::string list, root = ".", output = "mean.npy";
  bool allow_outside_root = false;
  for (apps::Args args(argc, argv, usage); args.next();) {
    if (args.is("-R", "--root")) root = args.value();
    else if (args.is(nullptr, "--allow-outside-root")) allow_outside_root = true;
    else if (args.is("-o", "--output")) output = args.value();
    else if (!args.option().empty() && args.option()[0] != '-' && list.empty()) list = args.option();
    else args.unknown();
  }
  if (list.empty()) throw chainer::Error(std::string("compute_mean: no DATASET list given\n") + usage);
  apps::set_stage(chainer::str("reading the list '", list, "'"));
  chainer::datasets::LabeledImageDataset dataset(list, root, chainer::DType::Float32, chainer::DType::Int32,
                                                 allow_outside_root);
  const size_t n = dataset.size();
  if (n == 0) throw chainer::Error("compute_mean: the list '" + list + "' names no images");
  std::cout << "compute mean image" << std::endl;
  std::vector<double> sum;
  chainer::Shape shape;
  apps::set_stage(chainer::str("summing the images of '", list, "'"));
  for (size_t i = 0; i < n; ++i) {
    const chainer::Tensor image = dataset.get_example(i)[0];
    if (i == 0) shape = image.shape(), sum.assign(size_t(image.numel()), 0.0);
    if (image.shape() != shape)
      throw chainer::Error(chainer::str("compute_mean: image ", i, " ('", dataset.pairs()[i].first, "') has shape ",
                                        chainer::shape_str(image.shape()), " but the first has ",
                                        chainer::shape_str(shape), "; every image needs the same shape"));
    const float* p = image.data<float>();
    for (size_t k = 0; k < sum.size(); ++k) sum[k] += p[k];
    std::fprintf(stderr, "%zu / %zu\r", i, n);
  }
  std::fprintf(stderr, "\n");
  std::vector<float> mean(sum.size());
  for (size_t k = 0; k < sum.size(); ++k) mean[k] = float(sum[k] / double(n));
  chainer::save_npy(output, chainer::Tensor::from_vector(mean, shape));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return apps::app_main("compute_mean", argc, argv, run); }
