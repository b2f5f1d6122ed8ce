#include "training/triggers/minmax_value_trigger.h"

#include "training/trainer.h"

namespace chainer::training {

BestValueTrigger::BestValueTrigger(std::string key, Compare compare, Trigger trigger)
    : BestValueTrigger("BestValueTrigger", std::move(key), std::move(compare), std::move(trigger)) {}

BestValueTrigger::BestValueTrigger(std::string name, std::string key, Compare compare, Trigger trigger)
    : name_(std::move(name)), key_(std::move(key)), compare_(std::move(compare)), interval_trigger_(std::move(trigger)) {
  if (!compare_) throw Error(str(name_, ": the compare function is empty"));
}

bool BestValueTrigger::operator()(const Trainer& trainer) {
  const Observation& observation = trainer.observation();
  if (auto it = observation.find(key_); it != observation.end()) summary_.add({{key_, it->second}});
  if (!interval_trigger_(trainer)) return false;
  const Observation mean = summary_.compute_mean();
  summary_ = DictSummary();
  const auto it = mean.find(key_);
  if (it == mean.end())
    throw Error(str(name_, ": '", key_, "' was not reported since the last check (iteration ",
                    trainer.updater().iteration(), "); report it, or check the key's name"));
  const double value = it->second.value();
  if (best_ && !compare_(*best_, value)) return false;
  best_ = value;
  return true;
}

void BestValueTrigger::serialize(Serializer& s) {
  Serializer t = s["_interval_trigger"];
  interval_trigger_.serialize(t);
  Serializer sum = s["_summary"];
  summary_.serialize(sum);
  s.value("_best_value", best_);  // no entry while unset: Chainer's None
}

MaxValueTrigger::MaxValueTrigger(std::string key, Trigger trigger)
    : BestValueTrigger("MaxValueTrigger", std::move(key), [](double best, double value) { return value > best; },
                       std::move(trigger)) {}

MinValueTrigger::MinValueTrigger(std::string key, Trigger trigger)
    : BestValueTrigger("MinValueTrigger", std::move(key), [](double best, double value) { return value < best; },
                       std::move(trigger)) {}

}  // namespace chainer::training
