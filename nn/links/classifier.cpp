#include "nn/links/classifier.h"

#include "nn/functions.h"
#include "nn/reporter.h"

namespace chainer::links {

Classifier::Classifier(std::shared_ptr<Link> predictor, LossFunction lossfun, LossFunction accfun)
    : predictor_(add_link("predictor", std::move(predictor))),
      lossfun_(lossfun ? std::move(lossfun)
                       : LossFunction([](const Variable& y, const Variable& t) {
                           return functions::softmax_cross_entropy(y, t);
                         })),
      accfun_(accfun ? std::move(accfun)
                     : LossFunction([](const Variable& y, const Variable& t) { return functions::accuracy(y, t); })) {}

std::vector<Variable> Classifier::forward_args(const std::vector<Variable>& args) {
  if (args.size() < 2)
    throw Error(str("Classifier: expected the inputs and the labels (2 arrays), got ", args.size()));
  std::vector<Variable> inputs(args.begin(), args.end() - 1);
  const Variable& t = args.back();
  y_ = predictor_->forward_args(inputs).at(0);
  loss_ = lossfun_(y_, t);
  std::map<std::string, Variable> observed{{"loss", loss_}};
  if (compute_accuracy) {
    accuracy_ = accfun_(y_, t);
    observed.emplace("accuracy", accuracy_);
  }
  report(observed, this);
  return {loss_};
}

}  // namespace chainer::links
