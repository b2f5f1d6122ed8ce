// Classifier, as chainer.links.Classifier: forward_args({x, t}) runs the predictor, computes
// softmax_cross_entropy (the default loss) and accuracy, reports them as "loss" and "accuracy"
// (so "main/loss" in a trainer), and returns the loss. The last prediction is kept in y().
#pragma once
#include <functional>

#include "nn/link.h"

namespace chainer::links {

class Classifier : public Chain {
 public:
  using LossFunction = std::function<Variable(const Variable& y, const Variable& t)>;
  explicit Classifier(std::shared_ptr<Link> predictor, LossFunction lossfun = {}, LossFunction accfun = {});

  std::vector<Variable> forward_args(const std::vector<Variable>& args) override;
  Link& predictor() { return *predictor_; }
  const Variable& y() const { return y_; }
  const Variable& loss() const { return loss_; }
  const Variable& accuracy() const { return accuracy_; }
  bool compute_accuracy = true;

 private:
  std::shared_ptr<Link> predictor_;
  LossFunction lossfun_, accfun_;
  Variable y_, loss_, accuracy_;
};

}  // namespace chainer::links
