// What the apps share to refuse and explain (apps/app_common.h): the message an exception
// becomes, the process counts read from snapshot names, byte counts as people read them, and
// the options refused before any work because the machine cannot hold them.
#include <catch2/catch.hpp>

#include <new>
#include <stdexcept>
#include <system_error>

#include "apps/app_common.h"

namespace {

std::string message_of(std::exception_ptr e) { return apps::error_message(e); }

}  // namespace

TEST_CASE("app errors: a chainer::Error is printed as it is, whatever the stage") {
  apps::set_stage("reading MNIST");
  CHECK(message_of(std::make_exception_ptr(chainer::Error("-b/--batchsize must be at least 1, got 0"))) ==
        "-b/--batchsize must be at least 1, got 0");
}

TEST_CASE("app errors: another std::exception names its type and the stage, then says what it said") {
  apps::set_stage("resuming from 'result/snapshot_iter_600'");
  CHECK(message_of(std::make_exception_ptr(std::invalid_argument("stod"))) ==
        "std::invalid_argument while resuming from 'result/snapshot_iter_600': stod");
  apps::set_stage("starting the compute threads");
  CHECK(message_of(std::make_exception_ptr(std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again)))) ==
        "std::system_error while starting the compute threads: Resource temporarily unavailable");
  CHECK(message_of(std::make_exception_ptr(42)) == "an exception of unknown type while starting the compute threads");
}

TEST_CASE("app errors: std::bad_alloc says what ran out, while doing what, and how much memory there was") {
  int64_t iteration = 1200;
  apps::set_stage([&iteration] { return chainer::str("training (", iteration, " iterations done, epoch 2)"); });
  const std::string m = message_of(std::make_exception_ptr(std::bad_alloc()));
  CHECK_THAT(m, Catch::StartsWith("out of memory while training (1200 iterations done, epoch 2): an allocation "
                                  "failed (std::bad_alloc) with this process at "));
  CHECK_THAT(m, Catch::Contains(" resident at its peak, and the ") && Catch::Contains(" left; a smaller batch or model"));
  iteration = 1300;  // the stage is asked when the error comes
  CHECK_THAT(message_of(std::make_exception_ptr(std::bad_alloc())), Catch::Contains("(1300 iterations done"));
}

TEST_CASE("app errors: the process count of a per-rank snapshot comes from well-formed names only") {
  CHECK(apps::snapshot_process_count("snapshot_iter_300.rank1-of-2", "snapshot_iter_300") == 2);
  CHECK(apps::snapshot_process_count("snapshot_iter_300.rank0-of-16", "snapshot_iter_300") == 16);
  // What a save cut short leaves, other stems, ranks past the count, signs, leading zeros.
  for (const char* name : {"snapshot_iter_300.rank1-of-2.tmp.6944.0", "snapshot_iter_30.rank1-of-2",
                           "snapshot_iter_300.rank2-of-2", "snapshot_iter_300.rank-1-of-2",
                           "snapshot_iter_300.rank1-of-+2", "snapshot_iter_300.rank01-of-2", "snapshot_iter_300.rank1-of-",
                           "snapshot_iter_300.rank1-of-2x", "snapshot_iter_300", "snapshot_iter_300.rank"})
    CHECK(apps::snapshot_process_count(name, "snapshot_iter_300") == 0);
}

TEST_CASE("app errors: byte counts as people read them") {
  CHECK(apps::format_bytes(512) == "512 B");
  CHECK(apps::format_bytes(3.7 * (1 << 30)) == "3.7 GiB");
  CHECK(apps::format_bytes(1e9 * 784 * 4) == "2.9 TiB");
  CHECK(apps::format_bytes(1.6e19) == "13.9 EiB");
}

TEST_CASE("app errors: the host's room for memory is positive and says what limits it") {
  const apps::MemoryRoom room = apps::host_memory_room();
  CHECK(room.bytes > 0);
  CHECK_THAT(room.text, Catch::Contains("MemAvailable") || Catch::Contains("cgroup") || Catch::Contains("ulimit -v"));
}

namespace {

// The tutorial's MLP as mnist_mlp checks it: -b and -u against ROOM bytes.
std::string mlp_refusal(int64_t batch, int64_t units, double room) {
  const std::vector<apps::FlagValue> flags{{"-b/--batchsize", batch, "examples"}, {"-u/--unit", units, "units"}};
  return apps::memory_refusal(
      flags,
      [](const std::vector<int64_t>& v) {
        const apps::DenseCost c = apps::dense_cost({{784, v[1]}, {v[1], v[1]}, {v[1], 10}});
        return std::vector<apps::MemoryPart>{{0, chainer::str("a batch of ", v[0], " examples"), double(v[0]) * c.per_example},
                                             {1, chainer::str("a network of ", v[1], " units"), c.parameters}};
      },
      {room, "the 22.0 GiB of memory available (MemAvailable)"});
}

constexpr double kGiB = double(1 << 30);

}  // namespace

TEST_CASE("app limits: a dense network's parameters with Adam, and per example its input, label and activations") {
  const apps::DenseCost c = apps::dense_cost({{784, 1000}, {1000, 1000}, {1000, 10}});
  CHECK(c.parameter_count == 784 * 1000 + 1000 + 1000 * 1000 + 1000 + 1000 * 10 + 10);
  CHECK(c.parameters == 16.0 * double(c.parameter_count));  // values, gradients, Adam's m and v
  CHECK(c.per_example == 4.0 * (784 + 1 + 2 * (1000 + 1000 + 10)));
}

TEST_CASE("app limits: what fits is not refused") {
  CHECK(mlp_refusal(100, 1000, 22 * kGiB).empty());
  CHECK(mlp_refusal(60000, 10000, 22 * kGiB).empty());  // 1.6 GiB of parameters, 8.9 GiB of batch
}

TEST_CASE("app limits: a batch too large names -b, its size, the room and the most that can fit") {
  const std::string m = mlp_refusal(1000000000, 1000, 22 * kGiB);
  CHECK_THAT(m, Catch::StartsWith("-b/--batchsize 1000000000: a batch of 1000000000 examples needs at least 17.5 TiB, "
                                  "more than the 22.0 GiB of memory available "
                                  "(MemAvailable); no more than "));
  // The most is the largest batch that fits beside the network: one more does not.
  const int64_t most = std::stoll(m.substr(m.find("no more than ") + 13));
  CHECK(mlp_refusal(most, 1000, 22 * kGiB).empty());
  CHECK_FALSE(mlp_refusal(most + 1, 1000, 22 * kGiB).empty());
  CHECK_THAT(m, Catch::EndsWith(chainer::str(most, " examples can fit")));
}

TEST_CASE("app limits: a network too large names -u, and the most units that fit with the batch as given") {
  const std::string m = mlp_refusal(100, 1000000000, 22 * kGiB);
  CHECK_THAT(m, Catch::StartsWith("-u/--unit 1000000000: a network of 1000000000 units needs at least 13.9 EiB"));
  const int64_t most = std::stoll(m.substr(m.find("no more than ") + 13));
  CHECK(most > 30000);  // sqrt(22 GiB / 16 bytes), less the batch
  CHECK(mlp_refusal(100, most, 22 * kGiB).empty());
  CHECK_FALSE(mlp_refusal(100, most + 1, 22 * kGiB).empty());
}

TEST_CASE("app limits: when even 1 does not fit beside the other options, the message says so") {
  // A batch of 10^9 at 1 unit needs about 3 TiB; a network of 10^9 units, exabytes: -u is named,
  // and -u 1 still leaves the batch too large.
  CHECK_THAT(mlp_refusal(1000000000, 1000000000, 22 * kGiB),
             Catch::StartsWith("-u/--unit 1000000000: ") &&
                 Catch::EndsWith("; even -u/--unit 1 does not fit beside the other options (-b/--batchsize 1000000000)"));
}

TEST_CASE("app limits: threads beyond 8 per core are refused, naming the option and the most") {
  const int most = apps::max_threads();
  CHECK(most >= 8);
  CHECK(most <= chainer::kMaxThreads);
  CHECK_NOTHROW(apps::check_threads("-j/--loaderjob", most, "loader threads"));
  CHECK_THROWS_WITH(apps::check_threads("-j/--loaderjob", 10000, "loader threads"),
                    Catch::StartsWith("-j/--loaderjob 10000: 10000 loader threads are more than this process can use") &&
                        Catch::Contains(chainer::str(most)) && Catch::Contains("take turns on the same cores"));
}

TEST_CASE("app limits: a batch larger than what each process iterates over is refused") {
  CHECK_NOTHROW(apps::check_batch("-b/--batchsize", 30000, 30000, 60000, 2));
  CHECK_THROWS_WITH(apps::check_batch("-b/--batchsize", 30001, 30000, 60000, 2),
                    "-b/--batchsize 30001: a batch of 30001 examples is more than the 30000 training examples each of "
                    "the 2 processes iterates over (60000 in all): every batch would repeat examples; at most 30000");
  CHECK_THROWS_WITH(apps::check_batch("-B/--batchsize", 100, 64, 64, 1),
                    "-B/--batchsize 100: a batch of 100 examples is more than the 64 training examples: every batch "
                    "would repeat examples; at most 64");
}

TEST_CASE("app limits: the flag named is the one furthest beyond what could fit, not the owner of the largest part") {
  // train_imagenet's batches: each crop is 3 x S x S float32, and --insize S owns no part.
  const std::vector<apps::FlagValue> flags{
      {"-B/--batchsize", 16, "examples"}, {"-b/--val_batchsize", 16, "examples"}, {"--insize", 1000000000, "pixels a side"}};
  const apps::MemoryModel batches = [](const std::vector<int64_t>& v) {
    const double crop = 12.0 * double(v[2]) * double(v[2]);
    return std::vector<apps::MemoryPart>{{0, chainer::str("a training batch of ", v[0], " crops"), double(v[0]) * crop},
                                         {1, chainer::str("a validation batch of ", v[1], " crops"), double(v[1]) * crop}};
  };
  const std::string m = apps::memory_refusal(flags, batches, {22 * kGiB, "the 22.0 GiB of memory available"});
  CHECK_THAT(m, Catch::StartsWith("--insize 1000000000: a training batch of 16 crops needs at least ") &&
                    Catch::EndsWith(" pixels a side can fit"));
  // A huge batch at a sane size names the batch.
  std::vector<apps::FlagValue> big_batch = flags;
  big_batch[0].value = 100000000, big_batch[2].value = 224;
  CHECK_THAT(apps::memory_refusal(big_batch, batches, {22 * kGiB, "the 22.0 GiB of memory available"}),
             Catch::StartsWith("-B/--batchsize 100000000: a training batch of 100000000 crops needs at least "));
}

TEST_CASE("app usage: the options an app describes itself are left out of the common lines, with their continuations") {
  const std::string all = apps::common_usage(apps::CommonOptions{}),
                    some = apps::common_usage(apps::CommonOptions{}, {"--timing", "--test-size"});
  CHECK(all.find("--timing") != std::string::npos);
  CHECK(all.find("peak RSS") != std::string::npos);  // the --timing entry's second line
  CHECK(some.find("--timing") == std::string::npos);
  CHECK(some.find("peak RSS") == std::string::npos);
  CHECK(some.find("--test-size") == std::string::npos);
  CHECK(some.find("--train-size N  train on the first N") != std::string::npos);
  CHECK(some.find("      --no-plot       draw no loss.png") != std::string::npos);
  CHECK(some.find("has cairo; --plot asks for them") != std::string::npos);  // another entry's continuation kept
  CHECK(all.size() - some.size() == all.find("      --no-plot") - all.find("      --timing") +
                                        (all.find("      --seed") - all.find("      --test-size")));
}
