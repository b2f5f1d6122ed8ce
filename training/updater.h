// Updaters run one training iteration. StandardUpdater, as Chainer's: takes the next batch
// from the "main" iterator, converts it to arrays, moves them to the device, and lets the "main"
// optimizer update its target with the loss that target.forward_args(arrays) returns. On a GPU
// the whole step is captured into a CUDA graph and replayed (training/cuda_graph_step.h).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "datasets/iterator.h"
#include "nn/optimizer.h"
#include "training/cuda_graph_step.h"

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

struct UpdaterOptions {
  // Where each batch goes (Chainer's device=); unset: the device of the main optimizer's target.
  std::optional<Device> device;
  // On a CUDA device, capture the whole step into a CUDA graph and replay it (the default:
  // docs/performance.md has the figures); false runs every step eagerly.
  bool cuda_graph = true;
};

class StandardUpdater : public Updater {
 public:
  using LossFunction = std::function<Variable(const std::vector<Variable>& arrays)>;
  StandardUpdater(std::shared_ptr<iterators::Iterator> iterator, std::shared_ptr<Optimizer> optimizer,
                  LossFunction loss_func = {}, UpdaterOptions options = {});
  StandardUpdater(std::map<std::string, std::shared_ptr<iterators::Iterator>> iterators,
                  std::map<std::string, std::shared_ptr<Optimizer>> optimizers, LossFunction loss_func = {},
                  UpdaterOptions options = {});

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
  // The device batches go to this iteration.
  Device device() const;
  const CudaGraphStep& cuda_graph_step() const { return graph_step_; }

 protected:
  virtual void update_core();

 private:
  std::map<std::string, std::shared_ptr<iterators::Iterator>> iterators_;
  std::map<std::string, std::shared_ptr<Optimizer>> optimizers_;
  LossFunction loss_func_;
  UpdaterOptions options_;
  CudaGraphStep graph_step_;
  int64_t iteration_ = 0;
};

}  // namespace chainer::training
