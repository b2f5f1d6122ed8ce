#include "parallel_mlp.h"

namespace L = chainer::links;
using chainer::Variable;

namespace apps {

MLP::MLP(int64_t n_units, int64_t n_out) {
  l1 = add_link("l1", std::make_shared<L::Linear>(n_units));  // input size inferred
  l2 = add_link("l2", std::make_shared<L::Linear>(n_units));
  l3 = add_link("l3", std::make_shared<L::Linear>(n_out));
}

Variable MLP::forward(const Variable& x) { return (*l3)(l2->forward_relu(l1->forward_relu(x))); }

namespace {

class Layer1 : public chainer::Chain {  // ChainerMN's MLP0SubA
 public:
  explicit Layer1(int64_t n_units) { l1 = add_link("l1", std::make_shared<L::Linear>(n_units)); }
  Variable forward(const Variable& x) override { return l1->forward_relu(x); }

 private:
  std::shared_ptr<L::Linear> l1;
};

class Layers23 : public chainer::Chain {  // ChainerMN's MLP1Sub
 public:
  Layers23(int64_t n_units, int64_t n_out) {
    l2 = add_link("l2", std::make_shared<L::Linear>(n_units));
    l3 = add_link("l3", std::make_shared<L::Linear>(n_out));
  }
  Variable forward(const Variable& h1) override { return (*l3)(l2->forward_relu(h1)); }

 private:
  std::shared_ptr<L::Linear> l2, l3;
};

}  // namespace

std::shared_ptr<chainermn::links::MultiNodeChainList> first_stage(std::shared_ptr<chainermn::Communicator> pair,
                                                                  int64_t n_units) {
  // [first-stage]
  auto model = std::make_shared<chainermn::links::MultiNodeChainList>(pair);
  model->add_link(std::make_shared<Layer1>(n_units), std::nullopt, 1);
  model->add_link(std::make_shared<L::Identity>(), 1, std::nullopt);  // ChainerMN's MLP0SubB: the logits back
  // [end]
  return model;
}

std::shared_ptr<chainermn::links::MultiNodeChainList> second_stage(std::shared_ptr<chainermn::Communicator> pair,
                                                                   int64_t n_units, int64_t n_out) {
  // [second-stage]
  auto model = std::make_shared<chainermn::links::MultiNodeChainList>(pair);
  model->add_link(std::make_shared<Layers23>(n_units, n_out), 0, 0);
  // [end]
  return model;
}

}  // namespace apps
