// The backward engine, tested with small functions defined here so it does not depend on nn/.
#include <catch2/catch.hpp>

#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "autograd/computational_graph.h"
#include "autograd/function_node.h"
#include "autograd/gradient_check.h"
#include "core/ops/ops.h"

using namespace chainer;

namespace {
class SquareNode : public FunctionNode {
 public:
  explicit SquareNode(Tensor x, double wrong = 1.0) : x_(std::move(x)), wrong_(wrong) {}
  std::string name() const override { return "Square"; }
  std::vector<Tensor> backward(const std::vector<Tensor>& gy) override {
    return {ops::mul_scalar(ops::mul(x_, gy[0]), 2.0 * wrong_)};
  }

 protected:
  void release_saved() override { x_ = Tensor(); }

 private:
  Tensor x_;
  double wrong_;
};

class AddNode : public FunctionNode {
 public:
  std::string name() const override { return "Add"; }
  std::vector<Tensor> backward(const std::vector<Tensor>& gy) override { return {gy[0], gy[0]}; }
};

class SumNode : public FunctionNode {
 public:
  explicit SumNode(Shape s) : shape_(std::move(s)) {}
  std::string name() const override { return "Sum"; }
  std::vector<Tensor> backward(const std::vector<Tensor>& gy) override {
    return {ops::broadcast_to(gy[0].reshape({1}), {shape_numel(shape_)}).reshape(shape_)};
  }

 private:
  Shape shape_;
};

Variable square(const Variable& x, double wrong = 1.0) {
  Tensor y = ops::square(x.data());
  if (!needs_recording({x})) return Variable(y);
  return record(std::make_shared<SquareNode>(x.data(), wrong), {x}, {y})[0];
}
Variable add(const Variable& a, const Variable& b) {
  Tensor y = ops::add(a.data(), b.data());
  if (!needs_recording({a, b})) return Variable(y);
  return record(std::make_shared<AddNode>(), {a, b}, {y})[0];
}
Variable sum(const Variable& x) {
  Tensor y = ops::sum(x.data());
  if (!needs_recording({x})) return Variable(y);
  return record(std::make_shared<SumNode>(x.shape()), {x}, {y})[0];
}
Tensor vec(std::vector<double> v) { return Tensor::from_vector(v); }
}  // namespace

TEST_CASE("autograd: diamond graph sums gradients before running a node") {
  Variable x(vec({1, 2, 3}), true);
  Variable h = square(x);              // x^2
  Variable y = sum(add(h, square(h)));  // sum(x^2 + x^4)
  y.backward();
  // d/dx = 2x + 4x^3
  REQUIRE(x.grad().to_vector<double>() == std::vector<double>{6, 36, 114});
  REQUIRE_FALSE(h.grad().defined());  // non-leaf grads are not kept by default
}

TEST_CASE("autograd: retain_grad, retain_graph and freed graphs") {
  Variable x(vec({1, -2}), true);
  Variable h = square(x);
  h.set_retain_grad();
  Variable y = sum(h);
  y.backward({.retain_graph = true});
  REQUIRE(h.grad().to_vector<double>() == std::vector<double>{1, 1});
  REQUIRE(x.grad().to_vector<double>() == std::vector<double>{2, -4});
  y.backward();  // accumulates into x.grad
  REQUIRE(x.grad().to_vector<double>() == std::vector<double>{4, -8});
  REQUIRE_THROWS_WITH(y.backward(), Catch::Contains("freed") && Catch::Contains("retain_graph"));
}

TEST_CASE("autograd: backward from a non-scalar needs an initial gradient") {
  Variable x(vec({1, 2}), true);
  Variable y = square(x);
  REQUIRE_THROWS_WITH(y.backward(), Catch::Contains("(2,)") && Catch::Contains("initial gradient"));
  y.set_grad(vec({1, 10}));
  y.backward();
  REQUIRE(x.grad().to_vector<double>() == std::vector<double>{2, 40});
  Variable z = square(x);
  z.set_grad(vec({1, 2, 3}));
  REQUIRE_THROWS_WITH(z.backward(), Catch::Contains("(3,)") && Catch::Contains("(2,)"));
}

TEST_CASE("autograd: the initial gradient must have the variable's dtype") {
  Variable x(Tensor::from_vector<float>({1, 2}), true);
  Variable y = square(x);
  y.set_grad(vec({1, 1}));  // float64
  REQUIRE_THROWS_WITH(y.backward(), Catch::Contains("backward: the initial gradient has dtype float64 but the "
                                                    "variable has dtype float32"));
}

TEST_CASE("autograd: recording only when needed; no_backprop_mode; unchain") {
  Variable c(vec({1, 2}), false);
  REQUIRE(square(c).is_leaf());
  Variable x(vec({1, 2}), true);
  {
    NoBackpropMode guard;
    REQUIRE(square(x).is_leaf());
    ForceBackpropMode force;
    REQUIRE_FALSE(square(x).is_leaf());
  }
  REQUIRE_FALSE(square(x).is_leaf());
  Variable h = square(square(x));
  std::weak_ptr<FunctionNode> inner = h.creator()->inputs()[0]->creator;
  REQUIRE_FALSE(inner.expired());
  h.unchain_backward();
  REQUIRE(h.is_leaf());
  REQUIRE(inner.expired());  // the graph behind h is freed
}

TEST_CASE("autograd: detach is a leaf over the same data; the graph it came from is left as it is") {
  Variable x(vec({1, 2}), true);
  Variable h = square(x);
  Variable d = h.detach();
  REQUIRE(d.is_leaf());
  REQUIRE_FALSE(d.requires_grad());
  REQUIRE(d.data().raw_data() == h.data().raw_data());  // shared, not copied
  REQUIRE_FALSE(h.is_leaf());  // h keeps its creator
  // A loss through the detached copy reaches neither h nor x; one through h still reaches x.
  Variable through_detached = sum(square(d));
  REQUIRE(through_detached.is_leaf());  // nothing needs a gradient: no graph is recorded
  Variable through_h = sum(h);
  through_h.backward();
  REQUIRE(x.grad().to_vector<double>() == std::vector<double>{2, 4});
}

TEST_CASE("autograd: leaf hooks fire once, with the final gradient, before backward ends") {
  Variable x(vec({3}), true);
  std::vector<double> seen;
  x.register_grad_hook([&](VariableNode& n) { seen.push_back(n.grad.to_vector<double>()[0]); });
  Variable y = sum(add(square(x), add(x, x)));  // x^2 + 2x -> 2x + 2 = 8
  y.backward();
  REQUIRE(seen == std::vector<double>{8});
}

TEST_CASE("autograd: leaves own their gradients even when a function passes gy through") {
  Variable a(vec({1, 2}), true), b(vec({3, 4}), true);
  Variable y = add(a, b);
  y.set_grad(vec({1, 1}));
  y.backward();
  REQUIRE_FALSE(a.grad().shares_storage(b.grad()));
  REQUIRE_FALSE(a.grad().shares_storage(y.grad()));
}

TEST_CASE("autograd: deep graphs run without recursion") {
  Variable x(vec({1.0}), true);
  Variable h = x;
  for (int i = 0; i < 20000; ++i) h = add(h, Variable(vec({0.0})));
  sum(h).backward();
  REQUIRE(x.grad().to_vector<double>() == std::vector<double>{1});
}

TEST_CASE("autograd: dropping a deep graph does not recurse") {
  // Freed by recursive destructors, 200000 functions would overflow the stack.
  Variable x(vec({1.0}), true), zero(vec({0.0}));
  Variable h = add(x, zero);
  std::weak_ptr<FunctionNode> first = h.creator();
  for (int i = 1; i < 200000; ++i) h = add(h, zero);
  SECTION("never backpropagated") {}
  SECTION("kept by retain_graph") {
    sum(h).backward({.retain_graph = true});
    REQUIRE(x.grad().to_vector<double>() == std::vector<double>{1});
  }
  REQUIRE_FALSE(first.expired());
  h = Variable();
  REQUIRE(first.expired());
  REQUIRE(x.node_ptr().use_count() == 1);  // the graph let go of its leaf
}

TEST_CASE("autograd: graphviz export is the graph: every node declared once, every edge between declared nodes") {
  Variable x(vec({1, 2}), true, "x");
  Variable y = sum(square(x));
  const std::string dot = build_computational_graph_dot({y});
  REQUIRE_THAT(dot, Catch::StartsWith("digraph graphname{") && Catch::EndsWith("}\n"));
  // Every line between the braces is a node ("  nK [label=...];") or an edge ("  nA -> nB;").
  const std::regex node(R"re(  n(\d+) \[label="([^"]*)",shape="(record|oval)",fillcolor="#[0-9A-F]{6}",style="filled"\];)re");
  const std::regex edge(R"re(  n(\d+) -> n(\d+);)re");
  std::map<std::string, std::string> label_of;  // node id -> label
  std::vector<std::pair<std::string, std::string>> edges;
  std::istringstream lines(dot);
  std::string line;
  std::getline(lines, line);
  while (std::getline(lines, line) && line != "}") {
    std::smatch m;
    if (std::regex_match(line, m, node)) {
      REQUIRE(label_of.emplace(m[1], m[2]).second);  // declared once
    } else {
      INFO("line: " << line);
      REQUIRE(std::regex_match(line, m, edge));
      edges.emplace_back(m[1], m[2]);
    }
  }
  std::set<std::pair<std::string, std::string>> labelled;
  for (const auto& [from, to] : edges) {
    INFO("edge n" << from << " -> n" << to);
    REQUIRE(label_of.count(from) == 1);
    REQUIRE(label_of.count(to) == 1);
    labelled.emplace(label_of[from], label_of[to]);
  }
  const std::set<std::pair<std::string, std::string>> expected{{"x: (2,), float64", "Square"},
                                                               {"Square", "(2,), float64"},
                                                               {"(2,), float64", "Sum"},
                                                               {"Sum", "(), float64"}};
  CHECK(labelled == expected);
  CHECK(edges.size() == 4);
  CHECK(label_of.size() == 5);
}

TEST_CASE("gradient_check: accepts a right gradient and rejects a wrong one") {
  Tensor x = vec({0.5, -1.5, 2.0});
  check_backward([](const std::vector<Variable>& v) { return square(v[0]); }, {x});
  REQUIRE_THROWS_WITH(check_backward([](const std::vector<Variable>& v) { return square(v[0], 1.01); }, {x}),
                      Catch::Contains("finite differences"));
}

namespace {
// A user's node whose backward returns whatever it was given: the engine must call the mistakes
// the user's, naming the node, the input and what was expected.
class BrokenNode : public FunctionNode {
 public:
  explicit BrokenNode(std::vector<Tensor> gxs) : gxs_(std::move(gxs)) {}
  std::string name() const override { return "MyBroken"; }
  std::vector<Tensor> backward(const std::vector<Tensor>&) override { return gxs_; }

 private:
  std::vector<Tensor> gxs_;
};

// Backward through a BrokenNode over INPUTS that returns GXS; what it throws.
std::string broken_backward(const std::vector<Variable>& inputs, std::vector<Tensor> gxs) {
  Variable y = record(std::make_shared<BrokenNode>(std::move(gxs)), inputs, {vec({1.0})})[0];
  try {
    y.backward();
  } catch (const Error& e) {
    return e.what();
  }
  return "no chainer::Error";
}
}  // namespace

TEST_CASE("autograd: a node whose backward breaks its contract is the user's error, named") {
  Variable a(vec({1, 2, 3}), true), b(vec({4, 5}), true);
  SECTION("a gradient of the wrong shape") {
    CHECK(broken_backward({a, b}, {vec({1, 1, 1}), vec({1, 1, 1})}) ==
          "backward: MyBroken returned a gradient of shape (3,) for input 1, which has shape (2,)");
  }
  SECTION("the wrong number of gradients") {
    CHECK(broken_backward({a, b}, {vec({1, 1, 1})}) ==
          "backward: MyBroken returned 1 gradient but has 2 inputs; backward returns one gradient per input (an "
          "undefined Tensor where none is needed)");
    CHECK(broken_backward({a}, {vec({1, 1, 1}), vec({1, 1})}) ==
          "backward: MyBroken returned 2 gradients but has 1 input; backward returns one gradient per input (an "
          "undefined Tensor where none is needed)");
  }
  SECTION("a gradient of the wrong dtype") {
    CHECK(broken_backward({a, b}, {Tensor::from_vector<float>({1, 1, 1}), vec({1, 1})}) ==
          "backward: MyBroken returned a gradient of dtype float32 for input 0, which has dtype float64");
  }
  SECTION("undefined gradients, and any gradient for an input that needs none, are accepted") {
    Variable c(vec({7}), false);
    CHECK(broken_backward({a, c}, {Tensor(), Tensor::zeros({5, 5})}) == "no chainer::Error");
    CHECK_FALSE(a.grad().defined());
  }
}

TEST_CASE("autograd: record checks the node and its tensors, naming the node") {
  Variable x(vec({1, 2}), true);
  auto node = std::make_shared<BrokenNode>(std::vector<Tensor>{Tensor()});
  REQUIRE_THROWS_WITH(record(node, {Variable()}, {vec({1})}),
                      "record: input 0 of MyBroken is an undefined Variable");
  REQUIRE_THROWS_WITH(record(node, {x}, {}), "record: MyBroken has no outputs; give the tensors its forward computed");
  REQUIRE_THROWS_WITH(record(node, {x}, {vec({1}), Tensor()}), "record: output 1 of MyBroken is an undefined Tensor");
  record(node, {x}, {vec({1})});
  REQUIRE_THROWS_WITH(record(node, {x}, {vec({1})}),
                      "record: the node MyBroken is already recorded; a node is one application of a function, so "
                      "make a new one for each call");
  REQUIRE_THROWS_WITH(record(nullptr, {x}, {vec({1})}), "record: the node is null");
}

TEST_CASE("autograd: outputs nobody used get zero gradients of their own dtype") {
  // Two outputs of different dtypes; only the first is used.
  class TwoOutputs : public FunctionNode {
   public:
    std::string name() const override { return "TwoOutputs"; }
    std::vector<Tensor> backward(const std::vector<Tensor>& gys) override {
      seen = {gys[0].dtype(), gys[1].dtype()};
      return {gys[0]};
    }
    std::vector<DType> seen;
  };
  Variable x(vec({1, 2}), true);
  auto node = std::make_shared<TwoOutputs>();
  std::vector<Variable> ys = record(node, {x}, {vec({1, 2}), Tensor::from_vector<int32_t>({0, 1})});
  sum(ys[0]).backward();
  REQUIRE(node->seen == std::vector<DType>{DType::Float64, DType::Int32});
  REQUIRE(x.grad().to_vector<double>() == std::vector<double>{1, 1});
}
