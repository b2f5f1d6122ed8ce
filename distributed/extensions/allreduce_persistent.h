/// @file
/// AllreducePersistent, as chainermn.extensions.AllreducePersistent: replaces every floating
/// persistent value of a model (BatchNormalization's avg_mean and avg_var) with its mean over the
/// ranks, so that evaluation and snapshots see running statistics gathered from every rank's
/// data instead of one rank's. Integer persistents are left as they are, as in ChainerMN.
///
/// Runs once an epoch by default, before the evaluators and snapshots (PRIORITY_WRITER + 1, as
/// ChainerMN's). The persistents are visited in Link::namedpersistents() order (sorted names, the
/// same on every rank) and averaged in place, so links holding them see the means. Float16 and
/// bfloat16 values are summed in float32. GPU values are staged through host memory by the
/// communicator. Collective: every rank runs it at the same iterations; the ranks first compare
/// the floating persistents' names, dtypes and shapes and throw on every rank alike when they
/// differ, naming the first that does.
///
/// The multi-node checkpointer does the same before each save of a data-parallel job
/// (distributed/extensions/checkpoint.h), through allreduce_persistent(model, comm).
#pragma once
#include <memory>
#include <string>

#include "distributed/communicators/communicator.h"
#include "training/extension.h"

namespace chainermn::extensions {

/// What AllreducePersistent does, without the extension: replaces every floating persistent
/// value of MODEL with its mean over the ranks of COMM, in place (collective; throws
/// chainer::Error on every rank alike, naming the first that differs, when the ranks' floating
/// persistents differ in name, dtype or shape).
void allreduce_persistent(chainer::Link& model, const Communicator& comm);

/// Averages a model's floating persistent values over the ranks (see above).
class AllreducePersistent : public chainer::training::Extension {
 public:
  /// Averages MODEL's persistents over the ranks of COMM.
  AllreducePersistent(std::shared_ptr<chainer::Link> model, std::shared_ptr<Communicator> comm);

  /// Averages the persistents (the trainer is not read).
  void operator()(chainer::training::Trainer& trainer) override;
  /// Averages the persistents: what the extension does, callable without a trainer.
  void allreduce_persistent();
  std::string default_name() const override { return "AllreducePersistent"; }  ///< "AllreducePersistent".
  /// Every epoch, as ChainerMN's.
  chainer::training::Trigger default_trigger() const override {
    return chainer::training::IntervalTrigger(1, chainer::training::Unit::Epoch);
  }
  /// PRIORITY_WRITER + 1: before the evaluators, which report with PRIORITY_WRITER, and the snapshots.
  int priority() const override { return chainer::training::PRIORITY_WRITER + 1; }

 private:
  std::shared_ptr<chainer::Link> model_;
  std::shared_ptr<Communicator> comm_;
};

}  // namespace chainermn::extensions
