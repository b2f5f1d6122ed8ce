#include <catch2/catch.hpp>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "core/io/npz.h"
#include "core/util/random.h"
#include "core/io/serializer.h"

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

namespace {
// The names in DIR that start with PREFIX.
std::vector<std::string> files_starting(const fs::path& dir, const std::string& prefix) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0) names.push_back(e.path().filename().string());
  return names;
}
}  // namespace

TEST_CASE("npz: writers of one path at once never collide; the file is one writer's, whole; no temporary is left") {
  const fs::path dir = temp_path("writers");
  fs::create_directories(dir);
  const std::string path = (dir / "snapshot.npz").string();
  std::atomic<int> failures{0};
  auto writer = [&](int id) {
    const TensorMap m{{"id", Tensor::full({1000}, double(id))}};
    for (int i = 0; i < 40; ++i) {
      try {
        save_npz(path, m);
      } catch (const std::exception&) {
        ++failures;
      }
    }
  };
  std::thread a(writer, 1), b(writer, 2);
  a.join();
  b.join();
  CHECK(failures == 0);
  const std::vector<double> got = load_npz(path).at("id").to_vector<double>();
  CHECK((got == std::vector<double>(1000, 1.0) || got == std::vector<double>(1000, 2.0)));
  CHECK(files_starting(dir, "snapshot.npz") == std::vector<std::string>{"snapshot.npz"});
  fs::remove_all(dir);
}

TEST_CASE("npz: a save that fails says why and leaves no temporary file") {
  const fs::path dir = temp_path("failed_save");
  fs::create_directories(dir / "taken" / "inside");  // a non-empty directory where the file should go
  const std::string path = (dir / "taken").string();
  REQUIRE_THROWS_WITH(save_npz(path, {{"a", Tensor::ones({3})}}),
                      Catch::Contains("save_npz: cannot rename") && Catch::Contains(path));
  CHECK(files_starting(dir, "taken") == std::vector<std::string>{"taken"});
  REQUIRE_THROWS_WITH(save_npz((dir / "missing" / "x.npz").string(), {{"a", Tensor::ones({3})}}),
                      Catch::Contains("save_npz: cannot open") && Catch::Contains("No such file or directory"));
  fs::remove_all(dir);
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

TEST_CASE("serializer: a reader from a path, strict or not") {
  Serializer w = Serializer::writer();
  Tensor a = Tensor::from_vector<float>({1, 2});
  int64_t n = 7;
  w["updater"]["model:main"].tensor("W", a);
  w["updater"].value("iteration", n);
  for (const std::string path : {"updater/", "updater", "/updater/"}) {
    INFO(path);
    Serializer r = Serializer::reader(w.entries(), path);
    REQUIRE(r.prefix() == "updater/");
    Tensor b;
    r["model:main"].tensor("W", b);
    REQUIRE(b.to_vector<float>() == std::vector<float>{1, 2});
    int64_t m = 0;
    r.value("iteration", m);
    REQUIRE(m == 7);
  }
  Serializer strict = Serializer::reader(w.entries(), "updater");
  Tensor c = Tensor::zeros({2});
  REQUIRE_THROWS_WITH(strict.tensor("missing", c), "deserialize: the entry 'updater/missing' is missing");
  Serializer lenient = Serializer::reader(w.entries(), "updater", false);
  REQUIRE_FALSE(lenient.strict());
  REQUIRE_FALSE(lenient["model:main"].strict());  // the levels below inherit it
  lenient.tensor("missing", c);
  REQUIRE(c.to_vector<float>() == std::vector<float>{0, 0});
  int64_t i = 3;
  double d = 0.5;
  bool f = true;
  std::string text = "kept";
  std::vector<int64_t> ints{1};
  lenient.value("missing_i", i);
  lenient.value("missing_d", d);
  lenient.value("missing_f", f);
  lenient.value("missing_s", text);
  lenient.value("missing_v", ints);
  REQUIRE((i == 3 && d == 0.5 && f && text == "kept" && ints == std::vector<int64_t>{1}));
}

TEST_CASE("serializer: bfloat16 values are stored as float32 and read back into bfloat16 exactly") {
  const std::string path = (std::filesystem::temp_directory_path() / "chainer_test_bfloat16_entries.npz").string();
  Generator gen(3);
  Tensor w = random::uniform({5, 4}, -3.0, 3.0, DType::Float32, &gen).astype(DType::BFloat16);
  Tensor h = random::uniform({3}, -3.0, 3.0, DType::Float32, &gen).astype(DType::Float16);
  Serializer writer = Serializer::writer();
  writer.tensor("w", w);
  writer.tensor("h", h);
  CHECK(writer.entries().at("w").dtype() == DType::Float32);
  CHECK(writer.entries().at("h").dtype() == DType::Float16);  // numpy's '<f2'
  save_npz(path, writer.entries());
  Tensor w2 = Tensor::zeros({5, 4}, DType::BFloat16), h2 = Tensor::zeros({3}, DType::Float16);
  Serializer reader = Serializer::reader(load_npz(path));
  reader.tensor("w", w2);
  reader.tensor("h", h2);
  CHECK(w2.dtype() == DType::BFloat16);
  CHECK(w2.to_vector<float>() == w.to_vector<float>());
  CHECK(h2.to_vector<float>() == h.to_vector<float>());
  std::remove(path.c_str());
}
