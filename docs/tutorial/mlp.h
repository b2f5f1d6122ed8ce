// The tutorial's model, shared by both steps: MLP 784-n_units-n_units-10 with ReLU.
#pragma once
#include <chainer.h>

namespace tutorial {

class MLP : public chainer::Chain {
 public:
  MLP(int64_t n_units, int64_t n_out) {
    l1 = add_link("l1", std::make_shared<chainer::links::Linear>(n_units));  // input size inferred
    l2 = add_link("l2", std::make_shared<chainer::links::Linear>(n_units));
    l3 = add_link("l3", std::make_shared<chainer::links::Linear>(n_out));
  }
  chainer::Variable forward(const chainer::Variable& x) override {
    namespace F = chainer::functions;
    chainer::Variable h1 = F::relu((*l1)(x));
    chainer::Variable h2 = F::relu((*l2)(h1));
    return (*l3)(h2);
  }

 private:
  std::shared_ptr<chainer::links::Linear> l1, l2, l3;
};

}  // namespace tutorial
