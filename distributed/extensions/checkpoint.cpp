#include "distributed/extensions/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iterator>

#include "core/error.h"
#include "core/npz.h"

namespace chainermn {

using chainer::Error;
using chainer::str;
namespace fs = std::filesystem;

namespace {

// fsync of PATH (a file or a directory), so what was written or renamed survives a crash of the machine.
void sync_path(const std::string& path, const char* what) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw Error(str("MultiNodeCheckpointer: cannot open ", what, " '", path, "' to sync it: ", std::strerror(errno)));
  const int rc = ::fsync(fd), err = errno;
  ::close(fd);
  if (rc != 0) throw Error(str("MultiNodeCheckpointer: fsync of ", what, " '", path, "' failed: ", std::strerror(err)));
}

// The iteration of FILE when it is `<prefix><digits>` exactly; -1 otherwise.
int64_t parse_iteration(const std::string& file, const std::string& prefix) {
  if (file.size() <= prefix.size() || file.compare(0, prefix.size(), prefix) != 0 || file.size() - prefix.size() > 18)
    return -1;
  int64_t value = 0;
  for (size_t i = prefix.size(); i < file.size(); ++i) {
    if (file[i] < '0' || file[i] > '9') return -1;
    value = value * 10 + (file[i] - '0');
  }
  return value;
}

// The process count of the job that wrote a checkpoint, stored beside the trainer's entries.
const std::string kSizeKey = "chainermn_checkpointer/size";

// What KEY holds in ENTRIES of FILE as a process count; throws naming the file when it is missing.
int64_t written_size(const chainer::TensorMap& entries, const std::string& file) {
  const auto it = entries.find(kSizeKey);
  if (it == entries.end() || it->second.numel() != 1)
    throw Error(str("'", file, "' is not a checkpoint of MultiNodeCheckpointer (no entry '", kSizeKey, "')"));
  return int64_t(it->second.item<double>());
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

MultiNodeCheckpointer::MultiNodeCheckpointer(std::string name, std::shared_ptr<Communicator> comm, int64_t cp_interval,
                                             int64_t gc_interval, std::string path)
    : name_(std::move(name)), comm_(std::move(comm)), cp_interval_(cp_interval), gc_interval_(gc_interval),
      path_(std::move(path)) {
  if (name_.empty()) throw Error("create_multi_node_checkpointer: name must not be empty");
  if (!comm_) throw Error("create_multi_node_checkpointer: the communicator is null");
  if (cp_interval_ < 1) throw Error(str("create_multi_node_checkpointer: cp_interval must be at least 1, got ", cp_interval_));
  if (gc_interval_ < 1) throw Error(str("create_multi_node_checkpointer: gc_interval must be at least 1, got ", gc_interval_));
  if (!path_.empty()) fs::create_directories(path_);
}

std::string MultiNodeCheckpointer::filename(int64_t iteration) const {
  return str(name_, ".", comm_->rank(), ".", iteration);
}

std::vector<int64_t> MultiNodeCheckpointer::local_iterations() const {
  std::vector<int64_t> out;
  std::error_code ec;
  const std::string prefix = str(name_, ".", comm_->rank(), ".");
  for (const auto& entry : fs::directory_iterator(path_.empty() ? "." : path_, ec))
    if (const int64_t it = parse_iteration(entry.path().filename().string(), prefix); it >= 0 && entry.is_regular_file())
      out.push_back(it);
  std::sort(out.begin(), out.end());
  return out;
}

void MultiNodeCheckpointer::operator()(chainer::training::Trainer& trainer) {
  if (path_.empty()) path_ = trainer.out();
  save(trainer, trainer.updater().iteration());
}

void MultiNodeCheckpointer::save(chainer::training::Trainer& trainer, int64_t iteration) {
  if (path_.empty()) path_ = trainer.out();
  const double begin = now_seconds();
  fs::create_directories(path_);
  const std::string final_path = (fs::path(path_) / filename(iteration)).string();
  // Written whole under a name the checkpoint pattern never matches, synced, then renamed: the
  // final name only ever holds a complete file, and syncing the directory makes the rename last.
  const std::string tmp = (fs::path(path_) / ("tmp-" + filename(iteration))).string();
  chainer::Serializer s = chainer::Serializer::writer();
  trainer.serialize(s);
  chainer::TensorMap entries = s.entries();
  entries[kSizeKey] = chainer::Tensor::scalar(double(comm_->size()), chainer::DType::Int64);
  chainer::save_npz(tmp, entries);
  try {
    sync_path(tmp, "the checkpoint");
    if (std::rename(tmp.c_str(), final_path.c_str()) != 0)
      throw Error(str("MultiNodeCheckpointer: cannot rename '", tmp, "' to '", final_path, "': ", std::strerror(errno)));
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  sync_path(path_, "the directory");
  timings_.push_back({begin, now_seconds() - begin});
  if (iterations_.empty() || iterations_.back() != iteration) iterations_.push_back(iteration);
  if (int64_t(iterations_.size()) > cp_interval_ + gc_interval_) collect_garbage();
}

void MultiNodeCheckpointer::collect_garbage() {
  // Only iterations every rank holds are kept, so no rank deletes the checkpoint a restart needs.
  const std::vector<std::vector<int64_t>> all = comm_->allgather_obj(iterations_);
  std::vector<int64_t> common = all[0];
  for (const auto& other : all) {
    std::vector<int64_t> both;
    std::set_intersection(common.begin(), common.end(), other.begin(), other.end(), std::back_inserter(both));
    common = std::move(both);
  }
  if (int64_t(common.size()) > cp_interval_) common.erase(common.begin(), common.end() - cp_interval_);
  for (int64_t it : iterations_)
    if (!std::binary_search(common.begin(), common.end(), it)) {
      std::error_code ec;
      fs::remove(fs::path(path_) / filename(it), ec);
    }
  iterations_ = common;
}

int64_t MultiNodeCheckpointer::maybe_load(chainer::training::Trainer& trainer, chainer::Optimizer* /*optimizer*/,
                                          const std::string& path) {
  if (path_.empty()) path_ = path.empty() ? trainer.out() : path;
  // A save killed before its rename leaves only a temporary file: it is not a checkpoint. Its
  // name is tmp-NAME.RANK.ITERATION, or save_npz's own temporary name after it when the save was
  // killed while writing.
  std::error_code ec;
  const std::string temporary = str("tmp-", name_, ".", comm_->rank(), ".");
  for (const auto& entry : fs::directory_iterator(path_, ec))
    if (entry.path().filename().string().rfind(temporary, 0) == 0) fs::remove(entry.path(), ec);

  iterations_ = local_iterations();
  const std::vector<std::vector<int64_t>> all = comm_->allgather_obj(iterations_);
  std::vector<int64_t> common = all[0];
  for (const auto& other : all) {
    std::vector<int64_t> both;
    std::set_intersection(common.begin(), common.end(), other.begin(), other.end(), std::back_inserter(both));
    common = std::move(both);
  }
  if (common.empty()) {
    // Checkpoints on some ranks but none that all hold: a job of another process count wrote
    // them (the ranks it did not have hold none), or a rank failed before its first save.
    std::string mismatch;
    if (!iterations_.empty()) {
      const std::string file = (fs::path(path_) / filename(iterations_.back())).string();
      try {
        if (const int64_t n = written_size(chainer::load_npz(file), file); n != comm_->size())
          mismatch = str("'", file, "' was written by a job of ", n, " processes");
      } catch (const Error&) {
      }
    }
    throw_if_any(mismatch, "");
    return 0;
  }
  const int64_t latest = common.back();

  // Each rank loads its own file; a failure anywhere reaches every rank, and the ranks that had
  // loaded put their state back, so the job stays as it was everywhere.
  const std::string file = (fs::path(path_) / filename(latest)).string();
  chainer::Serializer backup = chainer::Serializer::writer();
  trainer.serialize(backup);
  std::string failure;
  try {
    chainer::TensorMap entries;
    try {
      entries = chainer::load_npz(file);
    } catch (const Error& e) {
      throw Error(str("cannot read the checkpoint '", file, "': ", e.what()));
    }
    if (const int64_t n = written_size(entries, file); n != comm_->size())
      throw Error(str("'", file, "' was written by a job of ", n, " processes"));
    chainer::training::load_snapshot(std::move(entries), trainer, file);
  } catch (const Error& e) {
    failure = e.what();
  }
  try {
    throw_if_any(failure, str(" from iteration ", latest, " (the newest every rank saved; nothing was loaded)"));
  } catch (const Error&) {
    if (failure.empty()) {
      chainer::Serializer restore = chainer::Serializer::reader(backup.entries());
      trainer.serialize(restore);
    }
    throw;
  }
  return latest;
}

void MultiNodeCheckpointer::throw_if_any(const std::string& failure, const std::string& where) const {
  const std::vector<std::string> statuses = comm_->allgather_bytes(failure);
  std::string errors;
  for (size_t r = 0; r < statuses.size(); ++r)
    if (!statuses[r].empty()) errors += str(errors.empty() ? "" : "; ", "rank ", r, ": ", statuses[r]);
  if (errors.empty()) return;
  if (errors.find("was written by a job of") != std::string::npos)
    errors += str("; this job has ", comm_->size(), ": the checkpointer resumes only with the process count that "
                  "wrote its checkpoints");
  throw Error(str("MultiNodeCheckpointer.maybe_load: cannot resume run '", name_, "'", where, ": ", errors));
}

std::string MultiNodeCheckpointer::get_stats() const {
  if (timings_.empty()) return "No stats available";
  double sum = 0, lo = timings_[0].duration, hi = timings_[0].duration;
  for (const CheckpointTiming& t : timings_) sum += t.duration, lo = std::min(lo, t.duration), hi = std::max(hi, t.duration);
  char line[160];
  std::snprintf(line, sizeof line, "Snapshot duration stats (sec): avg=%f, min=%f, max=%f", sum / double(timings_.size()),
                lo, hi);
  return line;
}

std::shared_ptr<MultiNodeCheckpointer> create_multi_node_checkpointer(std::string name,
                                                                      std::shared_ptr<Communicator> comm,
                                                                      int64_t cp_interval, int64_t gc_interval,
                                                                      std::string path) {
  return std::make_shared<MultiNodeCheckpointer>(std::move(name), std::move(comm), cp_interval, gc_interval,
                                                 std::move(path));
}

}  // namespace chainermn
