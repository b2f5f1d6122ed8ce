#include <catch2/catch.hpp>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <mutex>
#include <string>
#include <thread>

#include "core/util/random.h"
#include "core/io/serializer.h"
#include "datasets/concat_examples.h"
#include "datasets/fashion_mnist.h"
#include "datasets/mnist.h"
#include "datasets/iterators/multiprocess_iterator.h"
#include "datasets/iterators/serial_iterator.h"
#include "datasets/sub_dataset.h"
#include "datasets/tuple_dataset.h"
#include "dataset_files.h"

using namespace chainer;
using namespace chainer::datasets;
using namespace chainer::iterators;
using namespace chainer::testing;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {

// N examples {id () int64, features (2,) float32 = {id, -id}}.
std::shared_ptr<const TupleDataset> range_dataset(int64_t n) {
  std::vector<float> features;
  for (int64_t i = 0; i < n; ++i) {
    features.push_back(float(i));
    features.push_back(float(-i));
  }
  return std::make_shared<TupleDataset>(
      std::vector<Tensor>{Tensor::arange(n, DType::Int64), Tensor::from_vector(features, {n, 2})});
}

// The same examples without a get_batch override, so the default (stacking examples) runs.
// get_example throws for index FAIL_AT, to test errors raised inside an iterator.
class PlainDataset : public Dataset {
 public:
  explicit PlainDataset(int64_t n, int64_t fail_at = -1) : base_(range_dataset(n)), fail_at_(fail_at) {}
  size_t size() const override { return base_->size(); }
  Example get_example(size_t i) const override {
    if (int64_t(i) == fail_at_) throw Error(str("boom at ", i));
    return base_->get_example(i);
  }

 private:
  std::shared_ptr<const TupleDataset> base_;
  int64_t fail_at_;
};

std::vector<int64_t> ids(const std::vector<Tensor>& batch) { return batch.at(0).to_vector<int64_t>(); }

std::vector<int64_t> ids(const std::vector<Example>& examples) {
  std::vector<int64_t> out;
  for (const Example& e : examples) out.push_back(e.at(0).item<int64_t>());
  return out;
}

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = i;
  return v;
}

std::vector<int64_t> sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// The real MNIST directory. The suite requires it (a missing directory fails the test rather
// than skipping it, so a green run always means the real files were checked).
const char* mnist_dir() {
  const char* dir = std::getenv("MNIST_DIR");
  if (!dir || !fs::is_directory(dir))
    FAIL("MNIST_DIR " << (dir ? dir : "(unset)") << " is not a directory: the suite needs the real MNIST files "
         "(../shared/datasets/mnist beside the clone, or meson configure build -Dmnist_dir=DIR)");
  return dir;
}

std::vector<int64_t> label_counts(const TupleDataset& d) {
  std::vector<int64_t> counts(10, 0);
  for (int32_t label : d.fields().at(1).to_vector<int32_t>()) ++counts.at(size_t(label));
  return counts;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// TupleDataset, SubDataset, split, concat_examples

TEST_CASE("TupleDataset: row views, batches and errors") {
  auto d = range_dataset(4);
  CHECK(d->size() == 4);
  Example e = d->get_example(2);
  REQUIRE(e.size() == 2);
  CHECK(e[0].item<int64_t>() == 2);
  CHECK(e[1].shape() == Shape{2});
  CHECK(e[1].to_vector<float>() == std::vector<float>{2, -2});
  CHECK(e[1].shares_storage(d->fields()[1]));  // a view, not a copy

  std::vector<Tensor> batch = d->get_batch({3, 0, 3});
  CHECK(batch[0].shape() == Shape{3});
  CHECK(batch[1].shape() == Shape{3, 2});
  CHECK(ids(batch) == std::vector<int64_t>{3, 0, 3});
  CHECK(batch[1].to_vector<float>() == std::vector<float>{3, -3, 0, 0, 3, -3});
  CHECK(d->get_batch({})[1].shape() == Shape{0, 2});

  REQUIRE_THROWS_WITH(d->get_example(4), Contains("index 4 is out of range for a dataset of size 4"));
  REQUIRE_THROWS_WITH(d->get_batch({1, 7}), Contains("index 7 is out of range"));
  REQUIRE_THROWS_WITH(TupleDataset({Tensor::zeros({4}), Tensor::zeros({3, 2})}),
                      Contains("field 0 has length 4 and field 1 has length 3"));
  REQUIRE_THROWS_WITH(TupleDataset({Tensor::scalar(1)}), Contains("scalar"));
  REQUIRE_THROWS_WITH(TupleDataset(std::vector<Tensor>{}), Contains("no fields"));
}

TEST_CASE("TupleDataset: a non-contiguous field is packed, values kept") {
  Tensor t = Tensor::arange(6).reshape({2, 3}).transpose();  // (3, 2): rows {0,3}, {1,4}, {2,5}
  TupleDataset d({t});
  CHECK(d.fields()[0].is_contiguous());
  CHECK(d.get_example(1)[0].to_vector<float>() == std::vector<float>{1, 4});
  CHECK(d.get_batch({2, 0})[0].to_vector<float>() == std::vector<float>{2, 5, 0, 3});
}

TEST_CASE("Dataset: the default get_batch stacks get_example") {
  PlainDataset plain(5);
  auto tuple = range_dataset(5);
  std::vector<Tensor> a = plain.get_batch({4, 1}), b = tuple->get_batch({4, 1});
  CHECK(a[0].to_vector<int64_t>() == b[0].to_vector<int64_t>());
  CHECK(a[1].shape() == b[1].shape());
  CHECK(a[1].to_vector<float>() == b[1].to_vector<float>());
}

TEST_CASE("concat_examples: stacks each field along a new axis 0") {
  std::vector<Example> examples;
  for (int i = 0; i < 3; ++i)
    examples.push_back({Tensor::full({2}, i), Tensor::scalar(10 + i, DType::Int32)});
  std::vector<Tensor> batch = dataset::concat_examples(examples);
  REQUIRE(batch.size() == 2);
  CHECK(batch[0].shape() == Shape{3, 2});
  CHECK(batch[0].to_vector<float>() == std::vector<float>{0, 0, 1, 1, 2, 2});
  CHECK(batch[1].dtype() == DType::Int32);
  CHECK(batch[1].to_vector<int32_t>() == std::vector<int32_t>{10, 11, 12});

  examples[1][0] = Tensor::zeros({3});
  REQUIRE_THROWS_WITH(dataset::concat_examples(examples),
                      Contains("field 0 of example 1 has shape (3,) but example 0 has shape (2,)"));
  examples[1] = {Tensor::zeros({2})};
  REQUIRE_THROWS_WITH(dataset::concat_examples(examples), Contains("example 1 has 1 fields but example 0 has 2"));
  REQUIRE_THROWS_WITH(dataset::concat_examples({}), Contains("empty"));
}

TEST_CASE("SubDataset and split_dataset") {
  auto base = range_dataset(10);
  SubDataset sub(base, 2, 5);
  CHECK(sub.size() == 3);
  CHECK(sub.get_example(0)[0].item<int64_t>() == 2);
  CHECK(ids(sub.get_batch({2, 1})) == std::vector<int64_t>{4, 3});
  REQUIRE_THROWS_WITH(sub.get_example(3), Contains("index 3 is out of range for a dataset of size 3"));

  std::vector<int64_t> order{9, 8, 7, 6, 5, 4, 3, 2, 1, 0};
  SubDataset reversed(base, 1, 4, order);
  CHECK(ids(reversed.get_batch({0, 1, 2})) == std::vector<int64_t>{8, 7, 6});
  CHECK(reversed.get_example(2)[0].item<int64_t>() == 6);

  REQUIRE_THROWS_WITH(SubDataset(base, 5, 11), Contains("[5, 11) does not fit a base dataset of size 10"));
  REQUIRE_THROWS_WITH(SubDataset(base, 0, 3, {0, 1}), Contains("has 2 entries and the base dataset has 10"));

  auto [first, second] = split_dataset(base, 7);
  CHECK(first->size() == 7);
  CHECK(second->size() == 3);
  CHECK(ids(second->get_batch({0, 1, 2})) == std::vector<int64_t>{7, 8, 9});
  REQUIRE_THROWS_WITH(split_dataset(base, 11), Contains("first_size 11 exceeds the dataset size 10"));

  auto [r1, r2] = split_dataset_random(base, 6, 42);
  std::vector<int64_t> all = ids(r1->get_batch({0, 1, 2, 3, 4, 5}));
  for (int64_t i : ids(r2->get_batch({0, 1, 2, 3}))) all.push_back(i);
  CHECK(sorted(all) == iota(10));
  CHECK(all != iota(10));  // shuffled
  auto [again, unused] = split_dataset_random(base, 6, 42);
  CHECK(ids(again->get_batch({0, 1, 2, 3, 4, 5})) == ids(r1->get_batch({0, 1, 2, 3, 4, 5})));
}

// ---------------------------------------------------------------------------------------------
// MNIST

TEST_CASE("MNIST: the real data set") {
  const char* dir = mnist_dir();
  auto [train, test] = get_mnist(dir);
  REQUIRE(train->size() == 60000);
  REQUIRE(test->size() == 10000);
  CHECK(train->fields()[0].shape() == Shape{60000, 784});
  CHECK(train->fields()[0].dtype() == DType::Float32);
  CHECK(train->fields()[1].shape() == Shape{60000});
  CHECK(train->fields()[1].dtype() == DType::Int32);
  CHECK(label_counts(*train) == std::vector<int64_t>{5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949});
  CHECK(label_counts(*test) == std::vector<int64_t>{980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009});
  for (const auto& d : {train, test}) {
    const Tensor& images = d->fields()[0];
    const float* p = images.data<float>();
    auto [lo, hi] = std::minmax_element(p, p + images.numel());
    CHECK(*lo == 0.0f);
    CHECK(*hi == 1.0f);
  }
  Example e = train->get_example(0);
  CHECK(e[0].shape() == Shape{784});
  CHECK(e[1].item<int32_t>() == 5);  // the first training digit is a 5

  auto [train3, test3] = get_mnist(dir, /*withlabel=*/false, /*ndim=*/3);
  REQUIRE(train3->fields().size() == 1);
  CHECK(train3->fields()[0].shape() == Shape{60000, 1, 28, 28});
  CHECK(test3->fields()[0].shape() == Shape{10000, 1, 28, 28});
  CHECK(train3->get_example(123)[0].reshape({784}).to_vector<float>() ==
        train->get_example(123)[0].to_vector<float>());
}

TEST_CASE("MNIST: small files, gzip or not, ndim and scale") {
  TempDir tmp;
  write_small_mnist(tmp.path);
  auto [train, test] = get_mnist(tmp.path, true, 2, 2.0);
  CHECK(train->size() == 3);
  CHECK(test->size() == 2);
  CHECK(train->fields()[0].shape() == Shape{3, 28, 28});
  std::vector<float> first = train->get_example(0)[0].reshape({784}).to_vector<float>();
  CHECK(first[0] == 0.0f);
  CHECK(first[1] == 2.0f);
  CHECK(first[2] == Approx(0.4f));
  CHECK(train->fields()[1].to_vector<int32_t>() == std::vector<int32_t>{0, 1, 2});

  // An uncompressed file is used when FILE.gz is not there.
  fs::remove(tmp.path / "t10k-labels-idx1-ubyte.gz");
  write_file(tmp.path / "t10k-labels-idx1-ubyte", idx_labels(2));
  CHECK(get_mnist(tmp.path).second->size() == 2);
  CHECK(load_idx_labels(tmp.path / "t10k-labels-idx1-ubyte").to_vector<uint8_t>() == std::vector<uint8_t>{0, 1});
  CHECK(load_idx_images(tmp.path / "t10k-images-idx3-ubyte.gz").shape() == Shape{2, 28, 28});

  REQUIRE_THROWS_WITH(get_mnist(tmp.path, true, 4), Contains("ndim must be 1"));
}

TEST_CASE("MNIST: broken files give errors that name the problem") {
  TempDir tmp;
  const fs::path dir = tmp.path;
  write_small_mnist(dir);
  const fs::path images = dir / "train-images-idx3-ubyte.gz";

  SECTION("missing directory") {
    REQUIRE_THROWS_WITH(get_mnist(dir / "nowhere"),
                        Contains("nowhere' does not exist") && Contains("http://yann.lecun.com/exdb/mnist/") && Contains("ossci-datasets") &&
                            Contains("give get_mnist the directory that holds them") && !Contains("--data"));
  }
  SECTION("missing file") {
    fs::remove(dir / "t10k-labels-idx1-ubyte.gz");
    REQUIRE_THROWS_WITH(get_mnist(dir), Contains("looked for") && Contains("t10k-labels-idx1-ubyte.gz'") &&
                                            Contains("yann.lecun.com") && !Contains("--data"));
  }
  SECTION("wrong magic number") {
    write_gz(images, idx_labels(3));
    REQUIRE_THROWS_WITH(get_mnist(dir), Contains("train-images-idx3-ubyte.gz") &&
                                            Contains("magic number is 2049 (0x00000801), expected 2051"));
  }
  SECTION("truncated gzip file") {
    const Bytes gz = read_file(images);
    write_file(images, gz.substr(0, gz.size() / 2));
    REQUIRE_THROWS_WITH(get_mnist(dir), Contains("train-images-idx3-ubyte.gz' is truncated: expected 2368 bytes") &&
                                            Contains("the gzip stream ends early"));
  }
  SECTION("gzip file without its trailer (CRC-32 and length)") {
    const Bytes gz = read_file(images);
    for (size_t cut : {8, 4, 1}) {
      write_file(images, gz.substr(0, gz.size() - cut));
      INFO(cut << " bytes cut");
      REQUIRE_THROWS_WITH(get_mnist(dir), Contains("train-images-idx3-ubyte.gz' is truncated") &&
                                              Contains("ends before its checksum"));
    }
  }
  SECTION("truncated uncompressed file") {
    fs::remove(images);
    write_file(dir / "train-images-idx3-ubyte", idx_images(3).substr(0, 1000));
    REQUIRE_THROWS_WITH(get_mnist(dir), Contains("train-images-idx3-ubyte' is truncated: expected 2368 bytes, got 1000"));
    write_file(dir / "train-images-idx3-ubyte", idx_images(3).substr(0, 10));
    REQUIRE_THROWS_WITH(get_mnist(dir), Contains("is truncated: expected 16 bytes, got 10"));
  }
  SECTION("garbage gzip stream") {
    Bytes bad = read_file(images).substr(0, 10);  // a valid gzip header, then no valid deflate data
    bad += Bytes(200, char(0xff));
    write_file(images, bad);
    REQUIRE_THROWS_WITH(get_mnist(dir), Contains("cannot decompress IDX file") &&
                                            Contains("train-images-idx3-ubyte.gz") && Contains("invalid"));
  }
  SECTION("image and label counts differ") {
    write_gz(dir / "train-labels-idx1-ubyte.gz", idx_labels(4));
    REQUIRE_THROWS_WITH(get_mnist(dir), Contains("holds 3 images") && Contains("holds 4 labels"));
  }
  SECTION("images are not 28x28") {
    write_gz(images, idx_images(3, 27, 28));
    REQUIRE_THROWS_WITH(get_mnist(dir), Contains("images of 27x28 pixels, expected 28x28"));
  }
  SECTION("a label is not a digit") {
    write_gz(dir / "train-labels-idx1-ubyte.gz", idx_labels(3, 12));
    REQUIRE_THROWS_WITH(get_mnist(dir), Contains("label 12 at index 2"));
  }
}

// ---------------------------------------------------------------------------------------------
// Fashion-MNIST

TEST_CASE("Fashion-MNIST: Debian's package, found without a directory") {
  const fs::path dir = fashion_mnist_package_directory();
  if (dir.empty())
    FAIL("Debian's package dataset-fashion-mnist is not installed (apt-get install dataset-fashion-mnist; "
         "scripts/setup.sh does): the suite reads its files");
  CHECK(fs::is_regular_file(dir / "t10k-labels-idx1-ubyte.gz"));

  auto [train, test] = get_fashion_mnist();
  REQUIRE(train->size() == 60000);
  REQUIRE(test->size() == 10000);
  CHECK(train->fields()[0].shape() == Shape{60000, 784});
  CHECK(test->fields()[0].shape() == Shape{10000, 784});
  CHECK(train->fields()[0].dtype() == DType::Float32);
  CHECK(train->fields()[1].shape() == Shape{60000});
  CHECK(train->fields()[1].dtype() == DType::Int32);
  CHECK(label_counts(*train) == std::vector<int64_t>(10, 6000));
  CHECK(label_counts(*test) == std::vector<int64_t>(10, 1000));
  for (const auto& d : {train, test}) {
    const Tensor& images = d->fields()[0];
    const float* p = images.data<float>();
    auto [lo, hi] = std::minmax_element(p, p + images.numel());
    CHECK(*lo == 0.0f);
    CHECK(*hi == 1.0f);
  }
  CHECK(train->get_example(0)[1].item<int32_t>() == 9);  // the first training image is an ankle boot
  CHECK(test->get_example(0)[1].item<int32_t>() == 9);

  // ndim 3 without labels, scale 2: the same pixels, doubled (exactly: a power of two).
  auto [train3, test3] = get_fashion_mnist(/*withlabel=*/false, /*ndim=*/3, /*scale=*/2.0);
  REQUIRE(train3->fields().size() == 1);
  CHECK(train3->fields()[0].shape() == Shape{60000, 1, 28, 28});
  CHECK(test3->fields()[0].shape() == Shape{10000, 1, 28, 28});
  std::vector<float> doubled = test->fields()[0].to_vector<float>();
  for (float& v : doubled) v *= 2.0f;
  CHECK(test3->fields()[0].to_vector<float>() == doubled);

  // ndim 2, from the directory given explicitly.
  auto [train2, test2] = get_fashion_mnist(dir, true, 2);
  CHECK(train2->fields()[0].shape() == Shape{60000, 28, 28});
  CHECK(train2->get_example(59999)[0].reshape({784}).to_vector<float>() ==
        train->get_example(59999)[0].to_vector<float>());
  CHECK(test2->fields()[1].to_vector<int32_t>() == test->fields()[1].to_vector<int32_t>());
}

TEST_CASE("Fashion-MNIST: arguments, errors and label names") {
  REQUIRE_THROWS_WITH(get_fashion_mnist(true, 4), Contains("get_fashion_mnist: ndim must be 1 (N, 784)"));
  // A string literal is a directory, not a bool.
  REQUIRE_THROWS_WITH(get_fashion_mnist("/nonexistent/fashion"),
                      Contains("Fashion-MNIST directory '/nonexistent/fashion' does not exist") &&
                          Contains("fashion-mnist.s3-website") && Contains("give get_fashion_mnist the directory"));
  REQUIRE_THROWS_WITH(get_mnist("/nonexistent/mnist"), Contains("MNIST directory '/nonexistent/mnist' does not exist"));
  TempDir tmp;
  write_small_mnist(tmp.path);
  fs::remove(tmp.path / "train-labels-idx1-ubyte.gz");
  REQUIRE_THROWS_WITH(get_fashion_mnist(tmp.path), Contains("Fashion-MNIST file train-labels-idx1-ubyte was not found"));
  auto [train, test] = get_fashion_mnist(tmp.path, false);  // no labels needed
  CHECK(train->size() == 3);

  CHECK(get_fashion_mnist_labels({0, 9, 5}) == std::vector<std::string>{"T-shirt/top", "Ankle boot", "Sandal"});
  REQUIRE_THROWS_WITH(get_fashion_mnist_labels({1, 10}),
                      Contains("get_fashion_mnist_labels: labels[1] is 10, but labels are classes 0-9"));
}

// ---------------------------------------------------------------------------------------------
// SerialIterator

TEST_CASE("SerialIterator: epoch accounting as Chainer (len 10, batch 3, in order)") {
  SerialIterator it(range_dataset(10), 3, /*repeat=*/true, /*shuffle=*/false);
  CHECK(it.epoch() == 0);
  CHECK(it.epoch_detail() == 0.0);
  CHECK_FALSE(it.previous_epoch_detail().has_value());
  CHECK_FALSE(it.is_new_epoch());

  const std::vector<std::vector<int64_t>> expected{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {9, 0, 1}, {2, 3, 4},
                                                   {5, 6, 7}, {8, 9, 0}, {1, 2, 3}};
  const std::vector<double> details{0.3, 0.6, 0.9, 1.2, 1.5, 1.8, 2.1, 2.4};
  const std::vector<bool> new_epoch{false, false, false, true, false, false, true, false};
  double previous = 0.0;
  for (size_t k = 0; k < expected.size(); ++k) {
    INFO("batch " << k);
    CHECK(ids(it.next_batch()) == expected[k]);
    CHECK(it.epoch_detail() == Approx(details[k]));
    CHECK(it.is_new_epoch() == new_epoch[k]);
    CHECK(it.epoch() == int64_t(details[k]));
    CHECK(it.current_position() == (3 * int64_t(k) + 3) % 10);
    REQUIRE(it.previous_epoch_detail().has_value());
    CHECK(*it.previous_epoch_detail() == Approx(previous));
    previous = details[k];
  }
  CHECK(ids(it.next()) == std::vector<int64_t>{4, 5, 6});  // next() gives the examples themselves

  it.reset();
  CHECK(it.epoch() == 0);
  CHECK(ids(it.next_batch()) == expected[0]);
}

TEST_CASE("SerialIterator: a batch larger than the dataset spans several epochs") {
  SerialIterator it(range_dataset(3), 7, true, false);
  CHECK(ids(it.next_batch()) == std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0});
  CHECK(it.epoch() == 2);
  CHECK(it.is_new_epoch());
  CHECK(it.epoch_detail() == Approx(2.0 + 1.0 / 3));
}

TEST_CASE("SerialIterator: shuffle visits every index once per epoch") {
  SerialIterator it(range_dataset(12), 3, true, true, /*seed=*/5);
  std::vector<std::vector<int64_t>> epochs;
  for (int e = 0; e < 3; ++e) {
    std::vector<int64_t> seen;
    for (int b = 0; b < 4; ++b) {
      for (int64_t i : ids(it.next_batch())) seen.push_back(i);
      CHECK(it.is_new_epoch() == (b == 3));
    }
    CHECK(it.epoch() == e + 1);
    CHECK(sorted(seen) == iota(12));
    epochs.push_back(seen);
  }
  CHECK(epochs[0] != epochs[1]);  // a new permutation each epoch
  CHECK(epochs[1] != epochs[2]);

  SerialIterator same(range_dataset(12), 3, true, true, 5), other(range_dataset(12), 3, true, true, 6);
  std::vector<int64_t> a = ids(same.next_batch()), b = ids(other.next_batch());
  CHECK(a == std::vector<int64_t>(epochs[0].begin(), epochs[0].begin() + 3));  // the seed fixes the order
  CHECK(a != b);
}

TEST_CASE("SerialIterator: with shuffle the crossing batch is completed from the next epoch's order") {
  SerialIterator it(range_dataset(10), 3, true, true, 3);
  std::vector<int64_t> stream;  // the indices in the order handed out
  for (int b = 0; b < 7; ++b) {
    std::vector<int64_t> batch = ids(it.next_batch());
    CHECK(batch.size() == 3);
    stream.insert(stream.end(), batch.begin(), batch.end());
  }
  // Batch 4 = the last index of epoch 1 + the first two of epoch 2; batch 7 = the last two of
  // epoch 2 + the first of epoch 3. So the stream is the epochs' permutations back to back.
  CHECK(sorted({stream.begin(), stream.begin() + 10}) == iota(10));
  CHECK(sorted({stream.begin() + 10, stream.begin() + 20}) == iota(10));
  CHECK(it.epoch() == 2);
  CHECK(it.current_position() == 1);
}

TEST_CASE("SerialIterator: without repeat the last batch is short, then it stops") {
  SerialIterator it(range_dataset(10), 3, /*repeat=*/false, /*shuffle=*/true, 1);
  std::vector<int64_t> seen;
  std::vector<size_t> sizes;
  while (it.has_next()) {
    std::vector<int64_t> batch = ids(it.next_batch());
    sizes.push_back(batch.size());
    seen.insert(seen.end(), batch.begin(), batch.end());
  }
  CHECK(sizes == std::vector<size_t>{3, 3, 3, 1});
  CHECK(sorted(seen) == iota(10));
  CHECK(it.epoch() == 1);
  CHECK(it.is_new_epoch());
  CHECK(it.epoch_detail() == 1.0);
  REQUIRE_THROWS_AS(it.next_batch(), StopIteration);
  REQUIRE_THROWS_WITH(it.next(), Contains("no more batches"));
  it.reset();
  CHECK(it.has_next());
  CHECK(ids(it.next_batch()).size() == 3);

  SerialIterator empty(std::make_shared<TupleDataset>(std::vector<Tensor>{Tensor::zeros({0})}), 2, false);
  CHECK_FALSE(empty.has_next());
}

TEST_CASE("SerialIterator: bad arguments") {
  REQUIRE_THROWS_WITH(SerialIterator(range_dataset(4), 0), Contains("batch_size must be positive, got 0"));
  REQUIRE_THROWS_WITH(SerialIterator(std::make_shared<TupleDataset>(std::vector<Tensor>{Tensor::zeros({0})}), 2),
                      Contains("the dataset is empty"));
  REQUIRE_THROWS_WITH(SerialIterator(nullptr, 2), Contains("null"));
}

TEST_CASE("SerialIterator: serialize mid-epoch and resume bit for bit") {
  auto data = range_dataset(10);
  SerialIterator it(data, 3, true, true, 11);
  for (int b = 0; b < 5; ++b) it.next_batch();
  Serializer writer = Serializer::writer();
  it.serialize(writer);

  SerialIterator resumed(data, 3, true, true, /*a different seed, overwritten=*/99);
  Serializer reader = Serializer::reader(writer.entries());
  resumed.serialize(reader);
  CHECK(resumed.epoch() == it.epoch());
  CHECK(resumed.current_position() == it.current_position());
  CHECK(resumed.is_new_epoch() == it.is_new_epoch());
  CHECK(resumed.previous_epoch_detail() == it.previous_epoch_detail());
  for (int b = 0; b < 12; ++b) {  // across two more epoch ends
    INFO("batch " << b);
    CHECK(ids(resumed.next_batch()) == ids(it.next_batch()));
    CHECK(resumed.epoch_detail() == it.epoch_detail());
  }

  SerialIterator smaller(range_dataset(8), 3, true, true, 11);
  Serializer reader2 = Serializer::reader(writer.entries());
  REQUIRE_THROWS_WITH(smaller.serialize(reader2), Contains("order has 10 entries but the dataset has 8"));
}

TEST_CASE("SerialIterator: continue_epoch_over runs the current epoch over the given indices, then normal epochs") {
  for (bool shuffle : {false, true}) {
    INFO("shuffle " << shuffle);
    SerialIterator it(range_dataset(6), 4, true, shuffle, 2);
    it.next_batch();  // epoch 0, position 4
    it.continue_epoch_over({5, 1, 1, 4, 0});  // repeats allowed, any length
    CHECK(it.epoch() == 0);
    CHECK(it.current_position() == 0);
    CHECK(it.epoch_detail() == 0.0);
    CHECK(ids(it.next_batch()) == std::vector<int64_t>{5, 1, 1, 4});
    CHECK_FALSE(it.is_new_epoch());
    CHECK(it.epoch_detail() == Approx(4.0 / 5));  // position / the list's length
    // The crossing batch: the list's last index, then the first three of a normal epoch.
    const std::vector<int64_t> crossing = ids(it.next_batch());
    CHECK(crossing.size() == 4);
    CHECK(crossing[0] == 0);
    CHECK(it.is_new_epoch());
    CHECK(it.epoch() == 1);
    CHECK(it.epoch_detail() == Approx(1.0 + 3.0 / 6));
    std::vector<int64_t> next_epoch(crossing.begin() + 1, crossing.end());
    for (int64_t i : ids(it.next_batch())) next_epoch.push_back(i);  // 3 more end epoch 1, 1 starts epoch 2
    CHECK(it.is_new_epoch());
    CHECK(sorted({next_epoch.begin(), next_epoch.begin() + 6}) == iota(6));  // a normal epoch over all 6
    if (!shuffle) CHECK(next_epoch == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 0});
    CHECK(it.epoch_indices().empty());
  }
}

TEST_CASE("SerialIterator: a snapshot inside an epoch over given indices resumes it exactly") {
  auto data = range_dataset(7);
  SerialIterator it(data, 2, true, true, 4);
  it.continue_epoch_over({6, 0, 3});
  it.next_batch();  // position 2 of 3
  Serializer writer = Serializer::writer();
  it.serialize(writer);
  CHECK(writer.entries().at("epoch_indices").to_vector<int64_t>() == std::vector<int64_t>{6, 0, 3});

  SerialIterator resumed(data, 2, true, true, 99);
  Serializer reader = Serializer::reader(writer.entries());
  resumed.serialize(reader);
  CHECK(resumed.epoch_indices() == std::vector<int64_t>{6, 0, 3});
  CHECK(resumed.epoch_detail() == Approx(2.0 / 3));
  for (int b = 0; b < 8; ++b) {
    INFO("batch " << b);
    CHECK(ids(resumed.next_batch()) == ids(it.next_batch()));
    CHECK(resumed.epoch_detail() == it.epoch_detail());
  }

  // A snapshot of a normal epoch (or one written before the key existed) clears the list.
  SerialIterator normal(data, 2, true, true, 4);
  Serializer plain = Serializer::writer();
  normal.serialize(plain);
  CHECK(plain.entries().at("epoch_indices").numel() == 0);
  TensorMap old = plain.entries();
  old.erase("epoch_indices");
  SerialIterator over(data, 2, true, true, 4);
  over.continue_epoch_over({1});
  Serializer old_reader = Serializer::reader(old);
  over.serialize(old_reader);
  CHECK(over.epoch_indices().empty());
  CHECK(ids(over.next_batch()) == ids(normal.next_batch()));

  TensorMap bad = writer.entries();
  bad["epoch_indices"] = Tensor::from_vector(std::vector<int64_t>{6, 7});
  SerialIterator other(data, 2, true, true, 4);
  Serializer bad_reader = Serializer::reader(bad);
  REQUIRE_THROWS_WITH(other.serialize(bad_reader),
                      "SerialIterator: the snapshot's epoch_indices hold 7, outside the dataset of size 7");
}

TEST_CASE("SerialIterator: continue_epoch_over checks its indices") {
  SerialIterator it(range_dataset(4), 2);
  REQUIRE_THROWS_WITH(it.continue_epoch_over({}), "SerialIterator.continue_epoch_over: the list of indices is empty");
  REQUIRE_THROWS_WITH(it.continue_epoch_over({0, 4}),
                      "SerialIterator.continue_epoch_over: index 4 is outside the dataset of size 4");
  REQUIRE_THROWS_WITH(it.continue_epoch_over({-1}),
                      "SerialIterator.continue_epoch_over: index -1 is outside the dataset of size 4");
}

// ---------------------------------------------------------------------------------------------
// MultiprocessIterator

TEST_CASE("MultiprocessIterator: the same batches as SerialIterator") {
  for (bool shuffle : {false, true}) {
    INFO("shuffle " << shuffle);
    auto data = range_dataset(10);
    SerialIterator serial(data, 3, true, shuffle, 7);
    MultiprocessIterator prefetch(data, 3, true, shuffle, 7, /*n_prefetch=*/2);
    while (serial.epoch() < 3) {
      std::vector<Tensor> a = serial.next_batch(), b = prefetch.next_batch();
      CHECK(ids(a) == ids(b));
      CHECK(a[1].to_vector<float>() == b[1].to_vector<float>());
      CHECK(prefetch.epoch() == serial.epoch());
      CHECK(prefetch.epoch_detail() == serial.epoch_detail());
      CHECK(prefetch.is_new_epoch() == serial.is_new_epoch());
      CHECK(prefetch.previous_epoch_detail() == serial.previous_epoch_detail());
    }
    CHECK(ids(prefetch.next()) == ids(serial.next()));
  }
}

TEST_CASE("MultiprocessIterator: without repeat it stops like SerialIterator") {
  auto data = std::make_shared<PlainDataset>(10);  // the default get_batch, on the worker thread
  SerialIterator serial(data, 4, false, true, 2);
  MultiprocessIterator prefetch(data, 4, false, true, 2, 1);
  while (serial.has_next()) {
    REQUIRE(prefetch.has_next());
    CHECK(ids(prefetch.next_batch()) == ids(serial.next_batch()));
  }
  CHECK_FALSE(prefetch.has_next());
  REQUIRE_THROWS_AS(prefetch.next_batch(), StopIteration);
  prefetch.reset();
  CHECK(prefetch.has_next());
  CHECK(ids(prefetch.next_batch()).size() == 4);
}

TEST_CASE("MultiprocessIterator: stops cleanly mid-epoch") {
  auto data = range_dataset(1000);
  {
    MultiprocessIterator it(data, 10, true, true, 0, 4);
    it.next_batch();
    it.next_batch();
  }  // the destructor stops the thread while it prefetches
  MultiprocessIterator it(data, 10);
  it.next_batch();
  it.finalize();
  it.finalize();
  MultiprocessIterator never_started(data, 10);
  CHECK(never_started.epoch() == 0);
}

TEST_CASE("MultiprocessIterator: any number of workers gives SerialIterator's batches, fields and epochs") {
  for (int64_t workers : {1, 2, 3, 5})
    for (int64_t batch : {1, 2, 4, 7}) {  // fewer examples than workers in a batch too
      INFO(workers << " workers, batch " << batch);
      auto data = range_dataset(11);
      SerialIterator serial(data, batch, true, true, 3);
      MultiprocessIterator it(data, batch, true, true, 3, /*n_prefetch=*/3, workers);
      CHECK(it.n_processes() == workers);
      while (serial.epoch() < 3) {
        const std::vector<Tensor> a = serial.next_batch(), b = it.next_batch();
        REQUIRE(b.size() == 2);
        CHECK(ids(a) == ids(b));
        CHECK(b[1].shape() == a[1].shape());
        CHECK(a[1].to_vector<float>() == b[1].to_vector<float>());
        CHECK(it.epoch_detail() == serial.epoch_detail());
        CHECK(it.is_new_epoch() == serial.is_new_epoch());
      }
    }
}

// Examples whose get_example takes a while and notes the thread that made it.
class SlowDataset : public Dataset {
 public:
  explicit SlowDataset(int64_t n) : base_(range_dataset(n)) {}
  size_t size() const override { return base_->size(); }
  Example get_example(size_t i) const override {
    usleep(5000);
    std::lock_guard lock(mutex_);
    threads_.insert(std::this_thread::get_id());
    return base_->get_example(i);
  }
  std::set<std::thread::id> threads() const {
    std::lock_guard lock(mutex_);
    return threads_;
  }

 private:
  std::shared_ptr<const TupleDataset> base_;
  mutable std::mutex mutex_;
  mutable std::set<std::thread::id> threads_;
};

TEST_CASE("MultiprocessIterator: the workers make one batch's examples at once, off the training thread") {
  auto data = std::make_shared<SlowDataset>(64);
  MultiprocessIterator it(data, 16, true, false, 0, /*n_prefetch=*/1, /*n_processes=*/4);
  CHECK(ids(it.next_batch()) == iota(16));
  const std::set<std::thread::id> threads = data->threads();  // the first batch's alone (n_prefetch 1)
  CHECK(threads.size() >= 2);  // its four chunks of 20 ms went to several workers
  CHECK(threads.count(std::this_thread::get_id()) == 0);
}

TEST_CASE("MultiprocessIterator: data_seconds counts the training thread's waits, not the workers' work") {
  auto data = std::make_shared<SlowDataset>(64);
  MultiprocessIterator it(data, 8, true, false, 0, /*n_prefetch=*/1, /*n_processes=*/1);
  CHECK(it.data_seconds() == 0);
  it.next_batch();  // nothing was ready: 8 examples of 5 ms each, waited for
  const double first = it.data_seconds();
  CHECK(first >= 0.035);
  usleep(400000);  // the worker prepares the next batch meanwhile
  it.next_batch();
  CHECK(it.data_seconds() - first < 0.035);  // ready, or nearly
}

TEST_CASE("MultiprocessIterator: a worker's error arrives after the batches before it, with its message") {
  for (int64_t workers : {1, 3}) {
    INFO(workers << " workers");
    auto data = std::make_shared<PlainDataset>(12, /*fail_at=*/7);
    MultiprocessIterator it(data, 3, true, false, 0, /*n_prefetch=*/4, workers);
    CHECK(ids(it.next_batch()) == std::vector<int64_t>{0, 1, 2});
    CHECK(ids(it.next_batch()) == std::vector<int64_t>{3, 4, 5});
    REQUIRE_THROWS_WITH(it.next_batch(), Contains("boom at 7"));
    REQUIRE_THROWS_WITH(it.next_batch(), Contains("boom at 7"));
    CHECK(it.current_position() == 6);
  }  // the destructor stops workers that were prefetching past the error
  REQUIRE_THROWS_WITH(MultiprocessIterator(range_dataset(4), 2, true, true, 0, 1, -1),
                      Contains("n_processes must be at least 0"));
  REQUIRE_THROWS_WITH(MultiprocessIterator(range_dataset(4), 2, true, true, 0, 1, 2, -1),
                      Contains("shared_mem must be at least 0"));
}

TEST_CASE("MultiprocessIterator: an error in the worker is rethrown by next") {
  auto data = std::make_shared<PlainDataset>(10, /*fail_at=*/5);
  MultiprocessIterator it(data, 2, true, false);
  CHECK(ids(it.next_batch()) == std::vector<int64_t>{0, 1});
  CHECK(ids(it.next_batch()) == std::vector<int64_t>{2, 3});
  REQUIRE_THROWS_WITH(it.next_batch(), Contains("boom at 5"));
  REQUIRE_THROWS_WITH(it.next(), Contains("boom at 5"));
  CHECK(it.current_position() == 4);  // the failed batch was not counted
}

TEST_CASE("MultiprocessIterator: serialize and resume, also across iterator kinds") {
  auto data = range_dataset(10);
  MultiprocessIterator it(data, 3, true, true, 21);
  for (int b = 0; b < 4; ++b) it.next_batch();
  Serializer writer = Serializer::writer();
  it.serialize(writer);  // while the worker holds prefetched batches

  MultiprocessIterator resumed(data, 3, true, true, 0);
  resumed.next_batch();  // its prefetched batches must be dropped by the restore
  Serializer reader = Serializer::reader(writer.entries());
  resumed.serialize(reader);
  SerialIterator serial(data, 3, true, true, 0);
  Serializer reader2 = Serializer::reader(writer.entries());
  serial.serialize(reader2);
  for (int b = 0; b < 10; ++b) {
    std::vector<int64_t> expected = ids(it.next_batch());
    CHECK(ids(resumed.next_batch()) == expected);
    CHECK(ids(serial.next_batch()) == expected);
  }
  CHECK(resumed.epoch() == it.epoch());
  CHECK(serial.epoch() == it.epoch());
  REQUIRE_THROWS_WITH(MultiprocessIterator(data, 3, true, true, 0, 0), Contains("n_prefetch must be at least 1"));
}

TEST_CASE("MultiprocessIterator: continue_epoch_over drops the prefetched batches and gives SerialIterator's") {
  auto data = range_dataset(9);
  MultiprocessIterator it(data, 4, true, true, 5, 2, 2);
  SerialIterator serial(data, 4, true, true, 5);
  CHECK(ids(it.next_batch()) == ids(serial.next_batch()));  // the workers now hold batches ahead
  it.continue_epoch_over({8, 2, 2, 7, 1, 0});
  serial.continue_epoch_over({8, 2, 2, 7, 1, 0});
  for (int b = 0; b < 6; ++b) {
    INFO("batch " << b);
    CHECK(ids(it.next_batch()) == ids(serial.next_batch()));
    CHECK(it.epoch_detail() == serial.epoch_detail());
    CHECK(it.is_new_epoch() == serial.is_new_epoch());
  }
}
