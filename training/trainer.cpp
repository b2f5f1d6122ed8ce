#include "training/trainer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "core/npz.h"
#include "core/random.h"

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

void Trainer::serialize(Serializer& s) {
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
