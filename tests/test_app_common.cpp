// What the apps share to refuse and explain (apps/app_common.h): the message an exception
// becomes, the process counts read from snapshot names, byte counts as people read them.
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
  CHECK_THAT(m, Catch::Contains(" resident at its peak and ") && Catch::Contains("; a smaller batch or model"));
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
  CHECK_THAT(room.limit, Catch::Contains("MemAvailable") || Catch::Contains("cgroup") || Catch::Contains("ulimit -v"));
}
