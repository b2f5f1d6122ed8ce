// The tutorial's MLP (784-unit-unit-n_out, ReLU), whole for mnist_mlp and mnist_ensemble, and cut
// in two for model parallelism, as ChainerMN's train_mnist_model_parallel.py: the first stage (l1 and its ReLU) on one process, the rest
// (l2, ReLU, l3) on another. Each stage is a MultiNodeChainList over a communicator of the two
// processes (rank 0 the first stage, rank 1 the second):
//   first_stage:  [l1 + ReLU] rank_in none, rank_out 1;  [identity] rank_in 1, rank_out none
//   second_stage: [l2 + ReLU, l3] rank_in 0, rank_out 0
// so the first stage's output is the logits that came back, and a Classifier around it computes
// the loss there; the second stage returns a delegate, whose backward is its whole backward.
#pragma once
#include <chainermn.h>

#include <memory>

namespace apps {

// The whole network: two hidden layers with ReLU (bias + ReLU fused), then the output.
class MLP : public chainer::Chain {
 public:
  MLP(int64_t n_units, int64_t n_out);
  chainer::Variable forward(const chainer::Variable& x) override;

 private:
  std::shared_ptr<chainer::links::Linear> l1, l2, l3;
};

std::shared_ptr<chainermn::links::MultiNodeChainList> first_stage(std::shared_ptr<chainermn::Communicator> pair,
                                                                  int64_t n_units);
std::shared_ptr<chainermn::links::MultiNodeChainList> second_stage(std::shared_ptr<chainermn::Communicator> pair,
                                                                   int64_t n_units, int64_t n_out);

}  // namespace apps
