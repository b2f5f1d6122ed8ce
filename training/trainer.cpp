#include "training/trainer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "core/io/npz.h"
#include "core/util/random.h"

namespace chainer::training {

Trainer::Trainer(std::shared_ptr<Updater> updater, Trigger stop_trigger, std::string out)
    : updater_(std::move(updater)), stop_trigger_(std::move(stop_trigger)), out_(std::move(out)) {
  if (!updater_) throw Error("Trainer: the updater is null");
  // Each optimizer's target and its links report under the optimizer's name ("gen/loss"). A link
  // reachable from two optimizers keeps the first name it got, "main" first: registering
  // another optimizer must not move the main model's entries of the log.
  std::map<std::string, Optimizer*> optimizers = updater_->get_all_optimizers();
  std::vector<std::pair<std::string, Optimizer*>> order;
  if (auto main = optimizers.find("main"); main != optimizers.end()) order.emplace_back(*main);
  for (auto& entry : optimizers)
    if (entry.first != "main") order.push_back(entry);
  for (auto& [name, opt] : order) {
    Link& target = opt->target();
    reporter_.add_observer_once(name, &target);
    for (auto& [path, link] : target.namedlinks(true)) reporter_.add_observer_once(name + path, link);
  }
}

void Trainer::extend(std::shared_ptr<Extension> ext, std::string name, OptionalTrigger trigger,
                     std::optional<int> priority) {
  if (!ext) throw Error("Trainer.extend: the extension is null");
  if (name.empty()) name = ext->default_name();
  std::string unique = name;
  for (int k = 1; std::any_of(extensions_.begin(), extensions_.end(), [&](const Entry& e) { return e.name == unique; }); ++k)
    unique = name + "_" + std::to_string(k);
  extensions_.push_back({unique, ext, trigger ? std::move(*trigger) : ext->default_trigger(), priority.value_or(ext->priority())});
  // Stable: extensions of equal priority run in the order they were added.
  std::stable_sort(extensions_.begin(), extensions_.end(), [](const Entry& a, const Entry& b) { return a.priority > b.priority; });
}

void Trainer::extend(std::function<void(Trainer&)> function, std::string name, OptionalTrigger trigger,
                     std::optional<int> priority) {
  if (!function) throw Error("Trainer.extend: the function is empty");
  extend(make_extension(std::move(function)), std::move(name), std::move(trigger), priority);
}

Extension& Trainer::get_extension(const std::string& name) {
  for (Entry& e : extensions_)
    if (e.name == name) return *e.extension;
  throw Error(str("Trainer: no extension named '", name, "'"));
}

double Trainer::elapsed_time() const {
  if (!running_) return elapsed_before_;
  return elapsed_before_ + std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Trainer::run() {
  if (running_) throw Error("Trainer.run: the trainer is already running");
  std::error_code ec;
  std::filesystem::create_directories(out_, ec);
  const std::string probe = (std::filesystem::path(out_) / ".write_test").string();
  if (ec || !std::ofstream(probe))
    throw Error(str("Trainer: cannot write to the output directory '", out_, "'",
                    ec ? " (" + ec.message() + ")" : std::string(), "; pass a writable directory with -o/--out"));
  std::filesystem::remove(probe, ec);

  start_ = std::chrono::steady_clock::now();
  running_ = true;
  // As Chainer's: an extension whose trigger will not fire again (a resumed run past the last
  // point of a ManualScheduleTrigger) is not initialized.
  for (Entry& e : extensions_)
    if (!e.trigger.finished()) e.extension->initialize(*this);
  try {
    while (!stop_trigger_(*this)) {
      observation_.clear();
      Reporter::Scope scope(reporter_, observation_);
      updater_->update();
      for (Entry& e : extensions_)
        if (e.trigger(*this)) (*e.extension)(*this);
    }
  } catch (...) {
    for (Entry& e : extensions_) e.extension->finalize();
    updater_->finalize();
    elapsed_before_ = elapsed_time();
    running_ = false;
    throw;
  }
  for (Entry& e : extensions_) e.extension->finalize();
  updater_->finalize();
  elapsed_before_ = elapsed_time();
  running_ = false;
}

namespace {

// What a counter of a snapshot must hold.
enum class Counter {
  Count,     // a whole number of iterations, epochs, examples or steps
  Flag,      // 0 or 1
  Position,  // a non-negative number (an epoch_detail, seconds)
  Finite,    // any finite number (a previous_epoch_detail: negative for none, as Chainer stores it)
};

// Triggers and epoch_detail count with doubles, exact up to 2^53: a larger count is no real
// run's, and a double could not tell it from its neighbours.
constexpr double kMaxCount = 9007199254740992.0;

// Whether KEY, relative to the trainer's root, is a counter, and which kind. Only the entries
// the trainer, the updater, its iterators and optimizers and the triggers own: an extension's
// own entries may mean anything.
std::optional<Counter> counter_kind(const std::string& key) {
  std::vector<std::string_view> parts;
  for (size_t at = 0;;) {
    const size_t slash = key.find('/', at);
    parts.push_back(std::string_view(key).substr(at, slash == std::string::npos ? std::string::npos : slash - at));
    if (slash == std::string::npos) break;
    at = slash + 1;
  }
  const std::string_view leaf = parts.back();
  if (key == "updater/iteration") return Counter::Count;
  if (key == "elapsed_time") return Counter::Position;
  if (parts.size() == 3 && parts[0] == "updater" && parts[1].starts_with("iterator:")) {
    if (leaf == "epoch" || leaf == "current_position") return Counter::Count;
    if (leaf == "epoch_detail") return Counter::Position;
    if (leaf == "previous_epoch_detail") return Counter::Finite;
    if (leaf == "is_new_epoch" || leaf == "has_next") return Counter::Flag;
  }
  if (parts.size() >= 3 && parts[0] == "updater" && parts[1].starts_with("optimizer:")) {
    if (parts.size() == 3 && (leaf == "t" || leaf == "epoch")) return Counter::Count;
    if (parts.size() > 3 && leaf == "t") return Counter::Count;  // one parameter's steps
  }
  if ((parts.size() == 2 && parts[0] == "stop_trigger") || (parts.size() == 3 && parts[0] == "extension_triggers")) {
    if (leaf == "previous" || leaf == "previous_epoch_detail") return Counter::Position;
    if (leaf == "previous_iteration") return Counter::Count;
    if (leaf == "next_time") return Counter::Position;  // TimeTrigger's
    if (leaf == "_flag_first") return Counter::Flag;  // OnceTrigger's
  }
  return std::nullopt;
}

// Throws, naming the entry and its value, when a counter under S's prefix holds what no run
// writes (an iteration of -5, an epoch of 1e30, a NaN elapsed time): a counter loaded as it is
// would resume training from a position that does not exist, or wrap around in an int64.
void check_counters(const Serializer& s) {
  const std::string& prefix = s.prefix();
  for (auto it = s.entries().lower_bound(prefix); it != s.entries().end() && it->first.starts_with(prefix); ++it) {
    const std::optional<Counter> kind = counter_kind(it->first.substr(prefix.size()));
    if (!kind) continue;
    const Tensor& t = it->second;
    if (t.numel() != 1)
      throw Error(str("deserialize: the counter '", it->first, "' holds ", t.numel(), " values; one was expected"));
    const bool integer = t.dtype() == DType::Int64 || t.dtype() == DType::Int32 || t.dtype() == DType::UInt8;
    const Tensor c = t.contiguous();
    const double v = t.dtype() == DType::Int64 ? double(*c.data<int64_t>()) : c.item_double();
    const std::string shown = t.dtype() == DType::Int64 ? std::to_string(*c.data<int64_t>()) : str(v);
    // An int64 just above 2^53 rounds to 2^53 as a double: compared as an integer.
    const bool too_big = t.dtype() == DType::Int64 ? *c.data<int64_t>() > (int64_t(1) << 53) : v > kMaxCount;
    const char* expected = nullptr;
    switch (*kind) {
      case Counter::Count:
        if (!(v >= 0 && !too_big && (integer || v == std::floor(v)))) expected = "a whole number from 0 to 2^53";
        break;
      case Counter::Flag:
        if (v != 0 && v != 1) expected = "0 or 1";
        break;
      case Counter::Position:
        if (!(v >= 0 && !too_big)) expected = "a number from 0 to 2^53";
        break;
      case Counter::Finite:
        if (!std::isfinite(v)) expected = "a finite number";
        break;
    }
    if (expected) throw Error(str("deserialize: the counter '", it->first, "' holds ", shown, "; ", expected, " was expected"));
  }
}

}  // namespace

void Trainer::serialize(Serializer& s) {
  // Checked before anything is read, so a snapshot with an impossible position loads nothing.
  if (s.is_reader()) check_counters(s);
  Serializer u = s["updater"];
  updater_->serialize(u);
  Serializer st = s["stop_trigger"];
  stop_trigger_.serialize(st);
  for (Entry& e : extensions_) {
    Serializer ext = s["extensions"][e.name];
    e.extension->serialize(ext);
    Serializer trig = s["extension_triggers"][e.name];
    e.trigger.serialize(trig);
  }
  double elapsed = elapsed_time();
  s.value("elapsed_time", elapsed);
  if (s.is_reader()) elapsed_before_ = elapsed;
  // The default generator drives dropout and initializers; restoring it makes a resumed run
  // continue exactly as an uninterrupted one.
  std::vector<uint64_t> rng = random::default_generator().state();
  s.value("random/default_generator", rng);
  if (s.is_reader()) random::default_generator().set_state(rng);
}

void load_snapshot(const std::string& path, Trainer& trainer) {
  if (!std::filesystem::exists(path)) throw Error(str("resume: the snapshot '", path, "' does not exist"));
  if (std::filesystem::is_directory(path))
    throw Error(str("resume: '", path, "' is a directory; give a snapshot file written by the snapshot extension, such as ",
                    (std::filesystem::path(path) / "snapshot_iter_600").string()));
  TensorMap entries;
  try {
    entries = load_npz(path);
  } catch (const Error& e) {
    throw Error(str("resume: cannot read the snapshot '", path, "': ", e.what()));
  }
  load_snapshot(std::move(entries), trainer, path);
}

void load_snapshot(TensorMap entries, Trainer& trainer, const std::string& source) {
  // All or nothing: a snapshot that does not match (a missing entry, another shape) is found
  // part way through, so the trainer's state is copied first and put back on failure.
  const TrainerState before(trainer);
  Serializer s = Serializer::reader(std::move(entries));
  try {
    trainer.serialize(s);
  } catch (const Error& e) {
    before.restore();
    throw Error(str("resume: the snapshot '", source, "' does not match this trainer (nothing was loaded): ", e.what()));
  }
}

TrainerState::TrainerState(Trainer& trainer) : trainer_(&trainer) {
  Serializer s = Serializer::writer();
  trainer.serialize(s);
  entries_ = s.entries();
  for (auto& [name, optimizer] : trainer.updater().get_all_optimizers())
    for (auto& [param_name, p] : optimizer->target().namedparams())
      if (!p.data().defined()) uninitialized_.push_back(p);
}

void TrainerState::restore() const {
  // Not strict: the entries are this trainer's own, and the only ones they lack are those of
  // the parameters that were not initialized (nothing to save), which become so again below.
  Serializer s = Serializer::reader(entries_, "", false);
  trainer_->serialize(s);
  for (Variable p : uninitialized_) p.set_data(Tensor());
}

}  // namespace chainer::training
