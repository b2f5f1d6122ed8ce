/// @file
/// Extension: something the trainer runs at the iterations its trigger selects (reports,
/// evaluation, snapshots). Higher priority runs first within an iteration, as in Chainer:
/// writers (evaluators) before editors before readers (LogReport, PrintReport, snapshots).
/// make_extension turns a function (a lambda) into one, as Chainer's `@make_extension`.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "core/io/serializer.h"
#include "training/trigger.h"

namespace chainer::training {

class Trainer;

constexpr int PRIORITY_WRITER = 300;  ///< Priority of extensions that add to the observation (evaluators).
constexpr int PRIORITY_EDITOR = 200;  ///< Priority of extensions that edit what writers reported.
constexpr int PRIORITY_READER = 100;  ///< Priority of extensions that only read the observation (the default).

/// Something the trainer runs when its trigger fires, as `chainer.training.Extension`.
class Extension {
 public:
  virtual ~Extension() = default;
  /// Runs the extension on TRAINER at an iteration its trigger selected.
  virtual void operator()(Trainer& trainer) = 0;
  /// The name Trainer::extend registers it under when none is given.
  virtual std::string default_name() const = 0;
  /// The trigger Trainer::extend uses when none is given (Extension's own: every iteration).
  virtual Trigger default_trigger() const { return IntervalTrigger(1, Unit::Iteration); }
  /// The priority Trainer::extend uses when none is given (Extension's own: PRIORITY_READER).
  /// Higher runs first within an iteration.
  virtual int priority() const { return PRIORITY_READER; }
  /// Called once when the trainer starts (after a resume, too).
  virtual void initialize(Trainer& /*trainer*/) {}
  /// Called once when training ends, normally or by an exception.
  virtual void finalize() {}
  /// Saves or restores the extension's state in a snapshot (Extension's own saves nothing).
  virtual void serialize(Serializer& /*s*/) {}
};

/// Chainer's keyword arguments of make_extension: what an extension class would override.
struct MakeExtensionOptions {
  Trigger trigger = IntervalTrigger(1, Unit::Iteration);  ///< The default trigger.
  /// The default name; empty: "<lambda>", the name Chainer gives a lambda.
  std::string default_name = "";
  int priority = PRIORITY_READER;  ///< The default priority; higher runs first within an iteration.
  std::function<void()> finalizer = {};  ///< Called once when training ends (Extension::finalize); may be empty.
  /// Called once when training starts (Extension::initialize); may be empty.
  std::function<void(Trainer&)> initializer = {};
};

/// FUNCTION as an extension, run on the trainer whenever its trigger fires, as Chainer's
/// `@training.make_extension(trigger=..., default_name=..., priority=..., finalizer=...,
/// initializer=...)` decorating a function:
///
///     trainer.extend(training::make_extension([](Trainer& t) { ... }, {.trigger = {1, Unit::Epoch}}));
///
/// It saves no state of its own in snapshots. Trainer::extend also takes a function directly.
std::shared_ptr<Extension> make_extension(std::function<void(Trainer&)> function, MakeExtensionOptions options = {});

}  // namespace chainer::training
