#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/npz.h"
#include "core/random.h"
#include "core/serializer.h"

using namespace chainer;
namespace fs = std::filesystem;

namespace {
std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("chainer_test_" + std::to_string(::getpid()) + "_" + name)).string();
}
}  // namespace

TEST_CASE("npz: arrays of every dtype and rank round-trip bit for bit") {
  TensorMap m;
  m["f32"] = random::normal({3, 4});
  m["f64"] = random::normal({5}, 0, 1, DType::Float64);
  m["i32"] = Tensor::from_vector<int32_t>({1, -2, 3}, {3, 1});
  m["i64"] = Tensor::scalar(1, DType::Int64);
  m["u8"] = Tensor::from_vector<uint8_t>({0, 255}, {2});
  m["empty"] = Tensor::zeros({0, 3});
  m["nested/name/W"] = random::normal({2, 2, 2});
  const std::string path = temp_path("roundtrip.npz");
  save_npz(path, m);
  TensorMap back = load_npz(path);
  std::remove(path.c_str());
  REQUIRE(back.size() == m.size());
  for (const auto& [k, v] : m) {
    INFO(k);
    REQUIRE(back.at(k).dtype() == v.dtype());
    REQUIRE(back.at(k).shape() == v.shape());
    REQUIRE(back.at(k).to_vector<double>() == v.to_vector<double>());
  }
}

TEST_CASE("npz: corrupt and missing files give errors naming the file") {
  REQUIRE_THROWS_WITH(load_npz("/nonexistent/x.npz"), Catch::Contains("/nonexistent/x.npz"));
  const std::string path = temp_path("corrupt.npz");
  TensorMap m{{"a", Tensor::ones({100})}};
  save_npz(path, m);
  std::string bytes;
  {
    std::ifstream f(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(f), {});
  }
  SECTION("truncated") {
    std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size() / 2));
    REQUIRE_THROWS_WITH(load_npz(path), Catch::Contains(path) && Catch::Contains("not a valid NPZ"));
  }
  SECTION("flipped data byte") {
    bytes[120] ^= 0x5a;
    std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
    REQUIRE_THROWS_WITH(load_npz(path), Catch::Contains("checksum"));
  }
  std::remove(path.c_str());
}

TEST_CASE("serializer: hierarchical keys, scalars, strings and in-place reads") {
  Serializer w = Serializer::writer();
  Tensor W = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  int64_t iteration = 1234567890123;
  double lr = 0.125;
  std::string log = "[{\"epoch\": 1}]";
  std::vector<uint64_t> state{1, 2, ~uint64_t(0)};
  w["updater"]["model"].tensor("W", W);
  w.value("iteration", iteration);
  w["log"].value("text", log);
  w.value("lr", lr);
  w.value("rng", state);
  REQUIRE(w.entries().count("updater/model/W") == 1);

  Serializer r = Serializer::reader(w.entries());
  Tensor target = Tensor::zeros({2, 2});
  Tensor view = target;  // a second handle on the same storage
  r["updater"]["model"].tensor("W", target);
  REQUIRE(view.to_vector<float>() == std::vector<float>{1, 2, 3, 4});
  int64_t it2 = 0;
  double lr2 = 0;
  std::string log2;
  std::vector<uint64_t> state2;
  r.value("iteration", it2);
  r.value("lr", lr2);
  r["log"].value("text", log2);
  r.value("rng", state2);
  REQUIRE(it2 == iteration);
  REQUIRE(lr2 == lr);
  REQUIRE(log2 == log);
  REQUIRE(state2 == state);
  Tensor wrong = Tensor::zeros({3});
  REQUIRE_THROWS_WITH(r["updater"]["model"].tensor("W", wrong), Catch::Contains("updater/model/W") && Catch::Contains("(3,)"));
  REQUIRE_THROWS_WITH(r.value("missing", it2), Catch::Contains("'missing' is missing"));
}
