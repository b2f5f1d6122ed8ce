// Updaters run one training iteration. StandardUpdater, as Chainer's: takes the next batch
// from the "main" iterator, converts it to arrays, and lets the "main" optimizer update its
// target with the loss that target.forward_args(arrays) returns.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "datasets/iterator.h"
#include "nn/optimizer.h"

namespace chainer::training {

class Updater {
 public:
  virtual ~Updater() = default;
  virtual void update() = 0;
  virtual int64_t iteration() const = 0;
  virtual int64_t epoch() const = 0;
  virtual double epoch_detail() const = 0;
  virtual bool is_new_epoch() const = 0;
  virtual Optimizer& get_optimizer(const std::string& name) = 0;
  virtual std::map<std::string, Optimizer*> get_all_optimizers() = 0;
  virtual iterators::Iterator& get_iterator(const std::string& name) = 0;
  virtual void serialize(Serializer& s) = 0;
  virtual void finalize() {}
};

class StandardUpdater : public Updater {
 public:
  using LossFunction = std::function<Variable(const std::vector<Variable>& arrays)>;
  StandardUpdater(std::shared_ptr<iterators::Iterator> iterator, std::shared_ptr<Optimizer> optimizer,
                  LossFunction loss_func = {});
  StandardUpdater(std::map<std::string, std::shared_ptr<iterators::Iterator>> iterators,
                  std::map<std::string, std::shared_ptr<Optimizer>> optimizers, LossFunction loss_func = {});

  void update() override;
  int64_t iteration() const override { return iteration_; }
  int64_t epoch() const override;
  double epoch_detail() const override;
  bool is_new_epoch() const override;
  Optimizer& get_optimizer(const std::string& name) override;
  std::map<std::string, Optimizer*> get_all_optimizers() override;
  iterators::Iterator& get_iterator(const std::string& name) override;
  void serialize(Serializer& s) override;
  void finalize() override;

 protected:
  virtual void update_core();

 private:
  std::map<std::string, std::shared_ptr<iterators::Iterator>> iterators_;
  std::map<std::string, std::shared_ptr<Optimizer>> optimizers_;
  LossFunction loss_func_;
  int64_t iteration_ = 0;
};

}  // namespace chainer::training
