// Images per second of the ImageNet example's input pipeline on this machine: PNG/JPEG decoding
// (LabeledImageDataset) plus its augmentation (PreprocessedImageDataset: random crop, flip, mean
// subtraction, scaling), batched by MultiprocessIterator with 1, 2, ... worker threads while the
// calling thread only takes the batches, and the same on the calling thread alone (no workers)
// for reference.
//   build/apps/export_images --out /tmp/fpng --size 48 --train-size 6000
//   build/apps/compute_mean /tmp/fpng/train.txt --root /tmp/fpng --output /tmp/fpng/mean.npy
//   build/bench/bench_loader /tmp/fpng/train.txt --root /tmp/fpng --mean /tmp/fpng/mean.npy --crop 40
//                            [--batch 32] [--seconds 2] [--workers 1,2]
#include <chainer.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/util/parse.h"
#include "report_errors.h"

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

int run(int argc, char** argv) {
  std::string list, root = ".", mean_path;
  int64_t crop = 0, batch = 32;
  double seconds = 2;
  std::vector<int64_t> workers{1, 2};
  bool allow_outside_root = false;
  for (int i = 1; i < argc; ++i) {
    const auto value = [&] {
      if (i + 1 >= argc) throw chainer::Error(chainer::str("bench_loader: ", argv[i], " needs a value"));
      return std::string(argv[++i]);
    };
    if (!std::strcmp(argv[i], "--root")) root = value();
    else if (!std::strcmp(argv[i], "--allow-outside-root")) allow_outside_root = true;
    else if (!std::strcmp(argv[i], "--mean")) mean_path = value();
    else if (!std::strcmp(argv[i], "--crop")) crop = chainer::parse_integer(value(), "--crop", 1);
    else if (!std::strcmp(argv[i], "--batch")) batch = chainer::parse_integer(value(), "--batch", 1);
    else if (!std::strcmp(argv[i], "--seconds")) {
      const std::string v = value();
      char* end = nullptr;
      seconds = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0' || !(seconds > 0))
        throw chainer::Error("bench_loader: --seconds expects a positive number of seconds, got '" + v + "'");
    }
    else if (!std::strcmp(argv[i], "--workers")) {
      workers.clear();
      const std::string v = value();
      for (size_t at = 0; at <= v.size();) {
        const size_t comma = std::min(v.find(',', at), v.size());
        workers.push_back(chainer::parse_integer(v.substr(at, comma - at), "--workers", 0, 1024));
        at = comma + 1;
      }
    } else if (argv[i][0] != '-' && list.empty()) list = argv[i];
    else {
      std::fprintf(stderr, "usage: bench_loader LIST --root DIR --mean MEAN.npy --crop C [--batch 32] [--seconds 2] "
                           "[--workers 1,2] [--allow-outside-root]\n");
      return 2;
    }
  }
  if (list.empty() || mean_path.empty() || crop <= 0)
    throw chainer::Error("bench_loader: LIST, --mean and --crop are required");
  auto images = std::make_shared<chainer::datasets::LabeledImageDataset>(list, root, chainer::DType::Float32,
                                                                        chainer::DType::Int32, allow_outside_root);
  auto data = std::make_shared<chainer::datasets::PreprocessedImageDataset>(images, chainer::load_npy(mean_path), crop);
  const chainer::Shape shape = images->get_example(0)[0].shape();
  std::printf("%zu images of %s, crops of %lld, batches of %lld, %d compute threads\n", images->size(),
              chainer::shape_str(shape).c_str(), static_cast<long long>(crop), static_cast<long long>(batch),
              chainer::num_threads());

  // The calling thread alone: decode, then decode + augment.
  for (const bool augment : {false, true}) {
    const chainer::datasets::Dataset& d = augment ? static_cast<const chainer::datasets::Dataset&>(*data) : *images;
    const auto start = clock_type::now();
    size_t n = 0;
    while (seconds_since(start) < seconds) d.get_example(n++ % d.size());
    std::printf("%-34s %8.0f images/s\n", augment ? "decode + augment, this thread" : "decode, this thread",
                double(n) / seconds_since(start));
  }
  // Through the iterator: batches taken as fast as the workers make them.
  for (const int64_t w : workers) {
    chainer::iterators::MultiprocessIterator it(data, batch, true, true, 0, /*n_prefetch=*/4, w);
    it.next_batch();  // the workers started and the first batches under way
    const auto start = clock_type::now();
    int64_t n = 0;
    while (seconds_since(start) < seconds) n += it.next_batch()[0].size(0);
    std::printf("MultiprocessIterator, %lld worker%s %*s %8.0f images/s\n", static_cast<long long>(w), w == 1 ? "" : "s",
                w == 1 ? 4 : 3, "", double(n) / seconds_since(start));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return bench::report_errors([&] { return run(argc, argv); }); }
