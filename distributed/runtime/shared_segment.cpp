#include "distributed/runtime/shared_segment.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "distributed/runtime/mpi_check.h"
#include "distributed/runtime/mpi_wait.h"

namespace chainermn {

namespace {

// Maps NAME read-write; nullptr on failure. The creator also sizes it, with posix_fallocate so a
// full /dev/shm is an error here and not a SIGBUS at the first touch.
char* map_segment(const char* name, size_t bytes, bool create) {
  const int fd = create ? shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600) : shm_open(name, O_RDWR, 0600);
  if (fd < 0) return nullptr;
  bool ok = true;
  if (create) ok = ftruncate(fd, off_t(bytes)) == 0 && posix_fallocate(fd, 0, off_t(bytes)) == 0;
  void* p = ok ? mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  close(fd);
  return p == MAP_FAILED ? nullptr : static_cast<char*>(p);
}

// Segment names are "/" kPrefix "<pid of rank 0>-<counter>".
constexpr char kPrefix[] = "chainermn-";

// Unlinks the names of segments whose creating process is gone: a job killed between creating
// a segment and unlinking its name leaves the name behind. Only when kill() says ESRCH: a live
// process, or one of another user (EPERM), may still be setting its segment up.
void remove_stale_segments() {
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/dev/shm", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(kPrefix, 0) != 0) continue;
    char* rest = nullptr;
    const long pid = std::strtol(name.c_str() + sizeof kPrefix - 1, &rest, 10);
    if (pid <= 0 || *rest != '-') continue;
    if (kill(pid_t(pid), 0) == 0 || errno != ESRCH) continue;
    shm_unlink(("/" + name).c_str());
  }
}

}  // namespace

std::shared_ptr<SharedSegment> SharedSegment::create(MPI_Comm comm, size_t bytes) {
  static std::atomic<unsigned> counter{0};
  int rank = 0;
  CHAINERMN_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  bytes = std::max<size_t>(bytes, 64);
  char name[64] = {};
  char* data = nullptr;
  if (rank == 0) {
    remove_stale_segments();
    std::snprintf(name, sizeof name, "/%s%d-%u", kPrefix, int(getpid()), counter++);
    data = map_segment(name, bytes, true);
    if (!data) shm_unlink(name);  // created but not sized or mapped
  }
  int created = data != nullptr;
  CHAINERMN_MPI_CHECK(mpi::bcast(&created, 1, MPI_INT, 0, comm));
  if (!created) return nullptr;
  CHAINERMN_MPI_CHECK(mpi::bcast(name, int(sizeof name), MPI_CHAR, 0, comm));
  if (rank != 0) data = map_segment(name, bytes, false);
  int mapped = data != nullptr, everywhere = 0;
  CHAINERMN_MPI_CHECK(mpi::allreduce(&mapped, &everywhere, 1, MPI_INT, MPI_MIN, comm));
  if (rank == 0) shm_unlink(name);  // every rank has it (or gave up): the name is not needed
  if (!everywhere) {
    if (data) munmap(data, bytes);
    return nullptr;
  }
  return std::shared_ptr<SharedSegment>(new SharedSegment(data, bytes));
}

SharedSegment::~SharedSegment() { munmap(data_, bytes_); }

std::pair<int64_t, int64_t> share_of(int64_t numel, size_t item, int rank, int size) {
  const int64_t line = std::max<int64_t>(1, int64_t(64 / item));
  auto edge = [&](int j) { return j >= size ? numel : numel * j / size / line * line; };
  return {edge(rank), edge(rank + 1)};
}

}  // namespace chainermn
