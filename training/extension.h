// Extension: something the trainer runs at the iterations its trigger selects (reports,
// evaluation, snapshots). Higher priority runs first within an iteration, as in Chainer:
// writers (evaluators) before editors before readers (LogReport, PrintReport, snapshots).
#pragma once
#include <string>

#include "core/serializer.h"
#include "training/trigger.h"

namespace chainer::training {

class Trainer;

constexpr int PRIORITY_WRITER = 300;
constexpr int PRIORITY_EDITOR = 200;
constexpr int PRIORITY_READER = 100;

class Extension {
 public:
  virtual ~Extension() = default;
  virtual void operator()(Trainer& trainer) = 0;
  virtual std::string default_name() const = 0;
  virtual IntervalTrigger default_trigger() const { return IntervalTrigger(1, Unit::Iteration); }
  virtual int priority() const { return PRIORITY_READER; }
  // Called once when the trainer starts (after a resume, too).
  virtual void initialize(Trainer& trainer) {}
  // Called once when training ends, normally or by an exception.
  virtual void finalize() {}
  virtual void serialize(Serializer& s) {}
};

}  // namespace chainer::training
