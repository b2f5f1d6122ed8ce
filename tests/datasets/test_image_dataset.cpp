// Image files as datasets: decoding PNG and JPEG as PIL + numpy.asarray give them (Chainer's
// _read_image_as_array), writing PNG, the list files of LabeledImageDataset and ImageDataset,
// TransformDataset, the ImageNet example's crop/flip/mean preprocessing, NPY files and
// compute_mean. Every image is written by the test into a temporary directory.
#include <catch2/catch.hpp>
#include <png.h>
#include <stdio.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/io/npz.h"
#include "datasets/dataset_description.h"
#include "datasets/image_dataset.h"
#include "datasets/image_io.h"
#include "datasets/preprocessed_image_dataset.h"
#include "datasets/sub_dataset.h"
#include "datasets/transform_dataset.h"
#include "dataset_files.h"
#include "jpeg_bytes.h"

using namespace chainer;
using namespace chainer::datasets;
using namespace chainer::testing;
using Catch::Contains;

namespace {

// A (C, H, W) uint8 image whose every value differs from its neighbours': value = f(c, y, x).
Tensor pattern(int64_t C, int64_t H, int64_t W) {
  std::vector<uint8_t> v;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t y = 0; y < H; ++y)
      for (int64_t x = 0; x < W; ++x) v.push_back(uint8_t((c * 71 + y * 13 + x * 7) % 256));
  return Tensor::from_vector(v, {C, H, W});
}

// A smooth (C, H, W) image, which JPEG keeps within a few levels.
Tensor gradient(int64_t C, int64_t H, int64_t W) {
  std::vector<uint8_t> v;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t y = 0; y < H; ++y)
      for (int64_t x = 0; x < W; ++x) v.push_back(uint8_t(20 + c * 40 + y * 2 + x * 2));
  return Tensor::from_vector(v, {C, H, W});
}

// A PNG write_png cannot make: BIT_DEPTH and COLOR_TYPE as given, ROWS the raw packed rows.
void write_raw_png(const std::string& path, int width, int height, int bit_depth, int color_type,
                   const std::vector<std::vector<png_byte>>& rows, const std::vector<png_color>& palette = {}) {
  FILE* f = fopen(path.c_str(), "wb");
  REQUIRE(f);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  png_init_io(png, f);
  png_set_IHDR(png, info, width, height, bit_depth, color_type, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  if (!palette.empty()) png_set_PLTE(png, info, palette.data(), int(palette.size()));
  png_write_info(png, info);
  for (const auto& row : rows) png_write_row(png, row.data());
  png_write_end(png, info);
  png_destroy_write_struct(&png, &info);
  fclose(f);
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_bytes(const fs::path& p, const std::string& b) { std::ofstream(p, std::ios::binary) << b; }
void write_text(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }
void write_jpeg(const std::string& path, const Tensor& image, int quality = 100) { write_bytes(path, jpeg_bytes(image, quality)); }

double max_abs_diff(const Tensor& a, const Tensor& b) {
  const auto x = a.to_vector<double>(), y = b.to_vector<double>();
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

}  // namespace

TEST_CASE("read_image: PNGs written by write_png read back exactly, (C, H, W), in the dtype asked", "[image]") {
  TempDir dir;
  for (int64_t C : {1, 2, 3, 4}) {
    const Tensor image = pattern(C, 5, 7);
    const std::string path = (dir.path / ("c" + std::to_string(C) + ".png")).string();
    write_png(path, image);
    const Tensor f = read_image(path);
    CHECK(f.dtype() == DType::Float32);
    CHECK(f.shape() == Shape{C, 5, 7});
    CHECK(f.to_vector<float>() == image.astype(DType::Float32).to_vector<float>());
    const Tensor u = read_image(path, DType::UInt8);
    CHECK(u.dtype() == DType::UInt8);
    CHECK(u.to_vector<uint8_t>() == image.to_vector<uint8_t>());
  }
  // Floating-point input is rounded and clamped to 0..255.
  const std::string path = (dir.path / "float.png").string();
  write_png(path, Tensor::from_vector(std::vector<float>{-3.f, 0.4f, 0.6f, 254.5f, 300.f, 17.f}, {1, 2, 3}));
  CHECK(read_image(path).to_vector<float>() == std::vector<float>{0, 0, 1, 254, 255, 17});
}

TEST_CASE("read_image: palette, 16-bit and low-bit PNGs give what PIL's modes give", "[image]") {
  TempDir dir;
  const std::string p = (dir.path / "x.png").string();
  SECTION("palette: the indices, one channel (PIL mode P)") {
    write_raw_png(p, 3, 2, 8, PNG_COLOR_TYPE_PALETTE, {{0, 1, 2}, {2, 1, 0}},
                  {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}});
    const Tensor t = read_image(p);
    CHECK(t.shape() == Shape{1, 2, 3});
    CHECK(t.to_vector<float>() == std::vector<float>{0, 1, 2, 2, 1, 0});
  }
  SECTION("4-bit palette: indices unpacked") {
    write_raw_png(p, 3, 1, 4, PNG_COLOR_TYPE_PALETTE, {{0x1f, 0x20}},
                  std::vector<png_color>(16, png_color{1, 2, 3}));
    CHECK(read_image(p).to_vector<float>() == std::vector<float>{1, 15, 2});
  }
  SECTION("16-bit gray: the full value (PIL mode I;16)") {
    write_raw_png(p, 2, 1, 16, PNG_COLOR_TYPE_GRAY, {{0x12, 0x34, 0xff, 0xfe}});
    const Tensor t = read_image(p);
    CHECK(t.shape() == Shape{1, 1, 2});
    CHECK(t.to_vector<float>() == std::vector<float>{0x1234, 0xfffe});
  }
  SECTION("16-bit RGB: the high byte of each sample (PIL mode RGB)") {
    write_raw_png(p, 1, 1, 16, PNG_COLOR_TYPE_RGB, {{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc}});
    const Tensor t = read_image(p);
    CHECK(t.shape() == Shape{3, 1, 1});
    CHECK(t.to_vector<float>() == std::vector<float>{0x12, 0x56, 0x9a});
  }
  SECTION("16-bit RGBA: four channels, high bytes") {
    write_raw_png(p, 1, 1, 16, PNG_COLOR_TYPE_RGB_ALPHA, {{1, 0, 2, 0, 3, 0, 4, 0}});
    CHECK(read_image(p).to_vector<float>() == std::vector<float>{1, 2, 3, 4});
  }
  SECTION("1-bit gray: 0 and 1 (PIL mode 1)") {
    write_raw_png(p, 4, 1, 1, PNG_COLOR_TYPE_GRAY, {{0xa0}});
    CHECK(read_image(p).to_vector<float>() == std::vector<float>{1, 0, 1, 0});
  }
  SECTION("2- and 4-bit gray: scaled to 0..255 (PIL's L;2 and L;4)") {
    write_raw_png(p, 4, 1, 2, PNG_COLOR_TYPE_GRAY, {{0x1b}});  // 0, 1, 2, 3
    CHECK(read_image(p).to_vector<float>() == std::vector<float>{0, 85, 170, 255});
    write_raw_png(p, 2, 1, 4, PNG_COLOR_TYPE_GRAY, {{0x0f}});
    CHECK(read_image(p).to_vector<float>() == std::vector<float>{0, 255});
  }
}

TEST_CASE("read_image: JPEGs, gray and RGB, within JPEG's loss; the format comes from the bytes", "[image]") {
  TempDir dir;
  for (int64_t C : {1, 3}) {
    const Tensor image = gradient(C, 16, 24);
    const std::string path = (dir.path / ("c" + std::to_string(C) + ".jpg")).string();
    write_jpeg(path, image);
    const Tensor t = read_image(path);
    CHECK(t.shape() == Shape{C, 16, 24});
    CHECK(max_abs_diff(t, image) <= 4);
  }
  // A JPEG named .png and a PNG named .jpg (ImageNet has one of these) read by their contents.
  fs::copy_file(dir.path / "c3.jpg", dir.path / "jpeg.png");
  CHECK(read_image((dir.path / "jpeg.png").string()).shape() == Shape{3, 16, 24});
  write_png((dir.path / "png.jpg").string(), pattern(3, 2, 2));
  CHECK(read_image((dir.path / "png.jpg").string()).to_vector<uint8_t>() == pattern(3, 2, 2).to_vector<uint8_t>());
}

TEST_CASE("read_image and write_png: errors name the file and the problem", "[image]") {
  TempDir dir;
  const std::string missing = (dir.path / "missing.png").string();
  CHECK_THROWS_WITH(read_image(missing), Contains("read_image: cannot open '" + missing + "'") &&
                                             Contains("No such file"));
  const std::string text = (dir.path / "notes.png").string();
  write_text(text, "not an image at all");
  CHECK_THROWS_WITH(read_image(text), Contains("'" + text + "' is neither a PNG nor a JPEG"));
  const std::string empty = (dir.path / "empty.jpg").string();
  write_text(empty, "");
  CHECK_THROWS_WITH(read_image(empty), Contains(empty) && Contains("it is empty"));

  write_png((dir.path / "whole.png").string(), pattern(3, 20, 20));
  const std::string png = read_bytes(dir.path / "whole.png");
  const std::string cut_png = (dir.path / "cut.png").string();
  write_bytes(cut_png, png.substr(0, png.size() / 2));
  CHECK_THROWS_WITH(read_image(cut_png), Contains("'" + cut_png + "' is a corrupt or truncated PNG (libpng: "));
  std::string bad_png = png;
  bad_png[png.size() / 2] ^= 0x55;  // a CRC mismatch
  const std::string flipped = (dir.path / "flipped.png").string();
  write_bytes(flipped, bad_png);
  CHECK_THROWS_WITH(read_image(flipped), Contains("'" + flipped + "' is a corrupt or truncated PNG"));

  write_jpeg((dir.path / "whole.jpg").string(), gradient(3, 32, 32));
  const std::string jpg = read_bytes(dir.path / "whole.jpg");
  const std::string cut_jpg = (dir.path / "cut.jpg").string();
  write_bytes(cut_jpg, jpg.substr(0, jpg.size() / 2));
  CHECK_THROWS_WITH(read_image(cut_jpg), Contains("'" + cut_jpg + "' is a corrupt or truncated JPEG (libjpeg: "));
  const std::string header_only = (dir.path / "header.jpg").string();
  write_bytes(header_only, jpg.substr(0, 40));
  CHECK_THROWS_WITH(read_image(header_only), Contains("'" + header_only + "' is a corrupt or truncated JPEG"));

  const std::string cmyk = (dir.path / "cmyk.jpg").string();
  write_jpeg(cmyk, gradient(4, 8, 8));
  CHECK_THROWS_WITH(read_image(cmyk), Contains("'" + cmyk + "': CMYK JPEGs are not supported"));

  CHECK_THROWS_WITH(write_png((dir.path / "five.png").string(), pattern(5, 2, 2)),
                    Contains("write_png: '") && Contains("shape (5, 2, 2)") && Contains("C = 1 (gray)"));
  CHECK_THROWS_WITH(write_png((dir.path / "no" / "dir.png").string(), pattern(1, 2, 2)),
                    Contains("write_png: cannot create '") && Contains("dir.png"));
}

TEST_CASE("LabeledImageDataset: a list file of \"path label\" lines, images decoded on access", "[image]") {
  TempDir dir;
  fs::create_directories(dir.path / "imgs" / "a");
  write_png((dir.path / "imgs" / "a" / "one.png").string(), pattern(3, 4, 5));
  write_png((dir.path / "imgs" / "two.png").string(), pattern(1, 4, 5));
  write_png((dir.path / "imgs" / "big.png").string(), pattern(3, 6, 5));
  const std::string list = (dir.path / "train.txt").string();
  // Any run of spaces and tabs separates, as Python's str.split().
  write_text(list, "a/one.png 3\n  two.png\t\t-1  \r\nbig.png +7\n");
  const LabeledImageDataset d(list, (dir.path / "imgs").string());
  REQUIRE(d.size() == 3);
  CHECK(d.root() == (dir.path / "imgs").string());
  CHECK(d.pairs() == std::vector<LabeledImageDataset::Pair>{{"a/one.png", 3}, {"two.png", -1}, {"big.png", 7}});
  const Example e = d.get_example(0);
  CHECK(e[0].shape() == Shape{3, 4, 5});
  CHECK(e[0].dtype() == DType::Float32);
  CHECK(e[0].to_vector<float>() == pattern(3, 4, 5).astype(DType::Float32).to_vector<float>());
  CHECK(e[1].shape() == Shape{});
  CHECK(e[1].dtype() == DType::Int32);
  CHECK(e[1].item<int32_t>() == 3);
  CHECK(d.get_example(1)[0].shape() == Shape{1, 4, 5});
  CHECK_THROWS_WITH(d.get_example(3), Contains("index 3 is out of range"));

  // dtypes as asked; the pairs constructor; a batch of images of different shapes names them.
  const LabeledImageDataset u({{"a/one.png", 5}, {"big.png", 6}}, (dir.path / "imgs").string(), DType::UInt8,
                              DType::Int64);
  CHECK(u.get_example(0)[0].dtype() == DType::UInt8);
  CHECK(u.get_example(1)[1].item<int64_t>() == 6);
  CHECK(u.get_batch({0, 0})[0].shape() == Shape{2, 3, 4, 5});
  CHECK_THROWS_WITH(u.get_batch({0, 1}), Contains("concat_examples") && Contains("(3, 6, 5)") && Contains("(3, 4, 5)"));

  // A path that names no image fails when read, naming the full path.
  const LabeledImageDataset gone({{"nothing.png", 0}}, dir.path.string());
  CHECK_THROWS_WITH(gone.get_example(0), Contains((dir.path / "nothing.png").string()));
}

TEST_CASE("LabeledImageDataset: malformed list lines name the file and the line", "[image]") {
  TempDir dir;
  const std::string list = (dir.path / "list.txt").string();
  write_text(list, "a.png 1\n\nb.png 2\n");  // Chainer refuses blank lines too (len(pair) != 2)
  CHECK_THROWS_WITH(LabeledImageDataset(list), Contains("LabeledImageDataset: '" + list + "' line 2: ") &&
                                                   Contains("found 0 fields"));
  write_text(list, "a.png 1\nb.png 2 extra\n");
  CHECK_THROWS_WITH(LabeledImageDataset(list), Contains("'" + list + "' line 2: ") && Contains("found 3 fields") &&
                                                   Contains("'b.png 2 extra'"));
  write_text(list, "a.png\n");
  CHECK_THROWS_WITH(LabeledImageDataset(list), Contains("line 1: ") && Contains("found 1 field in"));
  for (const char* label : {"1.5", "x", "3a", "+-2", "+"}) {
    write_text(list, std::string("a.png 0\nb.png 1\nc.png ") + label + "\n");
    CHECK_THROWS_WITH(LabeledImageDataset(list), Contains("'" + list + "' line 3: the label '" + label +
                                                          "' is not an integer"));
  }
  const std::string missing = (dir.path / "none.txt").string();
  CHECK_THROWS_WITH(LabeledImageDataset(missing), Contains("cannot open the list file '" + missing + "'"));
  CHECK_THROWS_WITH(ImageDataset(missing), Contains("ImageDataset: cannot open the list file '" + missing + "'"));
  write_text(list, "");
  CHECK(LabeledImageDataset(list).size() == 0);
}

TEST_CASE("ImageDataset: one path per line, stripped; example i is {image}", "[image]") {
  TempDir dir;
  write_png((dir.path / "a.png").string(), pattern(3, 2, 3));
  write_jpeg((dir.path / "b.jpg").string(), gradient(1, 8, 8));
  const std::string list = (dir.path / "list.txt").string();
  write_text(list, "  a.png \nb.jpg\n");
  const ImageDataset d(list, dir.path.string());
  CHECK(d.paths() == std::vector<std::string>{"a.png", "b.jpg"});
  REQUIRE(d.size() == 2);
  const Example e = d.get_example(0);
  REQUIRE(e.size() == 1);
  CHECK(e[0].to_vector<float>() == pattern(3, 2, 3).astype(DType::Float32).to_vector<float>());
  CHECK(d.get_example(1)[0].shape() == Shape{1, 8, 8});
  const ImageDataset from_paths(std::vector<std::string>{"a.png"}, dir.path.string(), DType::Float64);
  CHECK(from_paths.get_example(0)[0].dtype() == DType::Float64);
}

TEST_CASE("TransformDataset: example i is transform(base[i])", "[image]") {
  TempDir dir;
  write_png((dir.path / "a.png").string(), pattern(1, 2, 2));
  DatasetPtr images = std::make_shared<LabeledImageDataset>(
      std::vector<LabeledImageDataset::Pair>{{"a.png", 4}, {"a.png", 9}}, dir.path.string());
  TransformDataset t(images, [](const Example& e) {
    return Example{e[1], Tensor::full({}, double(e[0].numel()), DType::Int64)};
  });
  REQUIRE(t.size() == 2);
  const Example e = t.get_example(1);
  CHECK(e[0].item<int32_t>() == 9);
  CHECK(e[1].item<int64_t>() == 4);
  CHECK(t.get_batch({1, 0})[0].to_vector<int32_t>() == std::vector<int32_t>{9, 4});
  CHECK_THROWS_WITH(t.get_example(2), Contains("index 2 is out of range"));
  CHECK_THROWS_WITH(TransformDataset(images, nullptr), Contains("TransformDataset: the transform is empty"));
}

TEST_CASE("crop_subtract_mean: the example's crop, flip, mean and scale, by hand", "[image]") {
  // image[c, y, x] = 100 c + 10 y + x on 1 x 3 x 4... two channels, 3 rows, 4 columns.
  std::vector<float> iv, mv;
  for (int c = 0; c < 2; ++c)
    for (int y = 0; y < 3; ++y)
      for (int x = 0; x < 4; ++x) iv.push_back(float(100 * c + 10 * y + x)), mv.push_back(float(c + y));
  const Tensor image = Tensor::from_vector(iv, {2, 3, 4}), mean = Tensor::from_vector(mv, {2, 3, 4});
  // No flip, rows 1..2, columns 1..2: (image - mean) / 255.
  Tensor out = crop_subtract_mean(image, mean, 2, {1, 1, false});
  CHECK(out.shape() == Shape{2, 2, 2});
  const float s = 1.0f / 255.0f;
  std::vector<float> want = {(11 - 1) * s, (12 - 1) * s, (21 - 2) * s, (22 - 2) * s,
                             (111 - 2) * s, (112 - 2) * s, (121 - 3) * s, (122 - 3) * s};
  CHECK(out.to_vector<float>() == want);
  // Flipped: columns counted in the mirrored image (x' = 3 - x), the mean not mirrored.
  out = crop_subtract_mean(image, mean, 2, {0, 0, true});
  want = {(3 - 0) * s, (2 - 0) * s, (13 - 1) * s, (12 - 1) * s, (103 - 1) * s, (102 - 1) * s, (113 - 2) * s,
          (112 - 2) * s};
  CHECK(out.to_vector<float>() == want);
  CHECK_THROWS_WITH(crop_subtract_mean(image, mean, 3, {1, 0, false}),
                    Contains("a crop of 3 at (top 1, left 0) does not fit in an image of 3 x 4"));
  CHECK_THROWS_WITH(crop_subtract_mean(image, Tensor::zeros({2, 3, 3}), 2, {}),
                    Contains("the image has shape (2, 3, 4) and the mean (2, 3, 3)"));
}

TEST_CASE("PreprocessedImageDataset: center crops, and random crops keyed by (seed, index, draw)", "[image]") {
  TempDir dir;
  std::vector<LabeledImageDataset::Pair> pairs;
  for (int i = 0; i < 6; ++i) {
    const std::string name = "i" + std::to_string(i) + ".png";
    write_png((dir.path / name).string(), pattern(3, 9, 10 + i % 2));
    pairs.emplace_back(name, i);
  }
  auto images = std::make_shared<LabeledImageDataset>(pairs, dir.path.string());
  const Tensor mean9x10 = Tensor::full({3, 9, 10}, 5.0);
  auto even = std::make_shared<LabeledImageDataset>(std::vector<LabeledImageDataset::Pair>{pairs[0], pairs[2]},
                                                    dir.path.string());

  // Center: top (9 - 4) / 2 = 2, left (10 - 4) / 2 = 3.
  const PreprocessedImageDataset center(even, mean9x10, 4, false);
  const Example c = center.get_example(1);
  CHECK(c[1].item<int32_t>() == 2);
  CHECK(c[0].to_vector<float>() == crop_subtract_mean(pattern(3, 9, 10), mean9x10, 4, {2, 3, false}).to_vector<float>());
  CHECK(center.get_example(1)[0].to_vector<float>() == c[0].to_vector<float>());

  // Random: top in [0, 9 - 4 - 1], left in [0, 10 - 4 - 1] (randint's bounds), both flips; each
  // value of the example's crop equals crop_subtract_mean at that window.
  const PreprocessedImageDataset train(even, mean9x10, 4, true, 42);
  std::set<int64_t> tops, lefts;
  std::set<bool> flips;
  for (uint64_t draw = 0; draw < 400; ++draw) {
    const CropWindow w = train.window(0, draw, 9, 10);
    tops.insert(w.top), lefts.insert(w.left), flips.insert(w.flip);
  }
  CHECK(tops == std::set<int64_t>{0, 1, 2, 3, 4});
  CHECK(lefts == std::set<int64_t>{0, 1, 2, 3, 4, 5});
  CHECK(flips.size() == 2);
  const CropWindow w3 = train.window(1, 3, 9, 10);
  CHECK(train.example_at(1, 3)[0].to_vector<float>() ==
        crop_subtract_mean(pattern(3, 9, 10), mean9x10, 4, w3).to_vector<float>());

  // Determinism: the k-th read of example i is example_at(i, k), whatever the order of reads, on
  // any thread; the same seed gives the same crops, another seed others.
  const PreprocessedImageDataset a(even, mean9x10, 4, true, 7), b(even, mean9x10, 4, true, 7),
      other(even, mean9x10, 4, true, 8);
  std::vector<std::vector<float>> a_reads, b_reads(4);
  for (int k = 0; k < 4; ++k) a_reads.push_back(a.get_example(0)[0].to_vector<float>());
  std::thread reader([&] {
    b.get_example(1);  // another example's reads do not move example 0's draws
    for (int k = 0; k < 4; ++k) b_reads[k] = b.get_example(0)[0].to_vector<float>();
  });
  reader.join();
  CHECK(a_reads == b_reads);
  for (int k = 0; k < 4; ++k) CHECK(a.example_at(0, uint64_t(k))[0].to_vector<float>() == a_reads[k]);
  bool differs = false;
  for (uint64_t k = 0; k < 8; ++k) {
    const CropWindow x = a.window(0, k, 9, 10), y = other.window(0, k, 9, 10);
    differs |= x.top != y.top || x.left != y.left || x.flip != y.flip;
  }
  CHECK(differs);

  // Errors: an image too small for randint's range, a mean of another shape.
  const PreprocessedImageDataset tight(even, mean9x10, 9, true);
  CHECK_THROWS_WITH(tight.get_example(0), Contains("example 0 is 9 x 10, but a random crop of 9 needs at least 10 x 10"));
  const PreprocessedImageDataset odd(images, mean9x10, 4, false);
  CHECK_THROWS_WITH(odd.get_example(1), Contains("the image has shape (3, 9, 11) and the mean (3, 9, 10)"));
  CHECK_THROWS_WITH(PreprocessedImageDataset(even, Tensor::zeros({9, 10}), 4),
                    Contains("the mean image must be (C, H, W), not (9, 10)"));
}

TEST_CASE("describe and build_dataset: a share of image files travels as its paths, labels and settings", "[image]") {
  TempDir dir;
  std::vector<LabeledImageDataset::Pair> pairs;
  for (int i = 0; i < 5; ++i) {
    const std::string name = "i" + std::to_string(i) + ".png";
    write_png((dir.path / name).string(), pattern(3, 9, 10 + i));
    pairs.emplace_back(name, 10 * i);
  }
  auto labeled = std::make_shared<LabeledImageDataset>(pairs, dir.path.string(), DType::Float64, DType::Int64);
  const std::vector<size_t> share{3, 1, 1};

  // LabeledImageDataset: the pairs of the share, in its order, and the same root and dtypes.
  auto rebuilt = std::dynamic_pointer_cast<const LabeledImageDataset>(build_dataset(*labeled->describe(share)));
  REQUIRE(rebuilt);
  CHECK(rebuilt->pairs() == std::vector<LabeledImageDataset::Pair>{pairs[3], pairs[1], pairs[1]});
  CHECK(rebuilt->root() == labeled->root());
  CHECK(rebuilt->dtype() == DType::Float64);
  CHECK(rebuilt->label_dtype() == DType::Int64);
  CHECK(rebuilt->get_example(0)[0].to_vector<double>() == labeled->get_example(3)[0].to_vector<double>());
  CHECK(build_dataset(*labeled->describe({}))->size() == 0);
  CHECK_THROWS_WITH(labeled->describe({5}), Contains("index 5 is out of range"));

  // ImageDataset likewise.
  const ImageDataset paths(std::vector<std::string>{"i0.png", "i4.png"}, dir.path.string(), DType::UInt8);
  auto images = std::dynamic_pointer_cast<const ImageDataset>(build_dataset(*paths.describe({1})));
  REQUIRE(images);
  CHECK(images->paths() == std::vector<std::string>{"i4.png"});
  CHECK(images->dtype() == DType::UInt8);
  CHECK(images->get_example(0)[0].shape() == Shape{3, 9, 14});

  // A SubDataset describes the base's examples it views; a PreprocessedImageDataset carries its
  // mean and settings and keys each crop as the whole dataset did, so every read of the share
  // equals the same read of the whole.
  const Tensor mean = Tensor::full({3, 9, 10}, 2.0);
  auto same_size = std::make_shared<LabeledImageDataset>(
      std::vector<LabeledImageDataset::Pair>{{"i0.png", 0}, {"i0.png", 1}, {"i0.png", 2}, {"i0.png", 3}},
      dir.path.string());
  auto whole = std::make_shared<PreprocessedImageDataset>(same_size, mean, 4, true, 11);
  const SubDataset view(whole, 1, 4, std::vector<int64_t>{3, 2, 1, 0});  // examples 2, 1, 0 of WHOLE
  auto share_of_whole = std::dynamic_pointer_cast<const PreprocessedImageDataset>(build_dataset(*view.describe({0, 2})));
  REQUIRE(share_of_whole);
  CHECK(share_of_whole->crop_size() == 4);
  CHECK(share_of_whole->random());
  CHECK(share_of_whole->seed() == 11);
  CHECK(share_of_whole->mean().to_vector<float>() == mean.astype(DType::Float32).to_vector<float>());
  for (uint64_t draw = 0; draw < 6; ++draw) {
    CHECK(share_of_whole->example_at(0, draw)[0].to_vector<float>() == whole->example_at(2, draw)[0].to_vector<float>());
    CHECK(share_of_whole->example_at(1, draw)[0].to_vector<float>() == whole->example_at(0, draw)[0].to_vector<float>());
  }
  CHECK(share_of_whole->get_example(1)[1].item<int32_t>() == 0);
  CHECK_THROWS_WITH(PreprocessedImageDataset(same_size, mean, 4, true, 0, {1, 2}),
                    Contains("2 keys for 4 examples"));

  // Datasets that only their examples describe: tensors in memory, a transform of unknown code.
  const TransformDataset transformed(labeled, [](Example e) { return e; });
  CHECK_FALSE(transformed.describe({0}).has_value());
  CHECK_FALSE(PreprocessedImageDataset(std::make_shared<TransformDataset>(labeled, [](Example e) { return e; }),
                                       mean, 4)
                  .describe({0})
                  .has_value());

  // Errors: an unknown kind, bytes cut short, a kind registered twice.
  ByteWriter unknown = start_description("NoSuchDataset");
  CHECK_THROWS_WITH(build_dataset(unknown.take()), Contains("no builder is registered for datasets of kind 'NoSuchDataset'"));
  const std::string full = *labeled->describe({0, 1});
  CHECK_THROWS_WITH(build_dataset(full.substr(0, full.size() - 3)),
                    Contains("a description of kind 'LabeledImageDataset'") && Contains("needs more"));
  CHECK_THROWS_WITH(build_dataset(full + "x"), Contains("1 bytes its builder did not read"));
  CHECK_THROWS_WITH(register_dataset_kind("LabeledImageDataset", LabeledImageDataset::from_description),
                    Contains("kind 'LabeledImageDataset' is already registered"));
}

TEST_CASE("register_dataset_kind: a dataset of one's own travels by its description too", "[image]") {
  // Example i is {i * step}: described by its indices and step.
  class Multiples : public Dataset {
   public:
    Multiples(std::vector<int64_t> ids, int64_t step) : ids_(std::move(ids)), step_(step) {}
    size_t size() const override { return ids_.size(); }
    Example get_example(size_t i) const override {
      check_index(i);
      return {Tensor::full({}, double(ids_[i] * step_), DType::Int64)};
    }
    std::optional<std::string> describe(const std::vector<size_t>& indices) const override {
      ByteWriter w = start_description("test.Multiples");
      w.write_raw(&step_, sizeof step_);
      w.write_size(indices.size());
      for (size_t i : indices) w.write_raw(&ids_.at(i), sizeof(int64_t));
      return w.take();
    }

   private:
    std::vector<int64_t> ids_;
    int64_t step_;
  };
  register_dataset_kind("test.Multiples", [](ByteReader& r) -> DatasetPtr {
    int64_t step = 0;
    r.read_raw(&step, sizeof step);
    std::vector<int64_t> ids(size_t(r.read_size(sizeof(int64_t))));
    r.read_raw(ids.data(), ids.size() * sizeof(int64_t));
    return std::make_shared<Multiples>(std::move(ids), step);
  });
  const Multiples m({0, 1, 2, 3}, 7);
  const DatasetPtr share = build_dataset(*m.describe({3, 0}));
  CHECK(share->size() == 2);
  CHECK(share->get_example(0)[0].item<int64_t>() == 21);
  CHECK(share->get_example(1)[0].item<int64_t>() == 0);
  CHECK_THROWS_WITH(register_dataset_kind("", [](ByteReader&) { return DatasetPtr(); }), Contains("empty"));
}

TEST_CASE("save_npy and load_npy: numpy.save's format, both ways", "[image][npy]") {
  TempDir dir;
  const std::string path = (dir.path / "a.npy").string();
  const Tensor a = Tensor::from_vector(std::vector<float>{1.5f, -2.f, 3.25f, 4.f, 5.f, 6.f}, {3, 1, 2});
  save_npy(path, a);
  const Tensor back = load_npy(path);
  CHECK(back.shape() == a.shape());
  CHECK(back.dtype() == DType::Float32);
  CHECK(back.to_vector<float>() == a.to_vector<float>());
  // numpy reads what we write, and we read what numpy writes.
  const std::string script = "import numpy as n; a = n.load('" + path + "'); assert a.dtype == n.float32 and a.shape == (3, 1, 2), a; "
                             "assert (a.ravel() == [1.5, -2, 3.25, 4, 5, 6]).all(); "
                             "n.save('" + (dir.path / "b.npy").string() + "', n.arange(6, dtype=n.int64).reshape(2, 3))";
  if (std::system("python3 -c 'import numpy' 2>/dev/null") == 0) {
    REQUIRE(std::system(("python3 -c \"" + script + "\"").c_str()) == 0);
    const Tensor b = load_npy((dir.path / "b.npy").string());
    CHECK(b.shape() == Shape{2, 3});
    CHECK(b.to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 4, 5});
  }
  const std::string missing = (dir.path / "none.npy").string();
  CHECK_THROWS_WITH(load_npy(missing), Contains("load_npy: cannot open '" + missing + "'"));
  write_text(dir.path / "bad.npy", "hello");
  CHECK_THROWS_WITH(load_npy((dir.path / "bad.npy").string()), Contains("is not an NPY array"));
  CHECK_THROWS_WITH(save_npy((dir.path / "no" / "x.npy").string(), a), Contains("save_npy: cannot create"));
}

TEST_CASE("compute_mean: the mean image of a list, as float32 (C, H, W) in a .npy", "[image][app]") {
  const fs::path app = fs::current_path().parent_path() / "apps" / "compute_mean";
  REQUIRE(fs::exists(app));  // meson runs the tests in the build's tests folder
  TempDir dir;
  write_png((dir.path / "a.png").string(), Tensor::from_vector(std::vector<uint8_t>{0, 10, 20, 30, 40, 255}, {3, 1, 2}));
  write_png((dir.path / "b.png").string(), Tensor::from_vector(std::vector<uint8_t>{1, 10, 21, 0, 0, 0}, {3, 1, 2}));
  write_png((dir.path / "c.png").string(), Tensor::from_vector(std::vector<uint8_t>{1, 10, 22, 30, 5, 0}, {3, 1, 2}));
  write_text(dir.path / "train.txt", "a.png 0\nb.png 1\nc.png 0\n");
  const std::string out = (dir.path / "mean.npy").string();
  const std::string cmd = app.string() + " " + (dir.path / "train.txt").string() + " --root " + dir.path.string() +
                          " -o " + out + " >/dev/null 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  const Tensor mean = load_npy(out);
  CHECK(mean.dtype() == DType::Float32);
  CHECK(mean.shape() == Shape{3, 1, 2});
  const std::vector<float> want = {2.f / 3, 10.f, 21.f, 20.f, 15.f, 85.f};
  const std::vector<float> got = mean.to_vector<float>();
  for (size_t i = 0; i < want.size(); ++i) CHECK(got[i] == Approx(want[i]).epsilon(1e-6));
  // A missing list is an error naming it, status 1.
  CHECK(std::system((app.string() + " " + (dir.path / "none.txt").string() + " >/dev/null 2>&1").c_str()) != 0);
}
