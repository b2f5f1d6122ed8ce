#include "datasets/preprocessed_image_dataset.h"

#include <filesystem>

#include "core/util/philox.h"
#include "datasets/dataset_description.h"
#include "datasets/image_dataset.h"

namespace chainer::datasets {

namespace {
// A uniform integer in [0, n) from 32 random bits (multiply-shift: floor(u * n), u in [0, 1)).
int64_t below(uint32_t bits, int64_t n) { return int64_t((uint64_t(bits) * uint64_t(n)) >> 32); }

// The file example I of BASE is read from, " ('root/path')", when BASE is a dataset of image
// files; else empty. Errors about an image's shape name it, so the file can be found and fixed.
std::string source_of(const Dataset& base, size_t i) {
  if (const auto* labeled = dynamic_cast<const LabeledImageDataset*>(&base))
    return str(" ('", (std::filesystem::path(labeled->root()) / labeled->pairs()[i].first).string(), "')");
  if (const auto* images = dynamic_cast<const ImageDataset*>(&base))
    return str(" ('", (std::filesystem::path(images->root()) / images->paths()[i]).string(), "')");
  return "";
}

// What C channels are, as PIL's modes: 1 gray, 2 gray + alpha, 3 RGB, 4 RGBA.
const char* channels_name(int64_t c) {
  switch (c) {
    case 1: return "gray";
    case 2: return "gray + alpha";
    case 3: return "RGB";
    case 4: return "RGBA";
  }
  return "not an image's";
}
}  // namespace

Tensor crop_subtract_mean(const Tensor& image, const Tensor& mean, int64_t crop_size, const CropWindow& window) {
  if (image.ndim() != 3 || mean.shape() != image.shape())
    throw Error(str("crop_subtract_mean: the image has shape ", shape_str(image.shape()), " and the mean ",
                    shape_str(mean.shape()), "; expected both (C, H, W) and equal"));
  const int64_t C = image.shape()[0], H = image.shape()[1], W = image.shape()[2];
  if (crop_size < 1 || window.top < 0 || window.left < 0 || window.top + crop_size > H || window.left + crop_size > W)
    throw Error(str("crop_subtract_mean: a crop of ", crop_size, " at (top ", window.top, ", left ", window.left,
                    ") does not fit in an image of ", H, " x ", W));
  const Tensor x =
      image.dtype() == DType::Float32 ? image.to(Device{}).contiguous() : image.to(Device{}).astype(DType::Float32);
  const Tensor m =
      mean.dtype() == DType::Float32 ? mean.to(Device{}).contiguous() : mean.to(Device{}).astype(DType::Float32);
  Tensor out = Tensor::empty({C, crop_size, crop_size}, DType::Float32);
  const float *xp = x.data<float>(), *mp = m.data<float>();
  float* o = out.data<float>();
  const float scale = 1.0f / 255.0f;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t y = 0; y < crop_size; ++y) {
      const float* xrow = xp + (c * H + window.top + y) * W;
      const float* mrow = mp + (c * H + window.top + y) * W + window.left;
      float* orow = o + (c * crop_size + y) * crop_size;
      for (int64_t j = 0; j < crop_size; ++j) {
        const int64_t col = window.flip ? W - 1 - (window.left + j) : window.left + j;
        orow[j] = (xrow[col] - mrow[j]) * scale;
      }
    }
  return out;
}

PreprocessedImageDataset::PreprocessedImageDataset(DatasetPtr base, Tensor mean, int64_t crop_size, bool random,
                                                   uint64_t seed, std::vector<int64_t> keys)
    : base_(std::move(base)), crop_size_(crop_size), random_(random), seed_(seed), keys_(std::move(keys)) {
  if (!base_) throw Error("PreprocessedImageDataset: the dataset is null");
  if (!keys_.empty() && keys_.size() != base_->size())
    throw Error(str("PreprocessedImageDataset: ", keys_.size(), " keys for ", base_->size(),
                    " examples; expected one key per example, or none"));
  if (!mean.defined() || mean.ndim() != 3)
    throw Error(str("PreprocessedImageDataset: the mean image must be (C, H, W), not ",
                    mean.defined() ? shape_str(mean.shape()) : std::string("undefined")));
  if (crop_size < 1) throw Error(str("PreprocessedImageDataset: crop_size must be positive, not ", crop_size));
  mean_ = mean.to(Device{}).astype(DType::Float32);
  draws_ = std::make_unique<std::atomic<uint64_t>[]>(base_->size());
}

CropWindow PreprocessedImageDataset::window(size_t i, uint64_t draw, int64_t h, int64_t w) const {
  if (!random_) return {(h - crop_size_) / 2, (w - crop_size_) / 2, false};
  if (h - crop_size_ < 1 || w - crop_size_ < 1)
    throw Error(str("PreprocessedImageDataset: example ", i, " is ", h, " x ", w, ", but a random crop of ",
                    crop_size_, " needs at least ", crop_size_ + 1, " x ", crop_size_ + 1,
                    " (the example's randint(0, size - crop_size - 1))"));
  const uint64_t key = keys_.empty() ? uint64_t(i) : uint64_t(keys_[i]);
  const philox::Block bits = philox::block(seed_, key << 32 | (draw & 0xffffffffu));
  return {below(bits.v[0], h - crop_size_), below(bits.v[1], w - crop_size_), (bits.v[2] & 1u) != 0};
}

Example PreprocessedImageDataset::example_at(size_t i, uint64_t draw) const {
  check_index(i);
  Example example = base_->get_example(i);
  if (example.empty() || example[0].ndim() != 3)
    throw Error(str("PreprocessedImageDataset: example ", i, " has no (C, H, W) image as its first field"));
  const Tensor& image = example[0];
  if (image.shape() != mean_.shape()) {
    const std::string where = str("PreprocessedImageDataset: example ", i, source_of(*base_, i), ": ");
    const std::string shapes =
        str("the image has shape ", shape_str(image.shape()), " and the mean ", shape_str(mean_.shape()), "; ");
    if (image.shape()[0] != mean_.shape()[0])
      throw Error(str(where, shapes, "the image has ", image.shape()[0], " channel", image.shape()[0] == 1 ? "" : "s",
                      " (", channels_name(image.shape()[0]), ") but every image must have the mean's ",
                      mean_.shape()[0], " (", channels_name(mean_.shape()[0]), "): convert it"));
    throw Error(str(where, shapes, "every image must be ", mean_.shape()[1], " x ", mean_.shape()[2],
                    ", the mean image's size"));
  }
  example[0] = crop_subtract_mean(image, mean_, crop_size_, window(i, draw, image.shape()[1], image.shape()[2]));
  return example;
}

Example PreprocessedImageDataset::get_example(size_t i) const {
  check_index(i);
  return example_at(i, draws_[i].fetch_add(1, std::memory_order_relaxed));
}

std::optional<std::string> PreprocessedImageDataset::describe(const std::vector<size_t>& indices) const {
  std::optional<std::string> base = base_->describe(indices);  // checks the indices
  if (!base) return std::nullopt;
  ByteWriter w = start_description("PreprocessedImageDataset");
  w.write_tensor(mean_);
  const uint8_t random = random_ ? 1 : 0;
  w.write_raw(&crop_size_, sizeof crop_size_);
  w.write_raw(&random, 1);
  w.write_raw(&seed_, sizeof seed_);
  w.write_size(indices.size());
  for (size_t i : indices) {
    const int64_t key = keys_.empty() ? int64_t(i) : keys_[i];
    w.write_raw(&key, sizeof key);
  }
  w.write_string(*base);
  return w.take();
}

DatasetPtr PreprocessedImageDataset::from_description(ByteReader& r) {
  Tensor mean = r.read_tensor();
  int64_t crop_size = 0;
  uint8_t random = 0;
  uint64_t seed = 0;
  r.read_raw(&crop_size, sizeof crop_size);
  r.read_raw(&random, 1);
  r.read_raw(&seed, sizeof seed);
  std::vector<int64_t> keys(size_t(r.read_size(sizeof(int64_t))));
  r.read_raw(keys.data(), keys.size() * sizeof(int64_t));
  DatasetPtr base = build_dataset(r.read_string());
  return std::make_shared<PreprocessedImageDataset>(std::move(base), std::move(mean), crop_size, random != 0, seed,
                                                    std::move(keys));
}

}  // namespace chainer::datasets
