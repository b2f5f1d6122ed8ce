/// @file
/// Classifier, as chainer.links.Classifier: forward_args({x, t}) runs the predictor, computes
/// softmax_cross_entropy (the default loss) and accuracy, reports them as "loss" and "accuracy"
/// (so "main/loss" in a trainer), and returns the loss. The last prediction is kept in y().
#pragma once
#include <functional>

#include "nn/link.h"

namespace chainer::links {

/// Wraps a predictor with a loss and an accuracy, which it reports (Chainer's `L.Classifier`).
class Classifier : public Chain {
 public:
  /// A loss or accuracy of prediction Y against labels T.
  using LossFunction = std::function<Variable(const Variable& y, const Variable& t)>;
  /// Wraps PREDICTOR (child "predictor"); an empty LOSSFUN is softmax_cross_entropy, an empty
  /// ACCFUN accuracy.
  explicit Classifier(std::shared_ptr<Link> predictor, LossFunction lossfun = {}, LossFunction accfun = {});

  /// ARGS are the predictor's inputs then the labels; returns {loss} and reports loss and accuracy.
  std::vector<Variable> forward_args(const std::vector<Variable>& args) override;
  /// The wrapped predictor.
  Link& predictor() { return *predictor_; }
  /// The prediction of the last forward_args call.
  const Variable& y() const { return y_; }
  /// The loss of the last forward_args call.
  const Variable& loss() const { return loss_; }
  /// The accuracy of the last forward_args call (when compute_accuracy was set).
  const Variable& accuracy() const { return accuracy_; }
  bool compute_accuracy = true;  ///< Whether forward_args computes and reports the accuracy.

 private:
  std::shared_ptr<Link> predictor_;
  LossFunction lossfun_, accfun_;
  Variable y_, loss_, accuracy_;
};

}  // namespace chainer::links
