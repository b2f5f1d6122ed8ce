// Ragged data: ListDataset (examples of any shapes), concat_examples with a device and padding,
// ConvertedBatch and to_device, and the iterators handing ragged examples out through next().
#include <catch2/catch.hpp>

#include "datasets/concat_examples.h"
#include "datasets/converter.h"
#include "datasets/iterators/multiprocess_iterator.h"
#include "datasets/iterators/serial_iterator.h"
#include "datasets/list_dataset.h"
#include "datasets/sub_dataset.h"
#include "datasets/tuple_dataset.h"
#include "same_example.h"

using namespace chainer;
using namespace chainer::datasets;
using namespace chainer::iterators;
using chainer::dataset::concat_examples;
using chainer::dataset::ConvertedBatch;
using chainer::dataset::Padding;
using Catch::Contains;

using chainer::testing::same_example;

namespace {

// N sentences: example i is {ids (i % 4 + 1,) int32 = 10 i, 10 i + 1, ..., label () int64 = i}.
std::shared_ptr<const ListDataset> sentences(int64_t n) {
  std::vector<Example> examples;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int32_t> ids;
    for (int64_t k = 0; k <= i % 4; ++k) ids.push_back(int32_t(10 * i + k));
    examples.push_back({Tensor::from_vector(ids), Tensor::scalar(double(i), DType::Int64)});
  }
  return std::make_shared<ListDataset>(std::move(examples));
}

int64_t label(const Example& e) { return e.at(1).item<int64_t>(); }

}  // namespace

// ---------------------------------------------------------------------------------------------
// ListDataset

TEST_CASE("ListDataset: every example keeps its own shapes and dtypes") {
  auto d = sentences(6);
  CHECK(d->size() == 6);
  for (size_t i = 0; i < 6; ++i) {
    const Example e = d->get_example(i);
    REQUIRE(e.size() == 2);
    CHECK(e[0].shape() == Shape{int64_t(i % 4 + 1)});
    CHECK(e[0].dtype() == DType::Int32);
    CHECK(e[0].to_vector<int32_t>().front() == int32_t(10 * i));
    CHECK(label(e) == int64_t(i));
  }
  // Fields may also differ in dtype and number of axes between examples.
  ListDataset mixed({{Tensor::zeros({2, 3})}, {Tensor::zeros({4}, DType::Float64)}});
  CHECK(mixed.get_example(1)[0].dtype() == DType::Float64);
  CHECK(mixed.get_example(0)[0].shape() == Shape{2, 3});
  CHECK(ListDataset({}).size() == 0);
}

TEST_CASE("ListDataset: errors name the example and the field") {
  REQUIRE_THROWS_WITH(ListDataset({{Tensor::zeros({1}), Tensor::zeros({1})}, {Tensor::zeros({1})}}),
                      Contains("ListDataset: example 1 has 1 fields but example 0 has 2"));
  REQUIRE_THROWS_WITH(ListDataset({{Tensor::zeros({1})}, {Tensor()}}),
                      Contains("ListDataset: field 0 of example 1 is undefined"));
  REQUIRE_THROWS_WITH(sentences(3)->get_example(3), Contains("index 3 is out of range for a dataset of size 3"));
}

TEST_CASE("ListDataset: get_batch stacks examples of equal shapes and explains ragged ones") {
  auto d = sentences(8);
  // Examples 1 and 5 both have 2 ids: they stack, as concat_examples would.
  const std::vector<Tensor> b = d->get_batch({1, 5});
  CHECK(b[0].shape() == Shape{2, 2});
  CHECK(b[0].to_vector<int32_t>() == std::vector<int32_t>{10, 11, 50, 51});
  CHECK(b[1].to_vector<int64_t>() == std::vector<int64_t>{1, 5});
  // Examples 0 and 1 do not.
  REQUIRE_THROWS_AS(d->get_batch({0, 1}), Error);
  REQUIRE_THROWS_WITH(d->get_batch({0, 1}), Contains("field 0 of example 1 has shape (2,) but example 0 has shape (1,)"));
  REQUIRE_THROWS_WITH(d->get_batch({0, 1}), Contains("Iterator::next()") && Contains("converter"));
}

// ---------------------------------------------------------------------------------------------
// concat_examples(batch, device, padding)

TEST_CASE("concat_examples: without padding, unequal shapes are an error naming the field and both shapes") {
  const std::vector<Example> batch{{Tensor::zeros({3}), Tensor::zeros({2})}, {Tensor::zeros({3}), Tensor::zeros({5})}};
  REQUIRE_THROWS_WITH(concat_examples(batch, std::nullopt),
                      Contains("concat_examples: field 1 of example 1 has shape (5,) but example 0 has shape (2,)") &&
                          Contains("padding"));
  // The same for the original overload, which the default converter keeps using.
  REQUIRE_THROWS_WITH(concat_examples(batch), Contains("field 1 of example 1 has shape (5,) but example 0 has shape (2,)"));
  REQUIRE_THROWS_WITH(concat_examples({}, std::nullopt), Contains("concat_examples: the batch is empty"));
}

TEST_CASE("concat_examples: one padding value pads every field to the largest extent of each axis") {
  // Field 0: int32 of shapes (2, 1) and (1, 3) -> (2, 2, 3); field 1: float32 (1,) and (2,) -> (2, 2).
  const std::vector<Example> batch{
      {Tensor::from_vector(std::vector<int32_t>{1, 2}, {2, 1}), Tensor::from_vector(std::vector<float>{0.5f})},
      {Tensor::from_vector(std::vector<int32_t>{3, 4, 5}, {1, 3}), Tensor::from_vector(std::vector<float>{1.5f, 2.5f})}};
  const std::vector<Tensor> out = concat_examples(batch, Device::cpu(), -1);
  REQUIRE(out.size() == 2);
  CHECK(out[0].shape() == Shape{2, 2, 3});
  CHECK(out[0].dtype() == DType::Int32);
  CHECK(out[0].to_vector<int32_t>() == std::vector<int32_t>{1, -1, -1,  //
                                                            2, -1, -1,  //
                                                            3, 4, 5,    //
                                                            -1, -1, -1});
  CHECK(out[1].shape() == Shape{2, 2});
  CHECK(out[1].dtype() == DType::Float32);
  CHECK(out[1].to_vector<float>() == std::vector<float>{0.5f, -1, 1.5f, 2.5f});
}

TEST_CASE("concat_examples: padding per field, a field without padding is stacked") {
  const std::vector<Example> batch{{Tensor::from_vector(std::vector<int32_t>{7}), Tensor::scalar(1, DType::Int32)},
                                   {Tensor::from_vector(std::vector<int32_t>{8, 9}), Tensor::scalar(2, DType::Int32)}};
  const std::vector<Tensor> out = concat_examples(batch, std::nullopt, {0, std::nullopt});
  CHECK(out[0].to_vector<int32_t>() == std::vector<int32_t>{7, 0, 8, 9});
  CHECK(out[1].shape() == Shape{2});
  CHECK(out[1].to_vector<int32_t>() == std::vector<int32_t>{1, 2});
  CHECK(concat_examples(batch, std::nullopt, Padding({-5.0, 3.0}))[0].to_vector<int32_t>() ==
        std::vector<int32_t>{7, -5, 8, 9});
  // The unpadded field must still agree in shape.
  REQUIRE_THROWS_WITH(concat_examples(batch, std::nullopt, {std::nullopt, 0}),
                      Contains("field 0 of example 1 has shape (2,) but example 0 has shape (1,)"));
  REQUIRE_THROWS_WITH(concat_examples(batch, std::nullopt, {0, 0, 0}),
                      Contains("concat_examples: the padding has 3 values (one per field) but the examples have 2 fields"));
}

TEST_CASE("concat_examples: padded examples need the same number of axes and the same dtype") {
  REQUIRE_THROWS_WITH(concat_examples({{Tensor::zeros({2})}, {Tensor::zeros({2, 2})}}, std::nullopt, 0),
                      Contains("field 0 of example 1 has shape (2, 2) but example 0 has shape (2,); padding needs the "
                               "same number of axes"));
  REQUIRE_THROWS_WITH(concat_examples({{Tensor::zeros({2})}, {Tensor::zeros({3}, DType::Int32)}}, std::nullopt, 0),
                      Contains("field 0 of example 1 has dtype int32 but example 0 has dtype float32"));
  REQUIRE_THROWS_WITH(concat_examples({{Tensor::zeros({2})}, {Tensor()}}, std::nullopt, 0),
                      Contains("field 0 of example 1 is undefined"));
}

TEST_CASE("concat_examples: padding equal shapes gives the plain stack; the device is honoured") {
  auto d = sentences(8);
  const std::vector<Example> batch{d->get_example(2), d->get_example(6)};  // both of 3 ids
  const std::vector<Tensor> plain = concat_examples(batch), padded = concat_examples(batch, Device::cpu(), 99);
  CHECK(padded[0].shape() == plain[0].shape());
  CHECK(padded[0].to_vector<int32_t>() == plain[0].to_vector<int32_t>());
  CHECK(padded[1].to_vector<int64_t>() == plain[1].to_vector<int64_t>());
  CHECK(padded[0].device() == Device::cpu());
}

// ---------------------------------------------------------------------------------------------
// ConvertedBatch and to_device

TEST_CASE("ConvertedBatch: fields by position and by name, tensors or lists") {
  const std::vector<Tensor> xs{Tensor::zeros({2}), Tensor::zeros({5})};
  const ConvertedBatch named({{"xs", xs}, {"t", Tensor::zeros({2})}});
  CHECK(named.size() == 2);
  CHECK(named.names() == std::vector<std::string>{"xs", "t"});
  CHECK(named.is_list(0));
  CHECK_FALSE(named.is_list(1));
  CHECK(named.list("xs").size() == 2);
  CHECK(named.list(0)[1].shape() == Shape{5});
  CHECK(named.tensor("t").shape() == Shape{2});
  REQUIRE_THROWS_WITH(named.tensor("xs"), Contains("field 0 ('xs') is a list of 2 tensors, not one tensor"));
  REQUIRE_THROWS_WITH(named.list(1), Contains("field 1 ('t') is one tensor of shape (2,), not a list"));
  REQUIRE_THROWS_WITH(named.tensor("ys"), Contains("no field named 'ys' (the fields are 'xs', 't')"));
  REQUIRE_THROWS_WITH(named.tensor(2), Contains("no field 2; the batch has 2"));
  REQUIRE_THROWS_WITH(named.tensors("StandardUpdater"),
                      Contains("StandardUpdater: field 0 ('xs') of the converted batch is a list of tensors"));
  REQUIRE_THROWS_WITH(ConvertedBatch({{"a", xs}, {"a", xs}}), Contains("the field name 'a' is given twice"));

  // concat_examples's result converts implicitly: every field one tensor.
  const ConvertedBatch stacked = concat_examples({{Tensor::ones({3})}, {Tensor::ones({3})}});
  CHECK(stacked.names().empty());
  CHECK(stacked.tensors("x").at(0).shape() == Shape{2, 3});
  CHECK(ConvertedBatch(std::vector<ConvertedBatch::Field>{xs}).is_list(0));
}

TEST_CASE("to_device: a list of arrays keeps its shapes, dtypes and values") {
  const std::vector<Tensor> xs{Tensor::from_vector(std::vector<int32_t>{1, 2, 3}),
                               Tensor::from_vector(std::vector<int32_t>{4, 5, 6, 7}, {2, 2})};
  const std::vector<Tensor> same_place = dataset::to_device(std::nullopt, xs);
  CHECK(same_place[0].shares_storage(xs[0]));
  const std::vector<Tensor> on_cpu = dataset::to_device(Device::cpu(), xs);
  REQUIRE(on_cpu.size() == 2);
  CHECK(on_cpu[1].shape() == Shape{2, 2});
  CHECK(on_cpu[1].to_vector<int32_t>() == std::vector<int32_t>{4, 5, 6, 7});
  REQUIRE_THROWS_WITH(dataset::to_device(Device::cpu(), {Tensor()}), Contains("to_device: a tensor of the list is undefined"));
}

// ---------------------------------------------------------------------------------------------
// Iterators over ragged data

TEST_CASE("SerialIterator and MultiprocessIterator hand out ragged examples through next()") {
  auto d = sentences(11);
  for (int64_t workers : {1, 3}) {
    CAPTURE(workers);
    SerialIterator serial(d, 4, true, true, 5);
    MultiprocessIterator multi(d, 4, true, true, 5, 2, workers);
    for (int step = 0; step < 7; ++step) {  // across epoch ends (11 examples, batches of 4)
      CAPTURE(step);
      const std::vector<Example> a = serial.next(), b = multi.next();
      REQUIRE(a.size() == 4);
      REQUIRE(b.size() == 4);
      for (size_t j = 0; j < 4; ++j) {
        CHECK(same_example(a[j], d->get_example(size_t(label(a[j])))));  // the dataset's own example
        CHECK(same_example(a[j], b[j]));
      }
      CHECK(serial.epoch() == multi.epoch());
      CHECK(serial.is_new_epoch() == multi.is_new_epoch());
    }
    multi.finalize();
  }
}

TEST_CASE("next_batch() on ragged data is an error that says to use next() and a converter") {
  auto d = sentences(4);
  SerialIterator serial(d, 4, false, false);
  REQUIRE_THROWS_WITH(serial.next_batch(), Contains("cannot be stacked") && Contains("has shape (2,) but example 0 has "
                                                                                    "shape (1,)") &&
                                               Contains("Iterator::next()"));
  MultiprocessIterator multi(d, 4, false, false, 0, 2, 2);
  REQUIRE_THROWS_AS(multi.next_batch(), Error);
  multi.finalize();
}

TEST_CASE("MultiprocessIterator: switching between next_batch() and next() keeps SerialIterator's batches") {
  // Equal shapes (a TupleDataset): both calls work, and prefetched batches planned for the
  // other call are handed out right.
  auto d = std::make_shared<TupleDataset>(std::vector<Tensor>{Tensor::arange(10, DType::Int64)});
  SerialIterator serial(d, 3, true, true, 9);
  MultiprocessIterator multi(d, 3, true, true, 9, 3, 2);
  for (int step = 0; step < 9; ++step) {
    CAPTURE(step);
    const std::vector<int64_t> want = serial.next_batch()[0].to_vector<int64_t>();
    std::vector<int64_t> got;
    if (step % 3 == 0) {
      got = multi.next_batch()[0].to_vector<int64_t>();
    } else {
      for (const Example& e : multi.next()) got.push_back(e.at(0).item<int64_t>());
    }
    CHECK(got == want);
  }
  multi.finalize();
}
