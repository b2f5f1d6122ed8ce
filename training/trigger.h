/// @file
/// Triggers decide when extensions run and when training stops, as chainer.training.triggers.
/// IntervalTrigger(1, Unit::Epoch) fires each time the epoch count crosses a multiple of the
/// period, so it fires once even if an epoch ends in the middle of a batch. Trigger holds any
/// trigger, as Chainer's `get_trigger` accepts an IntervalTrigger, a `(period, unit)` pair or
/// any callable: the trainer, Trainer::extend and the extensions take and keep Triggers.
#pragma once
#include <concepts>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "core/io/serializer.h"

namespace chainer::training {

class Trainer;

/// The unit a trigger's period counts in.
enum class Unit { Epoch, Iteration };
Unit parse_unit(const std::string& unit);  ///< The Unit named "epoch" or "iteration"; anything else throws.

/// How long training runs, as the `(length, unit)` pair of Chainer's `get_training_length()`:
/// what ProgressBar draws its overall bar against.
struct TrainingLength {
  double length;  ///< The length, in unit.
  Unit unit;      ///< What the length counts.
  std::string str() const;  ///< The length in words, e.g. "20 epochs".
};

/// Fires every PERIOD epochs or iterations, as `chainer.training.triggers.IntervalTrigger`.
class IntervalTrigger {
 public:
  /// A trigger firing every PERIOD units; PERIOD must be positive.
  IntervalTrigger(double period = 1, Unit unit = Unit::Iteration);
  /// Whether training crossed a multiple of the period since the last call.
  bool operator()(const Trainer& trainer);
  /// Where training stands in this trigger's unit (epochs as a fraction, or iterations).
  double position(const Trainer& trainer) const;
  void serialize(Serializer& s);  ///< Saves or restores the position at the last call.
  double period() const { return period_; }  ///< The period, in unit().
  Unit unit() const { return unit_; }  ///< What the period counts.
  std::string str() const;  ///< The trigger in words, e.g. "20 epochs".
  /// One period, as Chainer's `get_training_length()`: used as a stop trigger, training runs that long.
  TrainingLength training_length() const { return {period_, unit_}; }

 private:
  double period_;
  Unit unit_;
  double previous_ = 0;
};

class Trigger;

/// What Trigger holds: an object with `bool operator()(const Trainer&)`, copyable, and optionally
/// `void serialize(Serializer&)` (its state in snapshots), `training_length()` (a TrainingLength,
/// or an optional one) and `bool finished() const` (it will never fire again).
template <class T>
concept TriggerFunction = !std::same_as<T, Trigger> &&
                          requires(T& t, const Trainer& trainer) {
                            { t(trainer) } -> std::convertible_to<bool>;
                          };

/// Any trigger, by value (type erasure): an IntervalTrigger, `{period, unit}`, or any
/// TriggerFunction, such as ManualScheduleTrigger, MinValueTrigger or a lambda. Copying a Trigger
/// copies the trigger with its state, as copying an IntervalTrigger does; target<T>() reaches
/// the held trigger (the trainer's stop trigger, say, to read an EarlyStoppingTrigger's count).
class Trigger {
 public:
  /// An IntervalTrigger(PERIOD, UNIT): what `{1, Unit::Epoch}` makes, as Chainer's `(1, 'epoch')`.
  Trigger(double period, Unit unit) : Trigger(IntervalTrigger(period, unit)) {}  // NOLINT: braces convert
  /// Holds a copy of TRIGGER.
  template <TriggerFunction T>
  Trigger(T trigger) : self_(std::make_unique<Model<T>>(std::move(trigger))) {}  // NOLINT: any trigger converts
  /// A copy of OTHER's trigger, state included.
  Trigger(const Trigger& other) : self_(other.self_->clone()) {}
  Trigger(Trigger&&) noexcept = default;  ///< Takes OTHER's trigger.
  /// Copies OTHER's trigger, state included.
  Trigger& operator=(const Trigger& other) {
    if (this != &other) self_ = other.self_->clone();
    return *this;
  }
  Trigger& operator=(Trigger&&) noexcept = default;  ///< Takes OTHER's trigger.

  /// Whether the trigger fires at TRAINER's current iteration (called once per iteration).
  bool operator()(const Trainer& trainer) { return self_->call(trainer); }
  /// Saves or restores the held trigger's state (nothing for a trigger without serialize()).
  void serialize(Serializer& s) { self_->serialize(s); }
  /// The held trigger's training_length(), as Chainer's `get_training_length()`; nullopt when it has none.
  std::optional<TrainingLength> training_length() const { return self_->training_length(); }
  /// Whether the held trigger says it will never fire again (false for one without finished()):
  /// the trainer then skips its extension's initialize(), as Chainer's.
  bool finished() const { return self_->finished(); }
  /// The held trigger when it is a T, else null.
  template <class T>
  T* target() {
    auto* model = dynamic_cast<Model<T>*>(self_.get());
    return model ? &model->trigger : nullptr;
  }
  /// The held trigger when it is a T, else null.
  template <class T>
  const T* target() const {
    auto* model = dynamic_cast<const Model<T>*>(self_.get());
    return model ? &model->trigger : nullptr;
  }

 private:
  struct Concept {
    virtual ~Concept() = default;
    virtual bool call(const Trainer& trainer) = 0;
    virtual void serialize(Serializer& s) = 0;
    virtual std::optional<TrainingLength> training_length() const = 0;
    virtual bool finished() const = 0;
    virtual std::unique_ptr<Concept> clone() const = 0;
  };
  template <class T>
  struct Model final : Concept {
    // Checked here rather than in TriggerFunction: a trigger holding Triggers and constructible
    // from one (EarlyStoppingTrigger) would make the concept depend on itself.
    static_assert(std::is_copy_constructible_v<T>, "a Trigger holds a copyable trigger");
    explicit Model(T t) : trigger(std::move(t)) {}
    bool call(const Trainer& trainer) override { return bool(trigger(trainer)); }
    void serialize(Serializer& s) override {
      if constexpr (requires { trigger.serialize(s); }) trigger.serialize(s);
    }
    std::optional<TrainingLength> training_length() const override {
      if constexpr (requires { std::optional<TrainingLength>(trigger.training_length()); })
        return trigger.training_length();
      else
        return std::nullopt;
    }
    bool finished() const override {
      if constexpr (requires { bool(trigger.finished()); })
        return bool(trigger.finished());
      else
        return false;
    }
    std::unique_ptr<Concept> clone() const override { return std::make_unique<Model>(trigger); }
    T trigger;
  };
  std::unique_ptr<Concept> self_;
};

/// A trigger argument that may be left out (Trainer::extend's): unset by default or with
/// std::nullopt, else any Trigger, including Chainer's `(1, 'epoch')` written `{1, Unit::Epoch}`
/// (which a std::optional<Trigger> parameter would take as two arguments of its own).
class OptionalTrigger : public std::optional<Trigger> {
 public:
  OptionalTrigger() = default;  ///< Unset.
  /// Unset, from std::nullopt.
  OptionalTrigger(std::nullopt_t) {}  // NOLINT: nullopt converts
  /// An IntervalTrigger(PERIOD, UNIT), from `{period, unit}`.
  OptionalTrigger(double period, Unit unit) : std::optional<Trigger>(Trigger(period, unit)) {}  // NOLINT: braces convert
  /// TRIGGER as a Trigger (an IntervalTrigger, a Trigger, or any TriggerFunction).
  template <class T>
    requires(!std::same_as<std::remove_cvref_t<T>, OptionalTrigger> && std::constructible_from<Trigger, T>)
  OptionalTrigger(T&& trigger) : std::optional<Trigger>(Trigger(std::forward<T>(trigger))) {}  // NOLINT: converts
};

}  // namespace chainer::training
