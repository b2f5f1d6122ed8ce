#include "distributed/extensions/checkpoint.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <iterator>
#include <map>
#include <set>

#include "core/util/error.h"
#include "core/io/npz.h"
#include "distributed/datasets/scatter_dataset.h"
#include "distributed/extensions/allreduce_persistent.h"
#include "distributed/optimizers/multi_node_optimizer.h"

namespace chainermn {

using chainer::Error;
using chainer::str;
namespace fs = std::filesystem;

namespace {

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

// The entries of the checkpoint FILE; an unreadable one throws naming it.
chainer::TensorMap read_checkpoint(const std::string& file) {
  try {
    return chainer::load_npz(file);
  } catch (const Error& e) {
    throw Error(str("cannot read the checkpoint '", file, "': ", e.what()));
  }
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

// The iteration of the checkpoint the job that wrote a checkpoint had saved (or resumed from)
// before it: every rank's file of it existed when this one was written. kNone for a job's first
// checkpoint after it started afresh.
const std::string kPreviousKey = "chainermn_checkpointer/previous";
constexpr int64_t kNone = -1;
constexpr int64_t kUnknown = -2;  // a file without kPreviousKey, or one that cannot be read

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The rank of FILE when it is `<prefix><rank>.<digits>` (a checkpoint of the run PREFIX names),
// and its iteration; {-1, -1} otherwise.
std::pair<int64_t, int64_t> rank_and_iteration(const std::string& file, const std::string& prefix) {
  const size_t dot = file.find('.', prefix.size());
  if (file.compare(0, prefix.size(), prefix) != 0 || dot == std::string::npos) return {-1, -1};
  const int64_t rank = parse_iteration(file.substr(0, dot), prefix), iteration = parse_iteration(file, file.substr(0, dot + 1));
  return rank >= 0 && iteration >= 0 ? std::pair{rank, iteration} : std::pair<int64_t, int64_t>{-1, -1};
}

// Whether KEY is part of a data-parallel replica: the model and its optimizer's state.
bool replica_key(const std::string& key) {
  return key.rfind("updater/model:", 0) == 0 || key.rfind("updater/optimizer:", 0) == 0;
}

// A 64-bit digest of N bytes at DATA, continuing H: equal bytes give equal digests on every rank.
// Eight bytes a step, so a model of hundreds of megabytes takes a fraction of its write.
uint64_t digest(uint64_t h, const void* data, size_t n) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  const auto step = [&h](uint64_t word) {
    h = (h ^ word) * 0x9E3779B97F4A7C15ULL;
    h ^= h >> 32;
  };
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t word;
    std::memcpy(&word, bytes + i, 8);
    step(word);
  }
  for (; i < n; ++i) step(bytes[i]);
  step(n);
  return h;
}

uint64_t digest(uint64_t h, const std::string& text) { return digest(h, text.data(), text.size()); }

}  // namespace

MultiNodeCheckpointer::Persistents MultiNodeCheckpointer::persistents(chainer::training::Trainer& trainer) {
  // StandardUpdater's layout: model NAME's entries are "updater/model:NAME" + its link path.
  Persistents out;
  for (const auto& [name, optimizer] : trainer.updater().get_all_optimizers()) {
    if (!optimizer) continue;
    chainer::Link& model = optimizer->target();
    if (std::find(out.models.begin(), out.models.end(), &model) == out.models.end()) out.models.push_back(&model);
    for (const auto& [path, value] : model.namedpersistents()) out.values.emplace("updater/model:" + name + path, value);
  }
  return out;
}

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
  chainer::Serializer s = chainer::Serializer::writer();
  trainer.serialize(s);
  chainer::TensorMap entries = s.entries();
  average_persistents(trainer, entries);
  entries[kSizeKey] = chainer::Tensor::scalar(double(comm_->size()), chainer::DType::Int64);
  entries[kPreviousKey] = chainer::Tensor::scalar(double(previous_), chainer::DType::Int64);
  // Durable: written whole under a temporary name (which the checkpoint pattern never matches),
  // synced, renamed, and the directory synced, so the final name only ever holds a complete file
  // and the rename lasts.
  chainer::save_npz((fs::path(path_) / filename(iteration)).string(), entries, /*durable=*/true);
  timings_.push_back({begin, now_seconds() - begin});
  // Sorted: after a restart, a file newer than the resumed iteration may already be held.
  if (const auto at = std::lower_bound(iterations_.begin(), iterations_.end(), iteration);
      at == iterations_.end() || *at != iteration)
    iterations_.insert(at, iteration);
  collect_garbage();
  // collect_garbage's allgather came after every rank's write: this iteration is complete.
  previous_ = iteration;
}

void MultiNodeCheckpointer::average_persistents(chainer::training::Trainer& trainer, chainer::TensorMap& entries) const {
  if (comm_->size() == 1) return;
  // Data-parallel replicas hold the same parameters and optimizer state, but each rank its own
  // running statistics (BatchNormalization's avg_mean and avg_var, gathered from its own share),
  // so their files would differ and could not be mapped to another process count. Their mean
  // over the ranks is what AllreducePersistent gives ChainerMN's users, and the best estimate
  // from every rank's data. Ranks holding different models keep their own: whether the ranks are
  // replicas is decided on digests every rank sees, so every rank takes the same branch.
  const Persistents mine = persistents(trainer);
  uint64_t replica = 0, statistics = 0;
  for (const auto& [key, value] : entries) {
    if (!replica_key(key)) continue;
    const auto persistent = mine.values.find(key);
    replica = digest(replica, str(key, " ", chainer::dtype_name(value.dtype()), " ", chainer::shape_str(value.shape())));
    if (persistent == mine.values.end()) replica = digest(replica, value.raw_data(), value.nbytes());
    else if (chainer::is_floating(value.dtype())) statistics = digest(statistics, value.raw_data(), value.nbytes());
  }
  const std::vector<std::vector<uint64_t>> all = comm_->allgather_obj(std::vector<uint64_t>{replica, statistics});
  bool replicas = true, same_statistics = true;
  for (const auto& other : all) {
    replicas = replicas && other[0] == all[0][0];
    same_statistics = same_statistics && other[1] == all[0][1];
  }
  if (!replicas || same_statistics) return;
  // In place, as AllreducePersistent does, so the training goes on with what the file holds: a
  // resume with the same count then continues bit for bit as the job that saved would have.
  for (chainer::Link* model : mine.models) extensions::allreduce_persistent(*model, *comm_);
  for (const auto& [key, value] : mine.values)
    if (entries.count(key) && chainer::is_floating(value.dtype()))
      entries[key] = value.device().is_cpu() ? value.clone() : value.to(chainer::Device::cpu());
}

std::vector<int64_t> MultiNodeCheckpointer::iterations_every_rank_holds() const {
  const std::vector<std::vector<int64_t>> all = comm_->allgather_obj(iterations_);
  return intersection(all);
}

std::vector<int64_t> MultiNodeCheckpointer::intersection(const std::vector<std::vector<int64_t>>& all) {
  std::vector<int64_t> common = all.empty() ? std::vector<int64_t>{} : all[0];
  for (const auto& other : all) {
    std::vector<int64_t> both;
    std::set_intersection(common.begin(), common.end(), other.begin(), other.end(), std::back_inserter(both));
    common = std::move(both);
  }
  return common;
}

void MultiNodeCheckpointer::collect_garbage() {
  // Whether to collect, and what to keep, are decided on what every rank holds, allgathered after
  // every rank's write: a rank deciding on its own files (more of them after a restart from a
  // job of another count, or after a job killed between two ranks' deletions) would enter a
  // collective that the others never reach.
  std::vector<int64_t> stray;  // rank 0: the iterations of files of ranks this job does not have
  for (const auto& [iteration, ranks] : foreign_) stray.push_back(iteration);
  using Facts = std::pair<std::vector<int64_t>, std::vector<int64_t>>;
  const std::vector<Facts> all = comm_->allgather_obj(Facts{iterations_, stray});
  std::vector<std::vector<int64_t>> held;
  size_t most = 0;
  for (const Facts& facts : all) {
    held.push_back(facts.first);
    most = std::max(most, facts.first.size());
  }
  std::vector<int64_t> common = intersection(held);
  const bool strays = !all[0].second.empty();
  if (common.empty() || (int64_t(most) <= cp_interval_ + gc_interval_ && !strays)) return;
  // Only iterations every rank holds are kept, so no rank deletes the checkpoint a restart needs.
  if (int64_t(common.size()) > cp_interval_) common.erase(common.begin(), common.end() - cp_interval_);
  std::error_code ec;
  for (int64_t it : iterations_)
    if (!std::binary_search(common.begin(), common.end(), it)) fs::remove(fs::path(path_) / filename(it), ec);
  iterations_ = common;
  // The files of an old job's ranks beyond this job's count go with their iterations, once this
  // job has saved a complete set newer than they are.
  for (auto at = foreign_.begin(); at != foreign_.end();) {
    if (std::binary_search(common.begin(), common.end(), at->first)) {
      ++at;
      continue;
    }
    for (int64_t rank : at->second) fs::remove(fs::path(path_) / str(name_, ".", rank, ".", at->first), ec);
    at = foreign_.erase(at);
  }
}

int64_t MultiNodeCheckpointer::maybe_load(chainer::training::Trainer& trainer, chainer::Optimizer* /*optimizer*/,
                                          const std::string& path) {
  if (path_.empty()) path_ = path.empty() ? trainer.out() : path;
  count_change_.reset();
  notice_.clear();
  previous_ = kNone;
  // A save killed before its rename leaves only save_npz's temporary file,
  // NAME.RANK.ITERATION.tmp.PID.N: it is not a checkpoint. Each rank removes its own, and rank 0
  // those of the ranks beyond this job's count (an old job of more processes).
  const int rank = comm_->rank(), size = comm_->size();
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(path_, ec)) {
    const std::string file = entry.path().filename().string();
    const size_t tmp = file.find(".tmp.", name_.size() + 1);
    if (tmp == std::string::npos) continue;
    const int64_t writer = rank_and_iteration(file.substr(0, tmp), name_ + ".").first;
    if (writer >= 0 && (writer == rank || (rank == 0 && writer >= size))) fs::remove(entry.path(), ec);
  }
  // Rank 0 lists the files of the ranks this job does not have: they are collected with their
  // iterations once this job has saved a newer complete set.
  foreign_.clear();
  if (rank == 0)
    for (const auto& [iteration, ranks] : scan())
      for (int64_t r : ranks)
        if (r >= size) foreign_[iteration].push_back(r);

  iterations_ = local_iterations();
  std::vector<int64_t> common = iterations_every_rank_holds();

  // Each rank reads its file of the newest iteration all hold and tells which count wrote it.
  const int64_t latest = common.empty() ? 0 : common.back();
  const std::string file = common.empty() ? "" : (fs::path(path_) / filename(latest)).string();
  const std::string where = str(" from iteration ", latest, " (the newest every rank saved; nothing was loaded)");
  chainer::TensorMap entries;
  int64_t written = 0;
  std::string failure;
  if (!common.empty()) {
    try {
      entries = read_checkpoint(file);
      written = written_size(entries, file);
    } catch (const Error& e) {
      failure = e.what();
    }
  }
  throw_if_any(failure, where);
  bool same_count = !common.empty();
  for (int64_t n : comm_->allgather_obj(written)) same_count = same_count && n == comm_->size();

  // A job of another count may have gone on from the checkpoints this count holds in common:
  // rank 0's newer file says so, and its complete set is resumed from instead.
  const bool newer = comm_->bcast_obj<int64_t>(iterations_.empty() ? 0 : iterations_.back()) > latest;
  int64_t loaded = 0;
  if ((!same_count || newer) && load_remapped(trainer, loaded, same_count ? latest + 1 : 0)) return loaded;
  if (!same_count) {
    // Nothing to resume from: no iteration has the checkpoints of every rank of the job that
    // wrote them. What a job killed in its first save leaves is removed, and the job starts afresh.
    if (discard_interrupted_first_save()) return 0;
    // Checkpoints of another count without a complete set of them.
    std::string mismatch;
    if (!iterations_.empty()) {
      const std::string mine = (fs::path(path_) / filename(iterations_.back())).string();
      try {
        if (const int64_t n = written_size(chainer::load_npz(mine), mine); n != comm_->size())
          mismatch = str("'", mine, "' was written by a job of ", n, " processes");
      } catch (const Error&) {
      }
    }
    throw_if_any(mismatch, "");
    // Checkpoints of this count on some ranks but none that every rank holds, and not only of a
    // first save: a file was lost. Starting afresh would overwrite the other ranks' checkpoints
    // (and collect them), so every rank refuses.
    bool any_held = false;
    for (int64_t n : comm_->allgather_obj(int64_t(iterations_.size() + foreign_.size()))) any_held = any_held || n > 0;
    if (any_held) {
      std::string missing =
          iterations_.empty() ? str("holds no checkpoint in '", path_, "'")
                              : str("holds iterations ", iterations_.front(), " to ", iterations_.back(),
                                    ", none of them saved by every rank");
      if (!foreign_.empty())
        missing += str("; the directory also holds checkpoints of ranks beyond this job's ", size, " (iterations ",
                       foreign_.begin()->first, " to ", foreign_.rbegin()->first, ")");
      throw_if_any(missing, " (a checkpoint file is missing: nothing was loaded or overwritten; restore the file, or "
                            "remove the run's checkpoints to start afresh)");
    }
    return 0;
  }

  // Each rank loads its own file.
  const chainer::training::TrainerState backup(trainer);
  load_on_every_rank(trainer, backup,
                     [&] { chainer::training::load_snapshot(std::move(entries), trainer, file); }, where);
  previous_ = latest;
  return latest;
}

std::map<int64_t, std::set<int64_t>> MultiNodeCheckpointer::scan() const {
  std::map<int64_t, std::set<int64_t>> ranks_at;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(path_.empty() ? "." : path_, ec))
    if (const auto [rank, iteration] = rank_and_iteration(entry.path().filename().string(), name_ + ".");
        rank >= 0 && entry.is_regular_file())
      ranks_at[iteration].insert(rank);
  return ranks_at;
}

bool MultiNodeCheckpointer::discard_interrupted_first_save() {
  // Every checkpoint this job sees (each rank its own, rank 0 also those of ranks beyond this
  // job's count) as {rank, iteration, process count that wrote it, previous iteration}.
  std::vector<std::vector<int64_t>> seen;
  const auto describe = [&](int64_t rank, int64_t iteration) {
    const std::string file = (fs::path(path_) / str(name_, ".", rank, ".", iteration)).string();
    int64_t written = 0, previous = kUnknown;
    try {
      const chainer::TensorMap entries = chainer::load_npz(file);
      written = written_size(entries, file);
      if (const auto at = entries.find(kPreviousKey); at != entries.end() && at->second.numel() == 1)
        previous = int64_t(at->second.item<double>());
    } catch (const Error&) {
    }
    seen.push_back({rank, iteration, written, previous});
  };
  for (int64_t iteration : iterations_) describe(comm_->rank(), iteration);
  for (const auto& [iteration, ranks] : foreign_)
    for (int64_t rank : ranks) describe(rank, iteration);
  std::vector<std::vector<int64_t>> found;
  for (const auto& mine : comm_->allgather_obj(seen)) found.insert(found.end(), mine.begin(), mine.end());
  // Only what a job's first checkpoint leaves when the job is killed while its ranks write it:
  // there was no complete set before (the job had started afresh), so nothing is lost but that
  // one interval. A file whose job had saved or resumed from an earlier iteration means that
  // iteration's files are missing, which the caller refuses.
  if (found.empty()) return false;
  for (const auto& file : found)
    if (file[3] != kNone) return false;
  std::string list;
  std::error_code ec;
  for (const auto& file : found) {
    const std::string name = (fs::path(path_) / str(name_, ".", file[0], ".", file[1])).string();
    list += str(list.empty() ? "" : ", ", "'", name, "' (iteration ", file[1], ", rank ", file[0], " of a job of ",
                file[2], file[2] == 1 ? " process)" : " processes)");
  }
  for (int64_t iteration : iterations_) fs::remove(fs::path(path_) / filename(iteration), ec);
  for (const auto& [iteration, ranks] : foreign_)
    for (int64_t rank : ranks) fs::remove(fs::path(path_) / str(name_, ".", rank, ".", iteration), ec);
  iterations_.clear();
  foreign_.clear();
  notice_ = str("no complete set of checkpoints of run '", name_, "' in '", path_, "', only what the first save of a "
                "job killed part of the way left: ", list, "; removed ", found.size() == 1 ? "it" : "them",
                ", starting afresh");
  if (comm_->rank() == 0) std::cout << "MultiNodeCheckpointer: " << notice_ << std::endl;
  return true;
}

void MultiNodeCheckpointer::load_on_every_rank(chainer::training::Trainer& trainer,
                                               const chainer::training::TrainerState& backup,
                                               const std::function<void()>& load, const std::string& where) const {
  std::string failure;
  try {
    load();
  } catch (const Error& e) {
    failure = e.what();
  }
  try {
    throw_if_any(failure, where);
  } catch (const Error&) {
    // Every rank puts its state back, also one whose load failed part of the way (lazily sized
    // layers the load initialized become uninitialized again).
    backup.restore();
    throw;
  }
  // Debug mode: the ranks of a data-parallel job must now hold the same parameters. Only the
  // multi-node optimizers' models are compared; a model-parallel job's ranks differ by design.
  for (const auto& [name, optimizer] : trainer.updater().get_all_optimizers())
    if (auto* mn = dynamic_cast<MultiNodeOptimizer*>(optimizer);
        mn && mn->communicator().debug() && mn->communicator().averages_gradients())
      mn->communicator().check_params_consistent(
          mn->target(), str("MultiNodeCheckpointer.maybe_load: run '", name_, "' after its load (optimizer '", name, "')"));
}

void MultiNodeCheckpointer::set_scatter(int64_t n_total, bool shuffle, uint64_t seed, bool force_equal_length,
                                        std::string iterator) {
  if (n_total < 0) throw Error(str("MultiNodeCheckpointer.set_scatter: n_total must be at least 0, got ", n_total));
  scatter_ = Scatter{n_total, shuffle, seed, force_equal_length, std::move(iterator)};
}

struct MultiNodeCheckpointer::Remap {
  std::string failure;      // why the checkpoints cannot be mapped (empty: they can)
  int64_t iteration = -1;   // -1: no complete set of checkpoints of another count
  int64_t old_size = 0;
  std::string source;       // old rank 0's file
  chainer::TensorMap entries;  // its contents
  std::vector<std::vector<int64_t>> rest;  // R_k of every new rank; empty when there is no interrupted epoch
};

namespace {

const std::string kIteratorPrefix = "updater/iterator:";

bool same_bits(const chainer::Tensor& a, const chainer::Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

// The first replica entry, persistent values (the keys of SKIP) aside, in which THEIRS (old rank
// R's file) differs from OURS (old rank 0's): which entry, and how; empty if none.
std::string first_difference(const chainer::TensorMap& ours, const chainer::TensorMap& theirs,
                             const std::set<std::string>& skip, int64_t r) {
  const auto compared = [&](const std::string& key) { return replica_key(key) && !skip.count(key); };
  auto a = ours.begin(), b = theirs.begin();
  while (true) {
    while (a != ours.end() && !compared(a->first)) ++a;
    while (b != theirs.end() && !compared(b->first)) ++b;
    if (a == ours.end() || b == theirs.end()) break;
    if (a->first != b->first) break;
    if (!same_bits(a->second, b->second)) {
      const chainer::Tensor &x = a->second, &y = b->second;
      if (x.dtype() != y.dtype() || x.shape() != y.shape())
        return str("'", a->first, "' is ", chainer::dtype_name(x.dtype()), " ", chainer::shape_str(x.shape()),
                   " in old rank 0's and ", chainer::dtype_name(y.dtype()), " ", chainer::shape_str(y.shape()),
                   " in old rank ", r, "'s");
      const std::vector<double> u = x.to_vector<double>(), v = y.to_vector<double>();
      size_t worst = 0;
      for (size_t i = 1; i < u.size(); ++i)
        if (std::abs(u[i] - v[i]) > std::abs(u[worst] - v[worst]) || u[worst] == v[worst]) worst = i;
      return str("'", a->first, "' differs: element ", worst, " is ", u[worst], " in old rank 0's and ", v[worst],
                 " in old rank ", r, "'s");
    }
    ++a, ++b;
  }
  if (a == ours.end() && b == theirs.end()) return "";
  const bool only_ours = b == theirs.end() || (a != ours.end() && a->first < b->first);
  return str("'", only_ours ? a->first : b->first, "' is in old rank ", only_ours ? "0" : str(r), "'s and not in old rank ",
             only_ours ? str(r) : "0", "'s");
}

int64_t integer(const chainer::TensorMap& entries, const std::string& key, const std::string& file) {
  const auto it = entries.find(key);
  if (it == entries.end() || it->second.numel() != 1)
    throw Error(str("'", file, "' has no entry '", key, "'"));
  return int64_t(it->second.item<double>());
}

std::vector<int64_t> integers(const chainer::TensorMap& entries, const std::string& key) {
  const auto it = entries.find(key);
  return it == entries.end() ? std::vector<int64_t>{} : it->second.to_vector<int64_t>();
}

}  // namespace

MultiNodeCheckpointer::Remap MultiNodeCheckpointer::plan_remap(int64_t after,
                                                               const std::set<std::string>& persistent) const {
  Remap plan;
  // Every checkpoint of this run in the directory: iteration -> the ranks that wrote one.
  const std::map<int64_t, std::set<int64_t>> ranks_at = scan();
  const int size = comm_->size();
  for (auto at = ranks_at.rbegin(); at != ranks_at.rend() && at->first >= after; ++at) {
    if (!at->second.count(0)) continue;
    const auto file_of = [&](int64_t rank) { return (fs::path(path_) / str(name_, ".", rank, ".", at->first)).string(); };
    try {
      plan.source = file_of(0);
      plan.entries = read_checkpoint(plan.source);
      plan.old_size = written_size(plan.entries, plan.source);
      bool complete = plan.old_size != size;  // this count's own checkpoints are loaded without mapping
      for (int64_t r = 0; r < plan.old_size; ++r) complete = complete && at->second.count(r);
      if (!complete) continue;
      plan.iteration = at->first;

      // The replicas must agree; meanwhile, what each old rank had yet to visit of its epoch.
      const std::string scattered = scatter_ ? kIteratorPrefix + scatter_->iterator + "/" : "";
      if (scatter_ && !plan.entries.count(scattered + "current_position"))
        throw Error(str("set_scatter names the iterator '", scatter_->iterator, "' but '", plan.source,
                        "' has no entry '", scattered, "current_position'"));
      std::vector<int64_t> unvisited;  // U, as global example ids
      bool interrupted = false;
      std::string differences;  // every old rank whose model or optimizer state is not old rank 0's
      for (int64_t r = 0; r < plan.old_size; ++r) {
        const std::string f = file_of(r);
        chainer::TensorMap other = r == 0 ? chainer::TensorMap{} : read_checkpoint(f);
        const chainer::TensorMap& entries = r == 0 ? plan.entries : other;
        // Persistent values (running statistics) may differ: they come from old rank 0's file.
        if (r > 0)
          if (const std::string how = first_difference(plan.entries, entries, persistent, r); !how.empty())
            differences += str(differences.empty() ? "" : "; ", "old rank ", r, "'s '", f, "': ", how);
        if (!scatter_) continue;
        const int64_t position = integer(entries, scattered + "current_position", f);
        interrupted = interrupted || position > 0;
        const auto [b, e] = scatter_index_table(scatter_->n_total, int(plan.old_size), scatter_->force_equal_length)[size_t(r)];
        // The old rank's epoch: continue_epoch_over's list, or its order, or its share in order.
        const std::vector<int64_t> given = integers(entries, scattered + "epoch_indices");
        std::vector<int64_t> sequence = given.empty() ? integers(entries, scattered + "order") : given;
        if (given.empty() && !sequence.empty() && int64_t(sequence.size()) != e - b)
          throw Error(str("old rank ", r, "'s iterator '", scatter_->iterator, "' in '", f, "' has an order of ",
                          sequence.size(), " examples, but set_scatter's n_total ", scatter_->n_total, " gives it ",
                          e - b, " over ", plan.old_size, " processes (set_scatter must repeat scatter_dataset's "
                          "arguments)"));
        if (sequence.empty())
          for (int64_t j = 0; j < e - b; ++j) sequence.push_back(j);
        if (position > int64_t(sequence.size()))
          throw Error(str("'", f, "' has position ", position, " in an epoch of ", sequence.size(), " examples"));
        const std::vector<int64_t> share = share_indices(scatter_->n_total, int(plan.old_size), int(r),
                                                         scatter_->shuffle, scatter_->seed,
                                                         scatter_->force_equal_length);
        for (size_t q = size_t(position); q < sequence.size(); ++q) {
          if (sequence[q] < 0 || sequence[q] >= e - b)
            throw Error(str("'", f, "' has index ", sequence[q], " outside its share of ", e - b, " examples"));
          unvisited.push_back(share[size_t(sequence[q])]);
        }
      }
      if (!differences.empty())
        throw Error(str("the model and optimizer state, which a job of another process count takes from old rank 0's '",
                        plan.source, "', must be the same bit for bit in every old rank's file (persistent values "
                        "aside), and is not: ", differences));
      if (!interrupted) return plan;

      // Each new rank takes, in its share's order, the unvisited examples its share holds, each
      // occurrence once; a pass takes at most one occurrence per slot, so an example left twice
      // (the padding of the old shares) takes a second pass.
      std::vector<int64_t> count(size_t(scatter_->n_total), 0);
      for (int64_t id : unvisited) ++count[size_t(id)];
      std::vector<std::vector<int64_t>> shares, taken;
      for (int k = 0; k < size; ++k) {
        shares.push_back(share_indices(scatter_->n_total, size, k, scatter_->shuffle, scatter_->seed,
                                       scatter_->force_equal_length));
        taken.emplace_back(shares.back().size(), 0);
      }
      for (size_t left = unvisited.size(); left > 0;) {
        const size_t before = left;
        for (int k = 0; k < size; ++k)
          for (size_t j = 0; j < shares[size_t(k)].size(); ++j)
            if (int64_t& c = count[size_t(shares[size_t(k)][j])]; c > 0) --c, ++taken[size_t(k)][j], --left;
        CHAINER_ASSERT(left < before, "the new shares do not cover example ids the old ones held");
      }
      plan.rest.resize(size_t(size));
      for (int k = 0; k < size; ++k)
        for (size_t j = 0; j < taken[size_t(k)].size(); ++j)
          plan.rest[size_t(k)].insert(plan.rest[size_t(k)].end(), size_t(taken[size_t(k)][j]), int64_t(j));
      return plan;
    } catch (const Error& e) {
      plan.failure = e.what();
      plan.iteration = at->first;
      return plan;
    }
  }
  plan.iteration = -1;
  return plan;
}

bool MultiNodeCheckpointer::load_remapped(chainer::training::Trainer& trainer, int64_t& loaded, int64_t after) {
  // Rank 0 plans; everyone learns the plan.
  Remap plan;
  if (comm_->rank() == 0) {
    try {
      std::set<std::string> persistent;
      for (const auto& [key, value] : persistents(trainer).values) persistent.insert(key);
      plan = plan_remap(after, persistent);
    } catch (const std::exception& e) {
      plan.failure = e.what();
      plan.iteration = 0;
    }
  }
  using Header = std::pair<std::pair<std::string, std::string>, std::vector<int64_t>>;
  const Header header = comm_->bcast_obj(
      Header{{plan.failure, plan.source}, {plan.iteration, plan.old_size}});
  plan.failure = header.first.first;
  plan.source = header.first.second;
  plan.iteration = header.second[0];
  plan.old_size = header.second[1];
  if (plan.iteration < 0) return false;
  if (!plan.failure.empty())
    throw Error(str("MultiNodeCheckpointer.maybe_load: cannot resume run '", name_, "' from iteration ",
                    plan.iteration, plan.old_size > 0 ? str(" of a job of ", plan.old_size, " processes") : "",
                    " in a job of ", comm_->size(), " (nothing was loaded): ", plan.failure));
  plan.entries = comm_->bcast_obj(plan.entries);
  plan.rest = comm_->bcast_obj(plan.rest);

  // Old rank 0's state, but every iterator keeps this rank's own order and random state at the
  // old epoch: its share and its length differ from any old rank's.
  const chainer::training::TrainerState backup(trainer);
  chainer::TensorMap entries = plan.entries;
  std::set<std::string> iterators;  // "updater/iterator:NAME/"
  for (auto it = entries.begin(); it != entries.end();)
    it = it->first.rfind(kIteratorPrefix, 0) == 0 ? entries.erase(it) : std::next(it);
  for (const auto& [key, value] : backup.entries())
    if (key.rfind(kIteratorPrefix, 0) == 0) {
      entries[key] = value;
      iterators.insert(key.substr(0, key.find('/', kIteratorPrefix.size()) + 1));
    }
  for (const std::string& prefix : iterators) {
    const auto old = [&](const char* key) { return plan.entries.find(prefix + key); };
    if (old("epoch") == plan.entries.end() || old("current_position") == plan.entries.end()) continue;
    entries[prefix + "epoch"] = old("epoch")->second;
    if (old("is_new_epoch") != plan.entries.end()) entries[prefix + "is_new_epoch"] = old("is_new_epoch")->second;
    // An interrupted epoch restarts at position 0, so the previous detail is its start.
    if (old("current_position")->second.item<double>() > 0)
      entries[prefix + "previous_epoch_detail"] = chainer::Tensor::scalar(old("epoch")->second.item<double>(), chainer::DType::Float64);
    else if (old("previous_epoch_detail") != plan.entries.end())
      entries[prefix + "previous_epoch_detail"] = old("previous_epoch_detail")->second;
  }

  const int rank = comm_->rank();
  ProcessCountChange change;
  change.old_size = plan.old_size;
  change.iteration = plan.iteration;
  load_on_every_rank(trainer, backup, [&] {
    chainer::training::load_snapshot(std::move(entries), trainer, plan.source);
    const std::string name = scatter_ ? scatter_->iterator : "main";
    chainer::iterators::Iterator& iterator = trainer.updater().get_iterator(name);
    change.epoch = iterator.epoch();
    if (!plan.rest.empty()) {
      for (const auto& r : plan.rest) change.epoch_length = std::max(change.epoch_length, int64_t(r.size()));
      change.rest_of_epoch = plan.rest[size_t(rank)];
      std::vector<int64_t> from = change.rest_of_epoch;
      if (from.empty()) {  // repeats the first examples of its share
        const auto [b, e] = scatter_index_table(scatter_->n_total, comm_->size(), scatter_->force_equal_length)[size_t(rank)];
        for (int64_t j = 0; j < e - b; ++j) from.push_back(j);
        if (from.empty())
          throw Error(str("rank ", rank, "'s share of ", scatter_->n_total, " examples is empty and cannot pad the "
                          "interrupted epoch"));
      }
      std::vector<int64_t> padded;
      for (int64_t i = 0; i < change.epoch_length; ++i) padded.push_back(from[size_t(i) % from.size()]);
      iterator.continue_epoch_over(std::move(padded));
    }
    const int64_t b = iterator.batch_size(), n = plan.old_size, m = comm_->size();
    change.message = str("resumed from ", n, " processes at iteration ", plan.iteration, " (epoch ", change.epoch,
                         "); the global batch was ", n, "*", b, " = ", n * b, ", now ", m, "*", b, " = ", m * b);
    if (!scatter_) change.message += "; the interrupted epoch starts again over the new shares (set_scatter was not called)";
  }, str(" from iteration ", plan.iteration, " of a job of ", plan.old_size, " processes (nothing was loaded)"));
  if (rank == 0) std::cout << "MultiNodeCheckpointer: " << change.message << std::endl;
  count_change_ = std::move(change);
  loaded = plan.iteration;
  previous_ = plan.iteration;
  return true;
}

void MultiNodeCheckpointer::throw_if_any(const std::string& failure, const std::string& where) const {
  const std::vector<std::string> statuses = comm_->allgather_bytes(failure);
  std::string errors;
  for (size_t r = 0; r < statuses.size(); ++r)
    if (!statuses[r].empty()) errors += str(errors.empty() ? "" : "; ", "rank ", r, ": ", statuses[r]);
  if (errors.empty()) return;
  if (errors.find("was written by a job of") != std::string::npos)
    errors += str("; this job has ", comm_->size(), ", and rank 0 finds no iteration with the checkpoints of every "
                  "rank of the job that wrote them in '", path_, "' (a job of another process count resumes from a "
                  "complete set that rank 0 reads)");
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
